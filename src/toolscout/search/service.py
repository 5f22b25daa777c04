"""SearchService: every search the engine answers, with the result cache in front.

The engine builds one and holds it. ``find`` (strategy direct, hierarchical or hybrid) is the
one search, in two steps a server may run apart: :meth:`SearchService.lookup` validates the
request once, reads the index state once (data version and tool count) and looks the answer up
in the result cache once; :meth:`SearchService.answer` runs the strategy at that state when the
cache had nothing. The two single-stage calls (skills alone, tools of given skills alone) serve
the contract's stage routes. Results are cached by validated request and dropped whenever the
store's data version moves (any write, from any process).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

from toolscout.errors import QueryError
from toolscout.models import ItemType, SearchRequest, SearchResult, SkillMatch, ToolHit
from toolscout.search.hierarchical import HierarchicalSearcher
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.request import validate
from toolscout.search.results import ResultCache
from toolscout.store.base import IndexState, Store


@dataclass(frozen=True)
class Lookup:
    """A request validated at the door, the index state it is answered at, its result-cache
    key, and the cached answer when there is one."""

    request: SearchRequest
    state: IndexState
    key: Hashable
    cached: SearchResult | None


class SearchService:
    """The searches of one engine (see the module docstring)."""

    def __init__(self, store: Store, searcher: HybridSearcher, *, cache_size: int) -> None:
        self.store = store
        self.searcher = searcher
        self.hierarchical = HierarchicalSearcher(store, searcher)
        #: Finished searches by request, dropped on any index change (None: off).
        self.result_cache: ResultCache[SearchResult] | None = (
            ResultCache(cache_size) if cache_size > 0 else None
        )

    # -- the contract's search ----------------------------------------------------------------
    def find(self, request: SearchRequest) -> SearchResult:
        """The one search (strategies direct, hierarchical, hybrid), per the search contract:
        :meth:`lookup`, then :meth:`answer`.

        Raises:
            QueryError: naming the invalid field (EmptyQuery for an empty query).
        """
        return self.answer(self.lookup(request))

    def lookup(self, request: SearchRequest) -> Lookup:
        """Validate ``request``, read the index state and look the answer up in the result
        cache (no search runs). Servers call this first, so repeated requests never queue
        behind new ones.

        Raises:
            QueryError: naming the invalid field. StoreError.
        """
        req = validate(request)
        state = self.store.state()
        # The ranking configuration is part of the key: callers may swap it at run time.
        key = ("find", req, self.searcher.config, self.hierarchical.safety_net)
        cache = self.result_cache
        hit = cache.lookup(key, state.version) if cache is not None else None
        cached = None if hit is None else replace(hit, metadata={**hit.metadata, "cached": True})
        return Lookup(req, state, key, cached)

    def answer(self, looked: Lookup) -> SearchResult:
        """The cached answer of a :meth:`lookup`, else its search run at its index state.

        Raises:
            StoreError, EmbedError.
        """
        if looked.cached is not None:
            return looked.cached
        result = self.hierarchical.run(looked.request, looked.state)
        if self.result_cache is not None:
            kept = replace(result, metadata=dict(result.metadata))
            self.result_cache.store(looked.key, looked.state.version, kept)
        return result

    # -- single stages ----------------------------------------------------------------------------
    def match_skills(
        self, query: str, *, limit: int = 5, threshold: float = 0.4, coverage: float = 1.0
    ) -> list[SkillMatch]:
        """Stage 1 alone: active skills fitting ``query``, best first; ``coverage`` < 1 stops
        once they hold the request's tool with that probability (as a hierarchical search does).

        Raises:
            QueryError: empty/long query, limit, threshold or coverage out of range.
        """
        req = _validate(
            SearchRequest(
                query, skill_limit=limit, skill_threshold=threshold, skill_coverage=coverage
            ),
            {"skill_limit": "limit", "skill_threshold": "threshold", "skill_coverage": "coverage"},
        )
        hs = self.hierarchical
        vectors = hs.searcher.embed_query(req.query)
        return hs.stage1.match(
            vectors, self.store.state(), limit=limit, threshold=threshold, coverage=coverage
        )

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
            self.store.state(),
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
