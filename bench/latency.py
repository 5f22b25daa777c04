"""Search latency in process (query embedding included) at scale, per retrieval leg.

    python bench/latency.py search --sizes 10000 100000 [1000000] [--queries 200] [--legs exact ann]
                                   [--lexicals fts5 postings] [--keep DIR]
    python bench/latency.py crossover --sizes 2000 5000 10000 20000 50000   # exact vs HNSW leg

(Embedding cost: bench/embedding_cost.py; a full index's throughput and memory:
bench/cold_index.py.)

Catalogs come from bench/catalogs.py (real tools of the three shared sets, plus server-fork
variants beyond 7,093). Variants are near-copies of real tools; embedding 100k of them would take
~30 min here, so for ``search`` a variant's vector is its base tool's vector plus Gaussian noise
(sigma 0.02 per dimension, renormalised: cosine ~0.9 to its base), and its lexical fields are
built from its own text. The real tools are embedded with the real model (cached).

The query-vector and result caches are off (every query is embedded and searched). Short
queries: the project's paraphrase dev set (3-12 words); long queries: toolbench_stable (20-100
words). ``search`` runs the previous vector leg (``exact``: the numpy product over the
in-memory mirror) and the HNSW leg (``ann``: the Qdrant Edge shard), each with the previous
lexical leg (``fts5``: FTS5's bm25()) and the in-memory posting index (``postings``), on the
same index, interleaved query by query (every other query in reverse order), so load on this
shared machine hits every variant alike: read the ratios. It reports hybrid p50/p95 per pair
(``exact_fts5_hybrid`` is the previous path, ``ann_postings_hybrid`` the new one), the vector
leg alone per vector leg (100 candidates, the hybrid depth) and ``bm25`` mode per lexical leg;
the index on disk (SQLite file, shard folder); the posting index's load time and size; and, per
pair, a fresh process serving the index with that pair alone (``rss`` is that child's command):
its RSS after 20 searches, then its own hybrid p50 / p95 / p99 over as many short requests and
half as many long ones as above (a serving process runs one pair, where the interleaved figures
share one process, its caches and its garbage collector among every pair). ``--sizes 1000000``
builds the 1M catalog the same way (variant vectors); expect a long build. ``--keep DIR`` keeps
each size's index in ``DIR/<size>`` and reuses it on the next run (the catalog is written once;
the shard is reopened, the posting index loaded), for repeated runs and profiling;
``--build-only`` stops once the index is built (or reopened) and reports its sizes, so a 1M
index can be built on a busy machine and timed later on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency_index import (
    KEPT,
    LEGS,
    LEXICALS,
    build_index,
    build_shard,
    disk_mb,
    load_postings,
    request_pools,
    terms_mb,
    use_legs,
    workdir,
)
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.metrics import percentile
from toolscout.models import SearchMode

CACHE = str(Path.home() / ".cache" / "toolscout")


def _timed(
    engine: Engine, qs: list[str], legs: list[str], lexicals: list[str]
) -> dict[str, dict[str, object]]:
    """Hybrid search (query embedding included) per pair of legs, the vector leg alone and
    ``bm25`` mode per lexical leg, interleaved query by query."""
    pairs = [(leg, lex) for leg in legs for lex in lexicals]
    times: dict[str, list[float]] = {f"{leg}_{lex}_hybrid": [] for leg, lex in pairs}
    times.update({f"{leg}_vec": [] for leg in legs})
    times.update({f"bm25_{lex}": [] for lex in lexicals})
    for i, q in enumerate(qs):
        vec = engine.embedder.embed_query([q])
        # Every other query in reverse: no pair always runs right after the same other one.
        for leg, lex in pairs if i % 2 == 0 else pairs[::-1]:
            use_legs(engine, leg, lex)
            t = time.perf_counter()
            engine.search(q, mode=SearchMode.HYBRID, limit=10)
            times[f"{leg}_{lex}_hybrid"].append((time.perf_counter() - t) * 1000)
        for leg in legs:
            use_legs(engine, leg)
            t = time.perf_counter()
            engine.store.nearest_many(vec, limit=100)
            times[f"{leg}_vec"].append((time.perf_counter() - t) * 1000)
        for lex in lexicals:
            use_legs(engine, legs[0], lex)
            t = time.perf_counter()
            engine.search(q, mode=SearchMode.BM25, limit=10)
            times[f"bm25_{lex}"].append((time.perf_counter() - t) * 1000)
    return {
        k: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)}
        for k, v in times.items()
    }


def _serving(db: str, leg: str, lexical: str, queries: list[str], timed: int) -> dict[str, object]:
    """A fresh process serving ``db`` with one pair of legs: its RSS after a few searches, then
    its own search latency (``timed`` short requests and half as many long ones)."""
    import subprocess

    args = ["rss", "--db", db, "--leg", leg, "--lexical", lexical, "--timed", str(timed)]
    out = subprocess.run(
        [sys.executable, __file__, *args, *queries], check=True, capture_output=True, text=True
    )
    found: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def rss_bench(db: str, leg: str, lexical: str, queries: list[str], timed: int = 0) -> None:
    """The child of :func:`_serving` (the query-vector cache off, as in the timed runs)."""
    import psutil

    min_tools = 0 if leg == "ann" else 10**12
    lex_min = 0 if lexical == "postings" else 10**12
    engine = Engine.open(
        Settings(
            db=f"{db}?ann_min_tools={min_tools}&lex_min_tools={lex_min}",
            cache_dir=CACHE,
            query_cache_size=0,
            result_cache_size=0,
        )
    )
    for i, q in enumerate(queries):
        engine.search(q, limit=10)
        if i == 0:  # the first search starts the posting index's load: serve from it
            engine.store.lex.wait_loaded(None)  # type: ignore[attr-defined]
    answered = engine.store.ann.describe()["leg"]  # type: ignore[attr-defined]
    lexical_leg = engine.store.lex.describe()["leg"]  # type: ignore[attr-defined]
    rss = psutil.Process().memory_info().rss / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    alone = _alone(engine, timed) if timed else {}
    engine.close()
    found = {"leg": answered, "lexical": lexical_leg}
    print(json.dumps({**found, "rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1), **alone}))


def _alone(engine: Engine, n: int) -> dict[str, dict[str, float]]:
    """Hybrid p50 / p95 / p99 of a process that serves one pair of legs and nothing else: ``n``
    short requests and ``n // 2`` long ones, drawn as ``search`` draws them (after a warm-up)."""
    short, long = request_pools()
    rng = random.Random(0)
    out: dict[str, dict[str, float]] = {}
    for kind, pool, k in (("short", short, n), ("long", long, max(n // 2, 1))):
        qs = [rng.choice(pool) for _ in range(k)]
        for q in qs[:5]:
            engine.search(q, limit=10)
        times = []
        for q in qs:
            t = time.perf_counter()
            engine.search(q, limit=10)
            times.append((time.perf_counter() - t) * 1000)
        out[f"{kind}_hybrid"] = {f"p{q}": round(percentile(times, q), 2) for q in (50, 95, 99)}
    return out


def search_bench(
    sizes: list[int],
    n: int,
    legs: list[str],
    lexicals: list[str],
    keep: Path | None = None,
    build_only: bool = False,
) -> dict[str, object]:
    """``build_only``: stop once each index is written, its shard built and its posting index
    loaded (sizes and build times; the timings of a later run on the kept index)."""
    short, long = request_pools()
    rng = random.Random(0)
    results: dict[str, object] = {}
    for size in sizes:
        with workdir(keep, size) as tmp:
            db = str(Path(tmp) / "l.db")
            engine = Engine.open(
                Settings(
                    # the exact leg while writing; the posting index once loaded (load_postings)
                    db=f"{db}?ann_min_tools={10**12}&lex_min_tools=0",
                    cache_dir=CACHE,
                    query_cache_size=0,
                    result_cache_size=0,
                )
            )
            t0 = time.perf_counter()
            if not (Path(tmp) / KEPT).is_file():
                build_index(engine, size)
                (Path(tmp) / KEPT).write_text(str(size))
            built = time.perf_counter() - t0
            row: dict[str, object] = {"tools": engine.store.count(), "build_s": round(built, 1)}
            if "ann" in legs:
                row["shard"] = build_shard(engine)
            if "postings" in lexicals:
                row["postings"] = load_postings(engine)
                row["terms_mb"] = terms_mb(engine)
            if build_only:
                engine.close()
                row["disk_mb"] = {
                    "sqlite": disk_mb(Path(db)),
                    "shard": disk_mb(Path(db + ".vectors")),
                }
                row["peak_rss_mb"] = round(
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                )
                results[str(size)] = row
                print(json.dumps({size: row}), flush=True)
                continue
            for kind, pool in (("short", short), ("long", long)):
                qs = [rng.choice(pool) for _ in range(n if kind == "short" else n // 2)]
                for q in qs[:5]:  # warm-up: mirror load, shard pages, caches
                    for leg in legs:
                        for lex in lexicals:
                            use_legs(engine, leg, lex)
                            engine.search(q)
                row[kind] = _timed(engine, qs, legs, lexicals)
            engine.close()
            row["disk_mb"] = {"sqlite": disk_mb(Path(db)), "shard": disk_mb(Path(db + ".vectors"))}
            warm = [rng.choice(short) for _ in range(20)]
            row["serving"] = {
                f"{leg}_{lex}": _serving(db, leg, lex, warm, n) for leg in legs for lex in lexicals
            }
        results[str(size)] = row
        print(json.dumps({size: row}), flush=True)
    return results


def crossover_bench(sizes: list[int], n: int) -> None:
    """Each leg alone, previous vs new, per catalog size: the vector leg exact vs HNSW shard
    (where the shard starts to pay: ``ann_min_tools``) and the lexical leg FTS5 vs the posting
    index at the hybrid's depth, short and long requests (``lex_min_tools``)."""
    short, long = request_pools()
    rng = random.Random(0)
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            engine = Engine.open(
                Settings(
                    db=f"{Path(tmp) / 'c.db'}?ann_min_tools={10**12}&lex_min_tools=0",
                    cache_dir=CACHE,
                    query_cache_size=0,
                    result_cache_size=0,
                )
            )
            build_index(engine, size)
            build_shard(engine)
            loaded = load_postings(engine)
            vecs = [engine.embedder.embed_query([rng.choice(short)]) for _ in range(n)]
            times: dict[str, list[float]] = {leg: [] for leg in LEGS}
            for vec in vecs[:5]:
                for leg in LEGS:
                    use_legs(engine, leg)
                    engine.store.nearest_many(vec, limit=100)
            for vec in vecs:
                for leg in LEGS:
                    use_legs(engine, leg)
                    t = time.perf_counter()
                    engine.store.nearest_many(vec, limit=100)
                    times[leg].append((time.perf_counter() - t) * 1000)
            lexical = {
                kind: _lexical_times(engine, [rng.choice(pool) for _ in range(n)])
                for kind, pool in (("short", short), ("long", long))
            }
            engine.close()
        p50 = {leg: round(percentile(v, 50), 3) for leg, v in times.items()}
        out = {
            "tools": size,
            "vector_p50_ms": p50,
            "exact_over_ann": round(p50["exact"] / p50["ann"], 2),
            "lexical_p50_ms": lexical,
            "fts5_over_postings": {
                k: round(v["fts5"] / max(v["postings"], 1e-6), 2) for k, v in lexical.items()
            },
            "postings_load_s": loaded["load_s"],
        }
        print(json.dumps(out), flush=True)


def _lexical_times(engine: Engine, queries: list[str]) -> dict[str, float]:
    """p50 of the lexical leg alone, FTS5 vs the posting index, interleaved query by query."""
    from toolscout.search.text import query_tokens

    config = engine.searcher.config
    tokens = [t for t in (query_tokens(q) for q in queries) if t]
    times: dict[str, list[float]] = {lex: [] for lex in LEXICALS}
    for i, toks in enumerate(tokens):
        for lex in LEXICALS:
            use_legs(engine, "exact", lex)
            t = time.perf_counter()
            engine.store.lexical(
                toks, limit=config.lexical_candidates, weights=config.field_weights
            )
            if i >= 5:  # the first five warm both legs up
                times[lex].append((time.perf_counter() - t) * 1000)
    return {lex: round(percentile(v, 50), 3) for lex, v in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("search")
    s.add_argument("--sizes", nargs="+", type=int, default=[10000, 100000])
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--legs", nargs="+", choices=LEGS, default=list(LEGS))
    s.add_argument("--lexicals", nargs="+", choices=LEXICALS, default=list(LEXICALS))
    s.add_argument("--keep", type=Path, help="keep each index in KEEP/<size> and reuse it")
    s.add_argument(
        "--build-only",
        action="store_true",
        help="build (or reopen) each index and report its sizes, without timing searches",
    )
    c = sub.add_parser("crossover")
    c.add_argument("--sizes", nargs="+", type=int, default=[2000, 5000, 10000, 20000, 50000])
    c.add_argument("--queries", type=int, default=200)
    r = sub.add_parser("rss")
    r.add_argument("--db", required=True)
    r.add_argument("--leg", choices=LEGS, required=True)
    r.add_argument("--lexical", choices=LEXICALS, default="fts5")
    r.add_argument("--timed", type=int, default=0, help="then time this many short searches")
    r.add_argument("queries", nargs="*")
    args = parser.parse_args()
    if args.cmd == "search":
        search_bench(args.sizes, args.queries, args.legs, args.lexicals, args.keep, args.build_only)
    elif args.cmd == "crossover":
        crossover_bench(args.sizes, args.queries)
    else:
        rss_bench(args.db, args.leg, args.lexical, args.queries, args.timed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
