"""The query paths bench/search_stages.py times beside the shipped one, each switched on a
live engine by ``use`` (the previous code of a part put back in place of the product's, or a
setting changed, and every other variant's change undone):

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
* ``design_map`` - ``shipped`` with the learned ranker's stage computed the previous way: its
  score map through a design matrix of every input of its logistic (request-level ones
  repeated down the rows) times its weights, instead of the weights folded once per ranker
  (search/rankinputs.py); its trees combining the request's shared columns a feature at a
  time; its rows walking the fused run and taking the cosines' mean and spread through numpy's
  wrappers. Its scores differ from the shipped ones by rounding only (within 1e-15; the same
  ids in the same order), so it is left out of the bit-for-bit same-answers check;
* ``whole_embedded`` - ``shipped`` with the whole request's text embedded beside its intents
  (``SearchConfig.whole_request = "embedded"``) instead of its intents' rows averaged (the
  product's). The packaged ranker was fitted for the averaged row, so its answers differ (left
  out of the same-answers check); its cost is that of a ranker fitted for the embedded row with
  as many trees (the previous packaged one had 262, this one 148).
"""

from __future__ import annotations

import functools
import gc
import json
import sys
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe
from numpy.typing import NDArray

# The ranker's previous stage (``row_ranker``), which the tests check the product's against.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.rank_reference import previous_rerank, reference_rows
from toolscout.embed import onnx
from toolscout.embed.onnx import OnnxEmbedder
from toolscout.engine import Engine
from toolscout.models import ItemType, Scored, SearchMode, Tool
from toolscout.search import rankrows
from toolscout.search.candidates import CandidateCache
from toolscout.search.config import SearchConfig
from toolscout.search.forest import _LOWEST, Forest
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rank import Legs, features
from toolscout.search.rankcal import RankCalibration
from toolscout.search.text import query_tokens
from toolscout.store.sql import tools as tool_rows
from toolscout.store.sqlite.ann.shard import EdgeIndex

VARIANTS = (
    *("previous", "one_thread", "split", "pool_embeds", "shipped", "hashed_hits", "frozen"),
    *("hand_fusion", "light_rows", "row_ranker", "cold_names", "remembered_names"),
    *("alternating", "whole_embedded", "design_map"),
)
#: Variants that rank otherwise (or score otherwise by rounding), left out of the same-answers
#: check.
RANKS_OTHERWISE = ("hand_fusion", "whole_embedded", "design_map")
#: Variants that run the shipped path but for the one part they replace.
SHIPPED_TOO = (
    *("light_rows", "row_ranker", "cold_names", "remembered_names", "alternating"),
    *("whole_embedded", "design_map"),
)
SHIPPED_NEAREST = EdgeIndex.nearest_many
SHIPPED_LIGHT_TOOL = tool_rows.row_to_light_tool
SHIPPED_HALVES = onnx.balanced_halves
SHIPPED_WHOLE = SearchConfig().whole_request
SHIPPED_MAP = RankCalibration.probabilities
SHIPPED_PREDICT = Forest.predict
SHIPPED_PLACED = rankrows._Placed
SHIPPED_COSINES = rankrows._cosine_columns


def _previous_predict(
    self: Forest, x: Any, shared: int = 0, copies: Any = ()
) -> NDArray[np.float64]:
    """The trees' previous evaluation: the shared columns combined a feature at a time, and
    copied columns searched like any other (``copies`` unread)."""
    n = x.shape[0]
    wide, offsets = self._wide, self.offsets
    common = self._all_leaves.copy()
    per_row: list[int] = []
    for j, f in enumerate(self.features):
        if f < shared:
            common &= wide[offsets[j] + bisect_left(self._cuts[j], float(x[0, f]))]
        else:
            per_row.append(j)
    masks = np.empty((n, wide.shape[1]), dtype=np.uint64)
    masks[:] = common
    if per_row:
        columns = x.T[[self.features[j] for j in per_row]]
        rows = np.empty((len(per_row), n), dtype=np.int64)
        for k, j in enumerate(per_row):
            rows[k] = self.thresholds[j].searchsorted(columns[k], side="left")
        rows += offsets[per_row, None]
        masks &= np.bitwise_and.reduce(wide.take(rows, axis=0), axis=0)
    leaf = _LOWEST.take(masks.view(np.uint16)[:, : self.size]).astype(np.int64)
    leaf += self.starts
    out: NDArray[np.float64] = self.values.take(leaf).sum(axis=1)
    return out


class _WalkedPlaced(SHIPPED_PLACED):  # type: ignore[misc,valid-type]
    """The rows' previous placing: every run walked, the fused one too."""

    def __init__(self, runs: Any, row_of: Any, k: int, heads: int | None = None) -> None:
        super().__init__(runs, row_of, k)


def _previous_cosines(out: Any, crowd: Any, sims: Any, rank: Any) -> None:
    """The rows' previous cosine columns: the crowd's mean and spread through numpy."""
    sd = float(crowd.std()) if crowd.size > 1 else 1.0
    mu = float(crowd.mean()) if crowd.size else 0.0
    out[0] = sims
    out[1] = sims - (float(crowd[0]) if crowd.size else 0.0)
    out[2] = sims - mu
    out[2] /= max(sd, 1e-6)
    out[3] = np.log1p(rank)


def _design_probabilities(
    self: RankCalibration, raw: Any, x: Any, features: Sequence[str], order: Any = None
) -> NDArray[np.float64]:
    """The score map's previous computation: stage 1 through the design matrix of every
    input (``RankCalibration.logistic``), then the bands as the shipped map reads them."""
    if raw.size == 0:
        return np.zeros(0)
    order = np.argsort(-raw, kind="stable")
    place = np.empty(raw.size, dtype=np.int64)
    place[order] = np.arange(raw.size)
    p = self.logistic(raw, x, features, place)
    out = p.copy()
    ends = [b.start for b in self.bands[1:]] + [raw.size]
    for band, end in zip(self.bands, ends, strict=True):
        rows = order[band.start : end]
        out[rows] = np.interp(p[rows], np.asarray(band.x), np.asarray(band.y))
    return out


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


def use(engine: Engine, variant: str) -> None:
    """Switch ``engine`` to ``variant``'s query path (undoing every other variant's patch)."""
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
    design = variant == "design_map"
    RankCalibration.probabilities = _design_probabilities if design else SHIPPED_MAP  # type: ignore[method-assign]
    Forest.predict = _previous_predict if design else SHIPPED_PREDICT  # type: ignore[method-assign]
    rankrows._Placed = _WalkedPlaced if design else SHIPPED_PLACED  # type: ignore[misc]
    rankrows._cosine_columns = _previous_cosines if design else SHIPPED_COSINES
    EdgeIndex.nearest_many = _payload_nearest if previous else SHIPPED_NEAREST  # type: ignore[method-assign]
