"""Two-stage search: skills that fit the request, then the tools inside them.

Stage 1 scores active skills against the query (embedded once; the same vectors feed stage 2).
Stage 2 runs the core hybrid search restricted to tools of the matched skills. Stage 3 loads
input schemas for the returned tools only, when asked. With no skills, no match, a stage-1
error, or when one of the catalog's first three tools lies outside the matched skills (the
safety net), the search falls back to the unfiltered catalog and says so: ``skill_ids_used = None``,
``strategy_used = "direct"`` and ``fallback`` gives the reason (BR-001: outside a fallback,
every tool returned belongs to a matched skill).

Stage 1 (the skill scores, their features and fitted constants) is :mod:`.skillstage`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import replace

from toolscout.models import (
    Filters,
    Ranked,
    SearchRequest,
    SearchResult,
    SkillMatch,
    Strategy,
    ToolHit,
)
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.skillfit import SkillFit
from toolscout.search.skillstage import SkillStage, Vectors
from toolscout.store.base import IndexState, Store

log = logging.getLogger("toolscout.search")

#: Out-of-skill tools from the safety net enter with their score times this factor
#: (chosen with bench/skills.py, see docs/BENCHMARKS.md section 3).
SAFETY_NET = 0.95
#: Seconds between two WARNING logs of the same fallback (each one is logged at DEBUG).
WARN_EVERY = 60.0
#: How deep the safety net's unfiltered search goes.
NET_DEPTH = 50
#: The net falls back when one of the catalog's first this many skilled tools lies outside the
#: matched skills: the places an agent reads first are never lost to stage 1 (hit@3 on dev
#: requests, docs/BENCHMARKS.md §3).
NET_WATCH = 3


class HierarchicalSearcher:
    """Runs the contract's strategies over a store and the core hybrid searcher."""

    def __init__(
        self,
        store: Store,
        searcher: HybridSearcher,
        *,
        safety_net: float = SAFETY_NET,
        fit: SkillFit | None = None,
    ) -> None:
        self.store = store
        self.searcher = searcher
        #: Stage 1: the skills that fit a request (``fit``: its constants, packaged unless given).
        self.stage1 = SkillStage(store, searcher.embedder, fit)
        #: Score factor for the safety net's out-of-skill tools (0 turns the net off).
        self.safety_net = safety_net
        self._warned: dict[str, tuple[float, int]] = {}
        self._warn_lock = threading.Lock()

    def _warn(self, message: str, arg: object) -> None:
        """Log a fallback: every one at DEBUG, a WARNING at most once per ``WARN_EVERY``
        seconds per kind (a served index can fall back hundreds of times a second), saying how
        many were not shown."""
        log.debug(message, arg)
        now = time.monotonic()
        with self._warn_lock:
            last, skipped = self._warned.get(message, (-WARN_EVERY, 0))
            if now - last < WARN_EVERY:
                self._warned[message] = (last, skipped + 1)
                return
            self._warned[message] = (now, 0)
        extra = f" ({skipped} more like it since the last warning)" if skipped else ""
        log.warning(message + extra, arg)

    # -- stage 2 and 3 ------------------------------------------------------------------------
    def search_tools(
        self,
        req: SearchRequest,
        vectors: Vectors | None,
        state: IndexState,
        *,
        skill_ids: Sequence[str] | None,
        limit: int,
        threshold: float,
        count: bool = True,
        places: int | None = None,
        timings: dict[str, float] | None = None,
    ) -> tuple[list[Ranked], int]:
        """Stage 2: ``req``'s search restricted to ``skill_ids`` (None: the whole catalog);
        returns the ranked tools at or above ``threshold`` and (with ``count``) how many tools
        the restriction allowed, else -1. ``places``: how many tools will be shown (each
        intent of a multi-intent request gets its share of them; default ``limit``);
        ``vectors`` None: the searcher embeds the request (beside its lexical leg) and puts the
        time it took in ``timings``."""
        filters = _filters(req, skill_ids)
        found = self.searcher.rank(
            req.query,
            state,
            mode=req.mode,
            limit=limit,
            filters=filters,
            query_vectors=vectors,
            timings=timings,
            places=places,
        )
        candidates = self._count(filters, state) if count else -1
        return [r for r, _ in found if r.score >= threshold], candidates

    def _count(self, filters: Filters, state: IndexState) -> int:
        """Tools ``filters`` let through, at the search's index state."""
        return state.tools if filters.is_empty() else self.store.count(filters, at=state.version)

    def hits(self, ranked: Sequence[Ranked], *, include_schemas: bool) -> list[ToolHit]:
        """Load the ranked tools (without schemas), their skills, and schemas when asked.

        ``primary_skill_id`` is the assignment marked primary, else the most confident one
        (assignments come most confident first), so it is always one of ``skill_ids``."""
        ids = [r.id for r in ranked]
        tools = self.store.tools.light_rows(ids)
        assigned = self.store.skills.assignments(ids)
        schemas = self.store.tools.schemas(ids) if include_schemas else {}
        out: list[ToolHit] = []
        for r in ranked:
            found = tools.get(r.id)
            if found is None:  # deleted between the stages
                continue
            tool, key = found
            rows = assigned.get(r.id, [])
            primary = next((a.skill_id for a in rows if a.is_primary), None)
            if primary is None and rows:
                primary = rows[0].skill_id
            out.append(
                ToolHit(
                    tool,
                    r.score,
                    tuple(a.skill_id for a in rows),
                    primary,
                    schemas.get(r.id),
                    key,
                    r.lexical_rank,
                    r.vector_rank,
                )
            )
        return out

    # -- strategies ---------------------------------------------------------------------------
    def run(self, req: SearchRequest, state: IndexState) -> SearchResult:
        """Run the strategy of ``req`` (validated by the caller) at index ``state``.

        Raises:
            StoreError, EmbedError.
        """
        t0 = time.perf_counter()
        if req.strategy is Strategy.DIRECT:
            # The searcher embeds the request itself, beside its lexical leg (a lexical-only
            # search makes no vectors).
            timings: dict[str, float] = {}
            ranked, matched, used, stage_ms, cand, fallback = self._direct(
                req, None, state, timings
            )
            embed_ms = round(timings.get("embed_ms", 0.0), 3)
        else:
            vectors = self.searcher.embed_query(req.query)
            embed_ms = _ms(t0, time.perf_counter())
            run = self._hierarchical if req.strategy is Strategy.HIERARCHICAL else self._hybrid
            ranked, matched, used, stage_ms, cand, fallback = run(req, vectors, state)
        # Judged before min_score: no tool is likely to serve the request (calibrated scores,
        # search/calibration.py), or none is left at the caller's level.
        unlikely = self.searcher.no_match(ranked, req.mode)
        answerable = ranked[0].answerable if ranked else 0.0
        ranked = [r for r in ranked if r.score >= req.min_score]
        t3 = time.perf_counter()
        tools = self.hits(ranked, include_schemas=req.include_schemas)
        end = time.perf_counter()
        total = self._count(_filters(req, None), state)
        ranking, ranker_off = self.searcher.ranking(req.mode)
        metadata = {
            # A fallback searched the whole catalog: say so rather than name the strategy asked.
            "strategy_used": str(Strategy.DIRECT if fallback else req.strategy),
            "fallback": fallback,
            "skill_ids_used": used,
            "stage1_skill_count": len(matched),
            "stage2_candidate_count": cand,
            "final_count": len(tools),
            "query_embedding_time_ms": embed_ms,
            "skill_search_time_ms": stage_ms["stage1"],
            "tool_search_time_ms": stage_ms["stage2"],
            "schema_load_time_ms": _ms(t3, end),
            "total_time_ms": _ms(t0, end),
            "searched_fraction": round(cand / total, 6) if total else 0.0,
            "calibration": self.searcher.calibration_status,
            # What ordered the hits ("learned", or the fusion or leg that did) and why not the
            # learned ranker (None when it ran).
            "ranking": ranking,
            "ranker_off": ranker_off,
            "answerable": round(answerable, 6) if answerable is not None else None,
        }
        return SearchResult(
            req.query,
            tools,
            matched,
            metadata,
            no_match=unlikely or not tools,
            load_schemas=self.store.tools.schemas,
        )

    def _direct(
        self,
        req: SearchRequest,
        vectors: Vectors | None,
        state: IndexState,
        timings: dict[str, float] | None = None,
    ) -> _Stages:
        t1 = time.perf_counter()
        ranked, cand = self.search_tools(
            req,
            vectors,
            state,
            skill_ids=None,
            limit=req.limit,
            threshold=req.tool_threshold,
            timings=timings,
        )
        stage_ms = {"stage1": 0.0, "stage2": _ms(t1, time.perf_counter())}
        return ranked, [], None, stage_ms, cand, None

    def _hierarchical(self, req: SearchRequest, vectors: Vectors, state: IndexState) -> _Stages:
        t0 = time.perf_counter()
        try:
            matched = self.stage1.match(
                vectors,
                state,
                limit=req.skill_limit,
                threshold=req.skill_threshold,
                coverage=req.skill_coverage,
            )
        except Exception as exc:  # stage 1 is an optimisation: never fail the search for it
            self._warn("skill stage failed, searching every tool: %s", exc)
            matched = []
        t1 = time.perf_counter()
        fallback: str | None = None
        if not matched:
            self._warn("no skill matched %r; searching every tool", req.query[:80])
            used: list[str] | None = None
            fallback = "no skill matched: every tool searched"
        else:
            used = [m.skill.id for m in matched]
        if used is not None and self.safety_net > 0 and any(m.tool_count for m in matched):
            # The net's catalog-wide ranking already holds the matched skills' best tools:
            # a second, filtered search would double the cost for nothing it could add.
            ranked, netted = self._with_safety_net(req, vectors, state, used)
            cand = self._count(_filters(req, used), state)
            if netted:
                used, fallback = None, "safety net: a first tool is outside the matched skills"
        else:
            ranked, cand = self.search_tools(
                req, vectors, state, skill_ids=used, limit=req.limit, threshold=req.tool_threshold
            )
        stage_ms = {"stage1": _ms(t0, t1), "stage2": _ms(t1, time.perf_counter())}
        return ranked, matched, used, stage_ms, cand, fallback

    def _with_safety_net(
        self, req: SearchRequest, vectors: Vectors, state: IndexState, used: Sequence[str]
    ) -> tuple[list[Ranked], bool]:
        """Stage 2 with a safety net, so a tool the classifier misfiled is not lost, and whether
        the net had to be used. The answer holds the matched skills' tools in their catalog-wide
        order; but when one of the catalog's first ``NET_WATCH`` skilled tools belongs to another
        active skill and ranks above one of the matched skills' tools (the request's tool may
        have been filed elsewhere), the answer is the catalog-wide ranking with the
        out-of-skill tools scaled by ``safety_net``: a fallback (BR-001: outside a fallback,
        every tool returned belongs to a matched skill). Tools with no active skill stay out
        (only ``direct`` finds them)."""
        net, _ = self.search_tools(
            req,
            vectors,
            state,
            skill_ids=None,
            limit=NET_DEPTH,
            threshold=0.0,
            count=False,
            places=req.limit,
        )
        active = {s.id for s in self.stage1.index(state.version).skills}
        assigned = self.store.skills.assignments([r.id for r in net])
        inside: dict[str, Ranked] = {}
        outside: dict[str, Ranked] = {}
        watched: list[bool] = []  # the first skilled tools: inside the matched skills or not
        for r in net:
            skills = {a.skill_id for a in assigned.get(r.id, [])} & active
            if not skills:
                continue
            if len(watched) < NET_WATCH:
                watched.append(bool(skills.intersection(used)))
            if skills.intersection(used):
                inside[r.id] = r
            else:
                outside[r.id] = replace(r, score=r.score * self.safety_net)
        # An outside tool matters when it would push a matched skill's tool down the first
        # places; after the last of them (a small skill, not topped up) it changes nothing.
        first_out = watched.index(False) if False in watched else NET_WATCH
        netted = first_out < NET_WATCH and len(inside) > watched[:first_out].count(True)
        scored = {**inside, **outside} if netted else inside
        kept = (r for r in scored.values() if r.score >= req.tool_threshold)
        # Equal scores keep the searcher's order (which already broke its ties by id): calibrated
        # scores never rise down a ranking, so ties are common and the order is the ranking's.
        rank = {r.id: i for i, r in enumerate(net)}
        return sorted(kept, key=lambda r: (-r.score, rank[r.id]))[: req.limit], netted

    def _hybrid(self, req: SearchRequest, vectors: Vectors, state: IndexState) -> _Stages:
        # Both strategies, one after the other (their legs already overlap where the store
        # gains from it); a tool keeps its better score (ties: direct's order first).
        hr, matched, used, h_ms, h_cand, _ = self._hierarchical(req, vectors, state)
        dr, _, _, d_ms, d_cand, _ = self._direct(req, vectors, state)
        best: dict[str, Ranked] = {}
        for r in [*hr, *dr]:
            if r.id not in best or r.score > best[r.id].score:
                best[r.id] = r
        rank = {r.id: i for i, r in enumerate(dr)}
        for i, r in enumerate(hr):
            rank.setdefault(r.id, len(dr) + i)
        merged = sorted(best.values(), key=lambda r: (-r.score, rank[r.id]))[: req.limit]
        stage_ms = {"stage1": h_ms["stage1"], "stage2": h_ms["stage2"] + d_ms["stage2"]}
        return merged, matched, used, stage_ms, max(h_cand, d_cand), None


#: ranked, matched skills, skill ids used, stage times, candidates, why it fell back (or None)
_Stages = tuple[list[Ranked], list[SkillMatch], list[str] | None, dict[str, float], int, str | None]


def _filters(req: SearchRequest, skill_ids: Sequence[str] | None) -> Filters:
    return Filters(
        servers=req.servers,
        sources=req.sources,
        tool_ids=req.tool_ids,
        skill_ids=tuple(skill_ids) if skill_ids is not None else None,
        item_types=(req.item_type,) if req.item_type is not None else None,
    )


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 3)
