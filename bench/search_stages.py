"""Where a search's time goes at a kept scale index, the shipped path beside the previous one.

    PYTHONPATH=src python bench/search_stages.py --keep DIR [--size 100000] [--queries 200]
                                                 [--variants ...] [--ann-ef N]

``DIR/<size>`` is the index ``latency.py search --keep DIR`` writes (built here the same way
when missing). The default search (``Engine.search``: direct strategy, hybrid mode, limit 10,
caches off) runs short requests (paraphrases) and long ones (ToolBench's), every variant on the
same query before the next query, so load on a shared machine hits every variant alike:

* ``previous`` - the query embedded on the model's two-thread document session, a request's
  intents one after the other, and the HNSW leg naming its points from the shard's payloads;
* ``one_thread`` - queries on a one-thread session of their own, intents one after the other,
  points named from the leg's in-memory map;
* ``split`` - the same, with a request's intents shared between the query session and a
  second one-thread session;
* ``pool_embeds`` - the same, with the query embedded on a leg thread while the caller runs the
  lexical leg, then the vector leg on the caller once that thread is done (the other variants
  above run the legs one after the other, ``parallel_legs`` off);
* ``shipped`` - the same, the other way round (what the product does): the caller embeds the
  query and runs the vector leg while a leg thread runs the lexical leg, so the longer leg
  never waits for a thread to wake or for the interpreter the lexical leg holds;
* ``hashed_hits`` - ``shipped`` with the result's tools built the previous way: each stored
  row through the ``Tool`` constructor, which hashes its fields again (the stored hash then
  replaces it), so the ``hits`` stage of the two shows what reading the stored hash saves;
* ``frozen`` - ``shipped`` with every object alive before the search (the loaded indexes, the
  model) frozen out of garbage collection (``gc.freeze()``, undone after the search), as a
  serving process that froze them once loaded would run;
* ``hand_fusion`` - ``shipped`` with the learned ranker off: the hand-set fusion's order, and
  no whole-request row (what the learned ranker and the whole request's cosine cost);
* ``light_rows`` - ``shipped`` with the ranker's candidates read the previous way: every
  candidate's light row from the store on every search, its name analysed (the ``rerank``
  stage of the two shows what remembering names and servers per index version saves);
* ``row_ranker`` - ``shipped`` with the ranker's stage built the previous way: each run looked
  up through a dict of its own, the features a row at a time, the trees' masks gathered and
  combined a feature at a time for every feature (the request's own ones included), and the
  order sorted in Python (tests/support/rank_reference.py; the ``rerank`` stage of the two
  shows what building the rows a column at a time saves);
* ``cold_names`` - ``shipped`` with nothing remembered: every candidate's name and server read
  with the store's narrow read on every search (a request whose candidates no search has met
  since the last write);
* ``remembered_names`` - ``shipped`` with the candidates' names and servers got the previous
  way: read with the store's narrow read when no search has met them at this index version,
  then remembered for it (the shipped path holds every tool's, loaded apart once per version:
  search/nametable.py; the ``names`` part of ``rerank`` of the two shows what that saves);
* ``alternating`` - ``shipped`` with a request's texts shared between the two query sessions
  the previous way (by length, alternately) instead of in two halves of equal length (the
  ``embed`` stage of the two, on long requests, shows what balancing saves);
* ``whole_embedded`` - ``shipped`` with the whole request's text embedded beside its intents
  (``SearchConfig.whole_request = "embedded"``) instead of its intents' rows averaged (the
  product's). The packaged ranker was fitted for the averaged row, so its answers differ (left
  out of the same-answers check); its cost is that of a ranker fitted for the embedded row with
  as many trees (the previous packaged one had 262, this one 148).

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
change results).
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The ranker's previous stage, which the tests check the product's against.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from latency import CACHE, KEPT, _postings, _queries, build_index
from support.rank_reference import previous_rerank, reference_rows
from toolscout.config import Settings
from toolscout.embed import onnx
from toolscout.embed.onnx import OnnxEmbedder
from toolscout.engine import Engine
from toolscout.eval.metrics import percentile
from toolscout.models import ItemType, Scored, SearchMode, Tool
from toolscout.search.candidates import CandidateCache
from toolscout.search.config import SearchConfig
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.nametable import NameTable, read_snapshot
from toolscout.search.rank import Legs, features
from toolscout.search.text import query_tokens
from toolscout.store.sql import tools as tool_rows
from toolscout.store.sqlite.ann.shard import EdgeIndex

VARIANTS = (
    *("previous", "one_thread", "split", "pool_embeds", "shipped", "hashed_hits", "frozen"),
    *("hand_fusion", "light_rows", "row_ranker", "cold_names", "remembered_names"),
    *("alternating", "whole_embedded"),
)
#: Variants that rank otherwise, left out of the same-answers check.
RANKS_OTHERWISE = ("hand_fusion", "whole_embedded")
#: Variants that run the shipped path but for the one part they replace.
SHIPPED_TOO = (
    *("light_rows", "row_ranker", "cold_names", "remembered_names", "alternating"),
    "whole_embedded",
)
STAGES = ("embed", "lexical", "vector", "rerank", "hits")
#: Parts of a stage above, timed on their own: ``names``, the ranker's read of its candidates'
#: names and servers (remembered per index version) within ``rerank``.
NESTED = ("names",)
SHIPPED_NEAREST = EdgeIndex.nearest_many
SHIPPED_LIGHT_TOOL = tool_rows.row_to_light_tool
SHIPPED_HALVES = onnx.balanced_halves
SHIPPED_WHOLE = SearchConfig().whole_request


def _alternating(sizes: Sequence[int]) -> tuple[list[int], list[int]]:
    """The previous share-out of a request's texts: sorted by length, every other one."""
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    return order[0::2], order[1::2]


