"""SearchService: every search the engine answers, with the result cache in front.

The engine builds one and holds it. ``find`` (strategy direct, hierarchical or hybrid) is the
one search; the two single-stage calls (skills alone, tools of given skills alone) serve the
contract's stage routes. Results are cached by validated request and dropped whenever the
store's data version moves (any write, from any process).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from toolscout.errors import QueryError
from toolscout.models import ItemType, SearchRequest, SearchResult, SkillMatch, ToolHit
from toolscout.search.hierarchical import HierarchicalSearcher
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.request import validate
from toolscout.search.results import ResultCache
from toolscout.store.base import Store


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
    def find(self, request: SearchRequest) -> SearchResult:
        """The one search (strategies direct, hierarchical, hybrid), per the search contract.

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

    def cached_find(self, request: SearchRequest) -> SearchResult | None:
        """The answer ``find`` would give from the result cache alone, or None (no search
        runs). Servers ask this first, so repeated requests never queue behind new ones.

        Raises:
            QueryError: naming the invalid field.
        """
        return self._cached(self._find_key(validate(request)))[0]

    def _find_key(self, req: SearchRequest) -> Hashable:
        # The ranking configuration is part of the key: callers may swap it at run time.
        return ("find", req, self.searcher.config, self.hierarchical.safety_net)

    def _cached(self, key: Hashable) -> tuple[SearchResult | None, Hashable | None]:
        if self.result_cache is None:
            return None, None
        cached, version = self.result_cache.lookup(key)
        if cached is None:
            return None, version
        hit: SearchResult = cached
        return replace(hit, metadata={**hit.metadata, "cached": True}), version

    # -- single stages ----------------------------------------------------------------------------
    def match_skills(
        self, query: str, *, limit: int = 5, threshold: float = 0.4
    ) -> list[SkillMatch]:
        """Stage 1 alone: active skills fitting ``query``, best first.

        Raises:
            QueryError: empty/long query, limit or threshold out of range.
        """
        req = _validate(
            SearchRequest(query, skill_limit=limit, skill_threshold=threshold),
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
        threshold: float = 0.0,
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
            SearchRequest(query, item_type=item_type, limit=limit, tool_threshold=threshold),
            {"tool_threshold": "threshold"},
        )
        hs = self.hierarchical
        ranked, _ = hs.search_tools(
            req,
            hs.searcher.embed_query(req.query),
            skill_ids=list(skill_ids) if skill_ids is not None else None,
            limit=req.limit,
            threshold=req.tool_threshold,
        )
        return hs.hits(ranked, include_schemas=False)


def _validate(request: SearchRequest, rename: dict[str, str]) -> SearchRequest:
    """Validate, naming fields as the calling method's parameters are named."""
    try:
        return validate(request)
    except QueryError as exc:
        if exc.field in rename:
            raise QueryError(rename[exc.field], exc.message) from None
        raise
