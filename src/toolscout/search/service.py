"""SearchService: every search the engine answers, with the result cache in front.

The engine builds one and holds it; ``find`` (hierarchical/direct/hybrid), the flat ``search``
and the two single-stage calls all live here, over one hybrid searcher and one hierarchical
searcher. Results are cached by validated request and dropped whenever the store's data
version moves (any write, from any process).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from toolscout.errors import QueryError
from toolscout.models import (
    Filters,
    HierarchicalRequest,
    HierarchicalResult,
    ItemType,
    SearchHit,
    SearchMode,
    SearchResult,
    SkillMatch,
    ToolHit,
)
from toolscout.search.hierarchical import HierarchicalSearcher, validate
from toolscout.search.hybrid import HybridSearcher, check_query
from toolscout.search.results import ResultCache
from toolscout.store.base import Store

MAX_LIMIT = 50


class SearchService:
    """The searches of one engine (see the module docstring)."""

    def __init__(self, store: Store, searcher: HybridSearcher, *, cache_size: int) -> None:
        self.store = store
        self.searcher = searcher
        self.hierarchical = HierarchicalSearcher(store, searcher)
        #: Finished searches by request, dropped on any index change (None: off).
        self.result_cache: ResultCache[Any] | None = (
            ResultCache(cache_size, store.data_version) if cache_size > 0 else None
        )

    # -- the contract's search ----------------------------------------------------------------
    def find(self, request: HierarchicalRequest) -> HierarchicalResult:
        """Hierarchical search per the search contract (strategies hierarchical/direct/hybrid).

        Raises:
            QueryError: naming the invalid field (EmptyQuery for an empty query).
        """
        req = validate(request)
        key = self._find_key(req)
        hit, version = self._cached(key)
        if hit is not None:
            return hit
        result = self.hierarchical.find(req)
        if self.result_cache is not None:
            self.result_cache.store(key, version, replace(result, metadata=dict(result.metadata)))
        return result

    def cached_find(self, request: HierarchicalRequest) -> HierarchicalResult | None:
        """The answer ``find`` would give from the result cache alone, or None (no search
        runs). Servers ask this first, so repeated requests never queue behind new ones.

        Raises:
            QueryError: naming the invalid field.
        """
        return self._cached(self._find_key(validate(request)))[0]

    def _find_key(self, req: HierarchicalRequest) -> Hashable:
        # The ranking configuration is part of the key: callers may swap it at run time.
        return ("find", req, self.searcher.config, self.hierarchical.safety_net)

    def _cached(self, key: Hashable) -> tuple[HierarchicalResult | None, Hashable | None]:
        if self.result_cache is None:
            return None, None
        cached, version = self.result_cache.lookup(key)
        if cached is None:
            return None, version
        hit: HierarchicalResult = cached
        return replace(hit, metadata={**hit.metadata, "cached": True}), version

    # -- flat search ----------------------------------------------------------------------------
    def search(self, query: str, *, mode: SearchMode, limit: int, filters: Filters) -> SearchResult:
        """One hybrid/bm25/vector search over every tool the filters allow.

        Raises:
            QueryError: empty/long query, limit outside 1..50.
        """
        check_query(query)
        if not 1 <= limit <= MAX_LIMIT:
            raise QueryError("limit", f"must be between 1 and {MAX_LIMIT}, got {limit}")
        t0 = time.perf_counter()
        key = ("search", query, mode, limit, filters, self.searcher.config)
        cached, version = self.result_cache.lookup(key) if self.result_cache else (None, None)
        if cached is not None:
            hit: SearchResult = cached
            total = (time.perf_counter() - t0) * 1000
            return replace(hit, timings_ms={"cached": 1.0, "total_ms": total})
        timings: dict[str, float] = {}
        ranked = self.searcher.search(
            query, mode=mode, limit=limit, filters=filters, timings=timings
        )
        tools = self.store.get_many([r.id for r in ranked])
        hits = [
            SearchHit(tools[r.id], r.score, r.lexical_rank, r.vector_rank)
            for r in ranked
            if r.id in tools
        ]
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        result = SearchResult(query=query, mode=mode, hits=hits, timings_ms=timings)
        if self.result_cache is not None:
            self.result_cache.store(key, version, replace(result, timings_ms=dict(timings)))
        return result

    # -- single stages ----------------------------------------------------------------------------
    def match_skills(
        self, query: str, *, limit: int = 5, threshold: float = 0.4
    ) -> list[SkillMatch]:
        """Stage 1 alone: active skills fitting ``query``, best first.

        Raises:
            QueryError: empty/long query, limit or threshold out of range.
        """
        req = _validate(
            HierarchicalRequest(query, skill_limit=limit, skill_threshold=threshold),
            {"skill_limit": "limit", "skill_threshold": "threshold"},
        )
        hs = self.hierarchical
        return hs.match_skills(hs.searcher.embed_query(req.query), limit=limit, threshold=threshold)

    def search_in_skills(
        self,
        query: str,
        *,
        skill_ids: Sequence[str] | None,
        item_type: ItemType | None = None,
        limit: int = 10,
        threshold: float = 0.3,
    ) -> list[ToolHit]:
        """Stage 2 alone: tools of ``skill_ids`` (None: every tool), best first.

        Raises:
            QueryError: bad query, limit, threshold or item type; ``skill_ids`` not a list.
        """
        if skill_ids is not None and (
            isinstance(skill_ids, str) or not all(isinstance(i, str) for i in skill_ids)
        ):
            raise QueryError("skill_ids", "must be a list of skill ids or null")
        req = _validate(
            HierarchicalRequest(query, item_type=item_type, limit=limit, tool_threshold=threshold),
            {"tool_threshold": "threshold"},
        )
        hs = self.hierarchical
        ranked, _ = hs.search_tools(
            req.query,
            hs.searcher.embed_query(req.query),
            skill_ids=list(skill_ids) if skill_ids is not None else None,
            item_type=req.item_type,
            limit=req.limit,
            threshold=req.tool_threshold,
        )
        return hs.hits(ranked, include_schemas=False)


def _validate(request: HierarchicalRequest, rename: dict[str, str]) -> HierarchicalRequest:
    """Validate, naming fields as the calling method's parameters are named."""
    try:
        return validate(request)
    except QueryError as exc:
        if exc.field in rename:
            raise QueryError(rename[exc.field], exc.message) from None
        raise