def _light_rows_features(
    searcher: HybridSearcher, legs: Legs, tokens: list[str], version: Any = None
) -> tuple[list[str], NDArray[np.float64]]:
    """The previous candidate read: every candidate's light row, on every search."""
    ids = [h.id for h in legs.fused[: searcher.config.candidates]]
    return ids, features(legs, ids, tokens, searcher.store.tools.get_light(ids))


def _row_rerank(
    searcher: HybridSearcher, ranker: Any, legs: Legs, tokens: list[str], version: Any
) -> tuple[list[Scored], dict[str, float]]:
    """The ranker's previous stage: rows a run and a candidate at a time, masks a feature at
    a time (the candidates' names and servers remembered as in the shipped path)."""
    ids = [h.id for h in legs.fused[: searcher.config.candidates]]
    x = reference_rows(legs, ids, tokens, searcher.seen.get(ids, version))
    return previous_rerank(ranker, legs, ids, x)


def _hashed_light_tool(row: Any) -> Tool:
    """The previous way of building a result's tool: the constructor hashes the fields, then
    the stored hash (which covers the schemas left out) replaces that hash."""
    tool = Tool(
        id=row[0], name=row[1], description=row[2], annotations=json.loads(row[3]),
        item_type=ItemType(row[4]), server=row[5], source=row[6], category=row[7],
    )  # fmt: skip
    object.__setattr__(tool, "content_hash", row[8])
    return tool


def _payload_nearest(
    self: EdgeIndex, vectors: Any, *, limit: int, filters: Any, ids_of: Any
) -> Any:
    """The previous way of naming the points: each point's ``tool_id`` payload."""
    from toolscout.store.sqlite.ann.shard import shard_filter

    flt = shard_filter(filters)
    if flt is False or limit <= 0:
        return [[] for _ in vectors]
    params = qe.SearchParams(hnsw_ef=max(self.graph.ef, limit + 8))
    requests = [
        qe.QueryRequest(
            query=qe.Query.Nearest(np.asarray(v, dtype=np.float32).tolist()),
            limit=limit + 8, filter=flt, params=params, with_payload=["tool_id"],
        )
        for v in vectors
    ]  # fmt: skip
    out = []
    for points in self.shard.query_batch(qe.QueryBatchRequest(requests)):
        ranked = sorted(
            ((float(p.score), str((p.payload or {})["tool_id"])) for p in points),
            key=lambda pair: (-pair[0], pair[1]),
        )
        out.append([Scored(i, s) for s, i in ranked[:limit]])
    return out


