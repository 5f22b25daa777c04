"""Why a tool ranked: the evidence behind each hit of a search.

The explanation is computed beside the search, never inside it, so searching stays as fast as it
is: after the engine ranked the hits, :func:`explain_hits` asks the store for each leg's view of
those same tools (their BM25 score and rank in the lexical leg, their cosine similarity and rank
in the vector leg), normalises both as the fusion does (relative to the leg's best hit), weights
them with the weights the fusion used for this query, and lists the query terms found in each
tool's own fields and the skills that routed it. The hit's ``score`` is always the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from toolscout.models import (
    Filters,
    ItemType,
    Scored,
    SearchMode,
    SearchRequest,
    SkillMatch,
    Strategy,
    Tool,
)
from toolscout.search.document import lexical_fields
from toolscout.search.fusion import lexical_confidence
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.request import parse_item_type, parse_mode, parse_strategy
from toolscout.search.text import identifier_key, query_tokens
from toolscout.store.base import Store

if TYPE_CHECKING:
    from toolscout.engine import Engine

#: Lexical fields whose text comes from the tool itself (the enrichment fields are left out:
#: their text lives in the enrichment cache, and a BM25 score with no term listed here means the
#: enrichment matched).
OWN_FIELDS = ("name", "description", "params", "domain")


@dataclass(frozen=True)
class LegEvidence:
    """One retrieval leg's view of a hit.

    ``raw`` is the leg's own score (BM25, or cosine similarity), ``normalised`` that score
    relative to the leg's best hit (0..1, as the fusion sees it), ``weight`` the share of the
    fused score the leg carried for this query (0..1), and ``contribution`` their product.
    ``rank`` is the hit's place in the leg's candidate list (None: not among them).
    """

    raw: float | None
    normalised: float
    weight: float
    contribution: float
    rank: int | None


@dataclass(frozen=True)
class HitEvidence:
    """A ranked tool with the evidence for its place."""

    tool: Tool
    score: float
    lexical: LegEvidence
    vector: LegEvidence
    #: Query terms (analysed) found in each of the tool's own fields.
    matched_terms: dict[str, tuple[str, ...]]
    #: Every skill the tool belongs to, and the matched skills among them (those routed it).
    skills: tuple[str, ...] = ()
    routed_by: tuple[str, ...] = ()
    schema: dict[str, object] | None = None
    #: Why the hit is where it is when the legs alone do not say (safety net, exact name).
    note: str | None = None
    #: The legs' contributions added up: the fused score the ranking orders by (``score`` is
    #: the calibrated probability computed from the legs' raw evidence).
    fused: float = 0.0


@dataclass(frozen=True)
class Explanation:
    """A search with per-hit evidence (see the module docstring)."""

    query: str
    strategy: str
    mode: SearchMode
    fusion: str
    tokens: tuple[str, ...]
    lexical_weight: float
    vector_weight: float
    hits: list[HitEvidence]
    matched_skills: list[SkillMatch] = field(default_factory=list)
    metadata: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class RankedTool:
    """What the engine returned for one hit, in the explanation's input shape."""

    tool: Tool
    score: float
    skills: tuple[str, ...] = ()
    schema: dict[str, object] | None = None


def leg_weights(
    searcher: HybridSearcher,
    mode: SearchMode,
    tokens: list[str],
    best_bm25: float | None,
    tools: int,
) -> tuple[float, float]:
    """The lexical and vector shares (summing to 1) the fusion gives this query over an index
    of ``tools`` tools."""
    if mode is SearchMode.BM25:
        return 1.0, 0.0
    if mode is SearchMode.VECTOR:
        return 0.0, 1.0
    cfg = searcher.config
    lw, vw = cfg.lexical_weight, cfg.vector_weight
    if cfg.fusion == "adaptive":
        # The searcher's own evidence measure, so the weight shown is the weight used.
        top = [Scored("", best_bm25)] if best_bm25 else []
        lw *= lexical_confidence(cfg, tokens, top, tools)
    total = lw + vw
    return (lw / total, vw / total) if total > 0 else (0.0, 0.0)


