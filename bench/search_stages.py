"""Where a search's time goes at a kept scale index, the shipped path beside the previous one.

    PYTHONPATH=src python bench/search_stages.py --keep DIR [--size 100000] [--queries 200]
                                                 [--variants ...] [--ann-ef N]

``DIR/<size>`` is the index ``latency.py search --keep DIR`` writes (built here the same way
when missing). The default search (``Engine.search``: direct strategy, hybrid mode, limit 10,
caches off) runs short requests (paraphrases) and long ones (ToolBench's), every variant on the
same query before the next query, so load on a shared machine hits every variant alike. The
variants (bench/search_variants.py says what each puts back or changes): ``previous`` (the
query path before the query sessions and the in-memory point map), ``one_thread``, ``split``,
``pool_embeds`` (the steps from it to the shipped path), ``shipped`` (what the product does),
and the shipped path with one part done the previous way or otherwise: ``hashed_hits``,
``frozen``, ``hand_fusion``, ``light_rows``, ``row_ranker``, ``cold_names``,
``remembered_names``, ``alternating``, ``whole_embedded``, ``design_map``.

The order of the variants rotates from query to query and every other query reverses it, so
that each runs first on a new query as often as the others (a request's first search pays for
reading its part of the indexes into the processor's caches) and none always follows another
that has just warmed them with the same query.

The legs are the product's for the catalog's size (at 100k: the HNSW shard and the posting
index; the learned ranker's table of every tool's name and server is loaded first, and its
load time and memory printed). Printed per request kind and variant: total wall p50 / p95 /
p99, process CPU per search (p50), each stage's p50 / p95 (embedding, lexical leg, vector
leg, the learned ranker's re-scoring with its candidates' read (and, as ``names``, that read
alone), hits; ``other``: the rest, the wall time less the stages, so below zero where the legs
overlapped), when the
embedding began after the search did and how long the vector leg then waited for its vectors
(p50 / p95), the share of searches a garbage collection ran in, its longest pause and the
share with a full (generation 2) collection, and whether every variant returned the same ids
and scores as the first (they must: no variant but ``hand_fusion`` and ``whole_embedded``
change results; ``design_map``, the ranker's previous stage, scores differently by rounding,
so it is left out as well).
Read timings as ratios within one run; take figures from a quiet machine only.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency import CACHE
from latency_index import KEPT, build_index, load_postings, request_pools
from search_variants import RANKS_OTHERWISE, VARIANTS, use
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.metrics import percentile
from toolscout.models import SearchMode
from toolscout.search.nametable import NameTable, read_snapshot

STAGES = ("embed", "lexical", "vector", "rerank", "hits")
#: Parts of a stage above, timed on their own: ``names``, the ranker's read of its candidates'
#: names and servers (remembered per index version) within ``rerank``.
NESTED = ("names",)


@contextmanager
def _stages(
    engine: Engine, into: dict[str, float], marks: dict[str, tuple[float, float]]
) -> Iterator[None]:
    """Time the stages of each search into ``into`` (ms), by wrapping the objects' methods;
    ``marks``: each stage's (last) start and end (``perf_counter`` seconds)."""
    service = engine.search_service
    targets: list[tuple[Any, str, str]] = [
        (service.searcher, "embed_request", "embed"),
        (engine.store, "lexical", "lexical"),
        (engine.store, "nearest_many", "vector"),
        (service.searcher, "_rerank", "rerank"),
        (service.searcher.seen, "get", "names"),
        (service.hierarchical, "hits", "hits"),
    ]

    def timed(f: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                t1 = time.perf_counter()
                into[label] = into.get(label, 0.0) + (t1 - t0) * 1000
                marks[label] = (t0, t1)

        return run

    for obj, name, label in targets:
        setattr(obj, name, timed(getattr(obj, name), label))
    try:
        yield
    finally:
        for obj, name, _ in targets:
            delattr(obj, name)


def _open(keep: Path, size: int, ann_ef: int | None = None) -> Engine:
    """The kept index with the product's choice of legs for its size (written first when
    missing, the way ``latency.py search`` writes it), its shard built and posting index loaded."""
    folder = keep / str(size)
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "l.db"

    def opened(options: str) -> Engine:
        return Engine.open(
            Settings(
                db=f"{db}{options}",
                cache_dir=CACHE,
                query_cache_size=0,
                result_cache_size=0,
                learned_ranker=True,
            )
        )

    if not (folder / KEPT).is_file():
        writer = opened(f"?ann_min_tools={10**12}")
        build_index(writer, size)
        writer.close()
        (folder / KEPT).write_text(str(size))
    engine = opened(f"?ann_ef={ann_ef}" if ann_ef else "")
    store: Any = engine.store
    ann, lex = store.ann, store.lex
    ann.current()  # a missing shard is built in a child process meanwhile
    ann.wait_built(None)
    ann.current()
    if engine.store.count() >= lex.min_tools:
        load_postings(engine)
    return engine


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _names_table(engine: Engine) -> dict[str, Any]:
    """Load the ranker's table of every tool's name and server (what a serving process's first
    ranked search starts): its load time on its thread, the RSS it added, and the memory its
    objects hold (tracemalloc, over a second read of the same snapshot)."""
    seen = engine.searcher.seen
    table = seen.catalog
    assert isinstance(table, NameTable)
    state = engine.store.state()
    rss = _rss_mb()
    seen.get([], state.version, max(state.tools, table.min_tools))
    table.wait_loaded(None)
    assert table.ready() is not None, "the names table was not loaded"
    grown = _rss_mb() - rss
    tracemalloc.start()
    held = read_snapshot(engine.store.tools, state.version)
    traced = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del held
    return {
        "tools": table.describe()["tools"],
        "load_s": round(table.last_load_s or 0.0, 3),
        "rss_added_mb": round(grown, 1),
        "traced_mb": round(traced / 2**20, 1),
    }


def _summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    def p(key: str, q: float) -> float:
        return round(percentile([r.get(key, 0.0) for r in rows], q), 2)

    out: dict[str, Any] = {f"total_p{q}": p("total", q) for q in (50, 95, 99)}
    out["cpu_p50"] = p("cpu", 50)
    out["stages_p50_p95"] = {s: [p(s, 50), p(s, 95)] for s in (*STAGES, *NESTED, "other")}
    out["handoff_p50_p95"] = {s: [p(s, 50), p(s, 95)] for s in ("embed_start", "vector_wait")}
    out["gc_share"] = round(sum(1 for r in rows if r["gc"] > 0) / len(rows), 3)
    out["gc_max_ms"] = round(max(r["gc"] for r in rows), 2)
    out["gc_full_share"] = round(sum(r["gc_full"] for r in rows) / len(rows), 4)
    return out


def _timed_search(
    engine: Engine, q: str, pauses: list[tuple[int, float]]
) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """One search's timings (``pauses``: the collections it saw, filled by a gc callback) and
    its answer."""
    stage: dict[str, float] = {}
    marks: dict[str, tuple[float, float]] = {}
    pauses.clear()
    with _stages(engine, stage, marks):
        t0, c0 = time.perf_counter(), time.process_time()
        found = engine.search(q, mode=SearchMode.HYBRID, limit=10)
        wall = (time.perf_counter() - t0) * 1000
        cpu = (time.process_time() - c0) * 1000
    other = wall - sum(stage.get(s, 0.0) for s in STAGES)
    full = float(any(g == 2 for g, _ in pauses))
    gc_ms = sum(ms for _, ms in pauses)
    row = {**stage, "total": wall, "cpu": cpu, "other": other, "gc": gc_ms, "gc_full": full}
    # When the embedding began after the search did, and how long the vector leg then waited
    # for its vectors (a hand-off between threads, or nothing).
    row["embed_start"] = (marks["embed"][0] - t0) * 1000
    row["vector_wait"] = (marks["vector"][0] - marks["embed"][1]) * 1000
    return row, [(t.tool.id, t.score) for t in found.tools]


def _ratios(out: dict[str, Any]) -> dict[str, float | None]:
    """The shipped path's figures over the other variants' (those that ran)."""
    ratios: dict[str, float | None] = {}
    if "hashed_hits" in out and "shipped" in out:
        shipped, hashed = (out[v]["stages_p50_p95"]["hits"][0] for v in ("shipped", "hashed_hits"))
        ratios["hits_shipped_over_hashed_p50"] = round(shipped / hashed, 3) if hashed else None
    for v in ("pool_embeds", "frozen"):
        if v in out and "shipped" in out:
            ratios[f"shipped_over_{v}_p95"] = round(
                out["shipped"]["total_p95"] / out[v]["total_p95"], 3
            )
    for v, stage in (
        *(("light_rows", "rerank"), ("row_ranker", "rerank")),
        *(("cold_names", "rerank"), ("remembered_names", "rerank")),
        *(("alternating", "embed"), ("design_map", "rerank")),
    ):
        if v in out and "shipped" in out:
            mine, theirs = (out[w]["stages_p50_p95"][stage][0] for w in ("shipped", v))
            ratios[f"{stage}_shipped_over_{v}_p50"] = round(mine / theirs, 3) if theirs else None
    for top, bottom in (("whole_embedded", "shipped"), ("shipped", "hand_fusion")):
        for q in ("p50", "p95") if top in out and bottom in out else ():
            ratios[f"{top}_over_{bottom}_{q}"] = round(
                out[top][f"total_{q}"] / out[bottom][f"total_{q}"], 3
            )
    if "previous" in out and "shipped" in out:
        ratios["shipped_over_previous_p95"] = round(
            out["shipped"]["total_p95"] / out["previous"]["total_p95"], 3
        )
    return ratios


def _order(variants: list[str], k: int) -> list[str]:
    """The variants' order for the ``k``-th query: rotated by one every other query, and
    reversed every other query (for three variants, each of the six orders in turn)."""
    turn = (k // 2) % len(variants)
    rotated = variants[turn:] + variants[:turn]
    return rotated if k % 2 == 0 else rotated[::-1]


def measure(engine: Engine, queries: list[str], variants: list[str]) -> dict[str, Any]:
    """Every variant on each query in turn (after a warm-up), and whether their answers agree."""
    pauses: list[tuple[int, float]] = []  # generation, ms
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append((info["generation"], (time.perf_counter() - started[0]) * 1000))

    for q in queries[:5]:
        for v in variants:
            use(engine, v)
            engine.search(q, mode=SearchMode.HYBRID, limit=10)
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    same = True
    gc.callbacks.append(on_gc)
    try:
        for k, q in enumerate(queries):
            answers = []
            for v in _order(variants, k):
                use(engine, v)
                row, answer = _timed_search(engine, q, pauses)
                rows[v].append(row)
                if v not in RANKS_OTHERWISE:
                    answers.append(answer)
            same = same and all(a == answers[0] for a in answers)
    finally:
        gc.callbacks.remove(on_gc)
        gc.unfreeze()
    out: dict[str, Any] = {v: _summary(r) for v, r in rows.items()}
    out.update(_ratios(out))
    out["same_answers"] = same
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--ann-ef", type=int, help="the HNSW leg's search breadth (default 400)")
    args = parser.parse_args()
    engine = _open(args.keep, args.size, args.ann_ef)
    short, long = request_pools()
    rng = random.Random(0)
    store: Any = engine.store
    legs = {"vector": store.ann.describe()["leg"], "lexical": store.lex.describe()["leg"]}
    result: dict[str, Any] = {"tools": engine.store.count(), "legs": legs}
    result["names_table"] = _names_table(engine)
    print(json.dumps({"names_table": result["names_table"]}), flush=True)
    for kind, pool, n in (("short", short, args.queries), ("long", long, args.queries // 2)):
        result[kind] = measure(engine, [rng.choice(pool) for _ in range(max(n, 6))], args.variants)
        print(json.dumps({kind: result[kind]}), flush=True)
    engine.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
