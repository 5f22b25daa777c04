"""The skills part of :class:`~toolscout.engine.Engine` (a mixin, so engine.py stays small).

These are the calls every edge makes for skills and hierarchical search: ``find``,
``match_skills``, ``search_in_skills``, ``skills``, ``suggestions`` and ``classify``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

from toolscout.embed.base import Embedder
from toolscout.enrich.llm import LLM, open_llm
from toolscout.errors import QueryError
from toolscout.models import (
    ClassifyProgress,
    ClassifyReport,
    HierarchicalRequest,
    HierarchicalResult,
    ItemType,
    SkillMatch,
    ToolHit,
)
from toolscout.search.hierarchical import validate
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.results import ResultCache
from toolscout.skills.catalog import SkillCatalog
from toolscout.skills.manager import SkillManager
from toolscout.skills.suggestions import SuggestionQueue
from toolscout.store.base import Store


class SkillOps:
    """Mixed into Engine; needs ``store``, ``embedder`` and ``searcher`` attributes."""

    store: Store
    embedder: Embedder
    searcher: HybridSearcher
    result_cache: ResultCache[Any] | None = None
    _skill_manager: SkillManager | None = None
    skill_llm: LLM | None = None
    skills_starter: bool = True
    classify_concurrency: int = 4

    def configure_skills(self, settings: Any) -> None:
        """Take the LLM classifier and starter-catalog settings from
        :class:`~toolscout.config.Settings`. Raises: ConfigError."""
        self.skill_llm = open_llm(settings)
        self.skills_starter = bool(getattr(settings, "skills_starter", True))
        self.classify_concurrency = int(getattr(settings, "llm_concurrency", 4))
        self._skill_manager = None

    @property
    def skill_manager(self) -> SkillManager:
        """Built on first use (loads the starter catalog into an index with no skills)."""
        if self._skill_manager is None:
            self._skill_manager = SkillManager(
                self.store,
                self.embedder,
                self.searcher,
                llm=self.skill_llm,
                starter=self.skills_starter,
                concurrency=self.classify_concurrency,
            )
        return self._skill_manager

    @property
    def skills(self) -> SkillCatalog:
        """The skill catalog (create/get/update/list/deactivate/reactivate/import/export)."""
        return self.skill_manager.catalog

    @property
    def suggestions(self) -> SuggestionQueue:
        """Skills proposed by the LLM classifier (pending/approve/reject)."""
        return self.skill_manager.suggestions

    def find(self, request: HierarchicalRequest) -> HierarchicalResult:
        """Hierarchical search per the search contract (strategies hierarchical/direct/hybrid).

        Raises:
            QueryError: naming the invalid field (EmptyQuery for an empty query).
        """
        req = validate(request)
        hs = self.skill_manager.hierarchical
        key = self._find_key(req)
        hit, version = self._cached(key)
        if hit is not None:
            return hit
        result = hs.find(req)
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
        hs = self.skill_manager.hierarchical
        # The ranking configuration is part of the key: callers may swap it at run time.
        return ("find", req, hs.searcher.config, hs.safety_net)

    def _cached(self, key: Hashable) -> tuple[HierarchicalResult | None, Hashable | None]:
        if self.result_cache is None:
            return None, None
        cached, version = self.result_cache.lookup(key)
        if cached is None:
            return None, version
        hit: HierarchicalResult = cached
        return replace(hit, metadata={**hit.metadata, "cached": True}), version

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
        hs = self.skill_manager.hierarchical
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
        hs = self.skill_manager.hierarchical
        ranked, _ = hs.search_tools(
            req.query,
            hs.searcher.embed_query(req.query),
            skill_ids=list(skill_ids) if skill_ids is not None else None,
            item_type=req.item_type,
            limit=req.limit,
            threshold=req.tool_threshold,
        )
        return hs.hits(ranked, include_schemas=False)

    def classify(
        self,
        *,
        all: bool = False,
        concurrency: int = 4,
        progress: Callable[[ClassifyProgress], None] | None = None,
    ) -> ClassifyReport:
        """Classify unclassified, failed or changed tools (every tool with ``all``).

        Raises:
            StoreError, EmbedError.
        """
        return self.skill_manager.classify_tools(
            None, force=all, concurrency=concurrency, progress=progress
        )

    def _skills_after_index(self, changed: Sequence[str], removed_skills: set[str]) -> None:
        """Classify new/changed tools and refresh centroids of skills that lost tools."""
        manager = self.skill_manager
        if changed:
            manager.classify_tools(changed)
        manager.forget(removed_skills)

    def _skills_of(self, tool_ids: Sequence[str]) -> set[str]:
        """Skills the given tools belong to (read before deleting them)."""
        if self._skill_manager is None and self.store.get_meta("skills_seeded") is None:
            return set()
        return {a.skill_id for rows in self.store.assignments(tool_ids).values() for a in rows}


def _validate(request: HierarchicalRequest, rename: dict[str, str]) -> HierarchicalRequest:
    """Validate, naming fields as the calling method's parameters are named."""
    try:
        return validate(request)
    except QueryError as exc:
        if exc.field in rename:
            raise QueryError(rename[exc.field], exc.message) from None
        raise