def _embedding_on_pool(searcher: HybridSearcher) -> Callable[..., Any]:
    """The previous hand-off of a direct search: the query embedded on a pool thread while the
    caller runs the lexical leg, then the vector leg on the caller once the pool thread is done
    (the rest of the search is the shipped one, given those vectors and that lexical run)."""

    def rank(text: str, state: Any, *, mode: SearchMode, limit: int, **kw: Any) -> Any:
        tokens = query_tokens(text)
        pool = searcher._legs
        if mode is not SearchMode.HYBRID or kw.get("query_vectors") is not None or not tokens:
            return HybridSearcher.rank(searcher, text, state, mode=mode, limit=limit, **kw)
        timings = kw.get("timings")
        timings = timings if timings is not None else {}
        assert pool is not None
        whole = searcher.ranker is not None and searcher.config.learned_ranker
        embedding = pool.submit(searcher._embed_timed, text, timings, whole)
        n = max(searcher.config.candidates, limit)
        filters = kw.get("filters")
        lexical = searcher._lexical_timed(tokens, n, limit, filters, state, timings)
        kw["query_vectors"], kw["timings"] = embedding.result()[0], timings
        searcher._lexical_timed = lambda *_: lexical  # type: ignore[method-assign]
        try:
            return HybridSearcher.rank(searcher, text, state, mode=mode, limit=limit, **kw)
        finally:
            del searcher._lexical_timed

    return rank


def _model(engine: Engine) -> OnnxEmbedder:
    inner: Any = engine.embedder
    while not isinstance(inner, OnnxEmbedder):
        inner = inner.inner
    return inner


def _use(engine: Engine, variant: str) -> None:
    model = _model(engine)
    saved = model.__dict__.setdefault("_bench_saved", (model._query_session, model._split_queries))
    previous = variant == "previous"
    model._query_session = model._session if previous else saved[0]
    # Frozen: every object alive now (the loaded indexes, the model) is left out of garbage
    # collections, as after ``gc.freeze()`` once a serving process has loaded them.
    if variant == "frozen":
        gc.freeze()
    else:
        gc.unfreeze()
    shipped = variant in ("shipped", "hashed_hits", "frozen", "hand_fusion", *SHIPPED_TOO)
    beside = shipped or variant == "pool_embeds"
    model._split_queries = saved[1] and (beside or variant == "split")
    searcher = engine.search_service.searcher
    learned = variant != "hand_fusion"
    whole = "embedded" if variant == "whole_embedded" else SHIPPED_WHOLE
    searcher.config = replace(
        searcher.config, parallel_legs=beside, learned_ranker=learned, whole_request=whole
    )
    if variant == "pool_embeds":
        searcher.rank = _embedding_on_pool(searcher)  # type: ignore[method-assign]
    else:
        searcher.__dict__.pop("rank", None)
    if variant == "light_rows":
        searcher.candidate_features = functools.partial(_light_rows_features, searcher)  # type: ignore[method-assign]
    else:
        searcher.__dict__.pop("candidate_features", None)
    if variant == "row_ranker":
        searcher._rerank = functools.partial(_row_rerank, searcher)  # type: ignore[method-assign]
    else:
        searcher.__dict__.pop("_rerank", None)
    shipped_seen = searcher.__dict__.setdefault("_bench_seen", searcher.seen)
    if variant == "cold_names":
        searcher.seen = CandidateCache(engine.store.tools)
    elif variant == "remembered_names":
        searcher.seen = searcher.__dict__.setdefault(
            "_bench_remembered", CandidateCache(engine.store.tools)
        )
    else:
        searcher.seen = shipped_seen
    onnx.balanced_halves = _alternating if variant == "alternating" else SHIPPED_HALVES  # type: ignore[assignment]
    hashed = variant == "hashed_hits"
    tool_rows.row_to_light_tool = _hashed_light_tool if hashed else SHIPPED_LIGHT_TOOL  # type: ignore[assignment]
    EdgeIndex.nearest_many = _payload_nearest if previous else SHIPPED_NEAREST  # type: ignore[method-assign]


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
        _postings(engine)
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
        "load_s": round(table.loads[-1], 3),
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
        ("alternating", "embed"),
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
            _use(engine, v)
            engine.search(q, mode=SearchMode.HYBRID, limit=10)
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    same = True
    gc.callbacks.append(on_gc)
    try:
        for k, q in enumerate(queries):
            answers = []
            for v in _order(variants, k):
                _use(engine, v)
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
    short, long = _queries()
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