def matched_terms(tool: Tool, tokens: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Query tokens present in each of the tool's own analysed fields (fields without any are
    left out)."""
    fields = lexical_fields(tool)
    wanted = list(dict.fromkeys(tokens))
    out: dict[str, tuple[str, ...]] = {}
    for name in OWN_FIELDS:
        present = set(fields.get(name, "").split())
        found = tuple(t for t in wanted if t in present)
        if found:
            out[name] = found
    return out


def explain_hits(
    store: Store,
    searcher: HybridSearcher,
    query: str,
    ranked: Sequence[RankedTool],
    *,
    mode: SearchMode,
    filters: Filters | None,
    matched: Sequence[SkillMatch] = (),
) -> tuple[list[HitEvidence], tuple[str, ...], tuple[float, float]]:
    """Evidence for each ranked tool; also the query's tokens and the legs' weights.

    Raises:
        StoreError, EmbedError: from the store or the embedder.
    """
    cfg = searcher.config
    tokens = query_tokens(query)
    ids = [r.tool.id for r in ranked]
    depth = max(cfg.candidates, len(ids))
    lex_run = (
        store.lexical(tokens, limit=depth, filters=filters, weights=cfg.field_weights)
        if tokens and mode is not SearchMode.VECTOR
        else []
    )
    lex_rank = {h.id: i for i, h in enumerate(lex_run, 1)}
    bm25 = {h.id: h.score for h in lex_run}
    missing = [i for i in ids if i not in bm25]
    if missing and lex_run:  # beyond the candidate depth: score them on their own
        only = Filters(tool_ids=tuple(missing))
        found = store.lexical(tokens, limit=len(missing), filters=only, weights=cfg.field_weights)
        bm25.update({h.id: h.score for h in found})
    best_bm25 = lex_run[0].score if lex_run else None

    sims: dict[str, float] = {}
    vec_rank: dict[str, int] = {}
    best_sim: float | None = None
    if mode is not SearchMode.BM25:
        rows = searcher.embed_query(query)
        vectors = store.vectors(ids)
        for tid, vec in vectors.items():
            sims[tid] = float(np.max(rows @ vec))
        runs = store.nearest_many(rows, limit=depth, filters=filters)
        best: dict[str, float] = {}
        for run in runs:
            for h in run:
                best[h.id] = max(h.score, best.get(h.id, -2.0))
        order = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        vec_rank = {tid: i for i, (tid, _) in enumerate(order, 1)}
        best_sim = order[0][1] if order else None

    lw, vw = leg_weights(searcher, mode, tokens, best_bm25, store.count())
    routing = {m.skill.id for m in matched}
    hits: list[HitEvidence] = []
    for r in ranked:
        tid = r.tool.id
        if cfg.fusion == "rrf" and mode is SearchMode.HYBRID:
            # RRF sees ranks only: 1 for a leg's first hit, (k+1)/(k+rank) below it.
            lex_norm = _rrf(lex_rank.get(tid), cfg.rrf_k)
            vec_norm = _rrf(vec_rank.get(tid), cfg.rrf_k)
        else:
            lex_norm = _ratio(bm25.get(tid), best_bm25, floor=0.0)
            vec_norm = _ratio(sims.get(tid), best_sim, floor=cfg.vector_floor)
        hits.append(
            HitEvidence(
                tool=r.tool,
                score=r.score,
                lexical=LegEvidence(bm25.get(tid), lex_norm, lw, lex_norm * lw, lex_rank.get(tid)),
                vector=LegEvidence(sims.get(tid), vec_norm, vw, vec_norm * vw, vec_rank.get(tid)),
                matched_terms=matched_terms(r.tool, tokens),
                skills=r.skills,
                routed_by=tuple(s for s in r.skills if s in routing),
                schema=r.schema,
                note=_note(r.tool.name, query, bool(routing), r.skills, routing),
                fused=lex_norm * lw + vec_norm * vw,
            )
        )
    return hits, tuple(tokens), (lw, vw)


def _note(
    name: str, query: str, routed: bool, skills: Sequence[str], routing: set[str]
) -> str | None:
    """Say why a hit is placed where the legs' contributions alone would not put it."""
    if routed and not routing.intersection(skills):
        return "outside the matched skills: kept by the safety net at a reduced score"
    if identifier_key(name) == identifier_key(query):
        return "the query is this tool's name: exact-name matches rank first"
    return None


def _rrf(rank: int | None, k: int) -> float:
    return (k + 1) / (k + rank) if rank is not None else 0.0


def _ratio(value: float | None, best: float | None, *, floor: float) -> float:
    if value is None or best is None:
        return 0.0
    span = best - floor
    if span <= 0:
        return 1.0
    return max(0.0, min(1.0, (value - floor) / span))


def explain(
    engine: Engine,
    query: str,
    *,
    strategy: Strategy | str = Strategy.DIRECT,
    mode: SearchMode | str = SearchMode.HYBRID,
    limit: int = 5,
    server: str | None = None,
    item_type: ItemType | str | None = None,
) -> Explanation:
    """Run one search as the engine answers it and explain every hit.

    Every parameter reaches the search: ``strategy`` (hierarchical, direct, hybrid), ``mode``
    (bm25, vector, hybrid), ``server`` and ``item_type`` filters.

    Raises:
        QueryError: naming the invalid field. StoreError, EmbedError.
    """
    request = SearchRequest(
        query,
        strategy=parse_strategy(strategy),
        mode=parse_mode(mode),
        item_type=parse_item_type(item_type) if item_type is not None else None,
        limit=limit,
        include_schemas=True,
        servers=(server,) if server else None,
    )
    found = engine.find(request)
    ranked = [RankedTool(h.tool, h.score, h.skill_ids, h.schema) for h in found.tools]
    used_mode, matched = request.mode, list(found.matched_skills)
    filters = Filters(
        servers=request.servers,
        item_types=(request.item_type,) if request.item_type else None,
    )
    metadata: dict[str, object] = {**found.metadata, "no_match": found.no_match}
    hits, tokens, (lw, vw) = explain_hits(
        engine.store,
        engine.searcher,
        query.strip(),
        ranked,
        mode=used_mode,
        filters=None if filters.is_empty() else filters,
        matched=matched,
    )
    return Explanation(
        query=query.strip(),
        strategy=str(request.strategy),
        mode=used_mode,
        fusion=engine.searcher.config.fusion,
        tokens=tokens,
        lexical_weight=lw,
        vector_weight=vw,
        hits=hits,
        matched_skills=matched,
        metadata=metadata,
    )
