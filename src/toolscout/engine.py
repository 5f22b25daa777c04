"""Engine: builds and holds the services below; every adapter (CLI, HTTP, MCP) calls it.

* :class:`~toolscout.indexing.IndexWriter` - prepare, hash, embed in batches, upsert;
* :class:`~toolscout.indexruns.IndexRuns` - index and delete runs: the writer lock, the writes,
  the skills they touch;
* :class:`~toolscout.search.service.SearchService` - every search, behind the result cache;
* :class:`~toolscout.skills.service.SkillService` - catalog, classifiers, suggestions;
* :class:`~toolscout.enrich.service.EnrichmentService` - enrichment and re-indexing;
* :class:`~toolscout.feedback.service.FeedbackService` - recorded calls and what ranking
  learns from them.

``Engine.open`` puts them together from settings (:mod:`toolscout.wiring`). The engine is
synchronous; async edges call it through a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import anyio.to_thread

from toolscout.embed.base import Embedder
from toolscout.embed.querycache import QueryCache
from toolscout.embed.stack import query_encoder
from toolscout.enrich.base import Enricher
from toolscout.enrich.llm import LLM
from toolscout.enrich.pipeline import EnrichmentPipeline
from toolscout.enrich.service import EnrichmentService
from toolscout.errors import EmptyIndex
from toolscout.feedback.service import FeedbackConfig, FeedbackService
from toolscout.indexing import IndexWriter, Prepared, input_hash, prepare
from toolscout.indexruns import IndexRuns
from toolscout.models import (
    ClassifyProgress,
    ClassifyReport,
    Filters,
    IndexReport,
    ItemType,
    Loaded,
    SearchMode,
    SearchRequest,
    SearchResult,
    SkillMatch,
    Strategy,
    Tool,
    ToolHit,
)
from toolscout.search.config import SearchConfig
from toolscout.search.explain import Explanation, explain
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.request import check_page, parse_item_type, parse_mode, parse_strategy
from toolscout.search.service import Lookup, SearchService
from toolscout.search.text import ANALYZER_VERSION
from toolscout.skills.catalog import SkillCatalog
from toolscout.skills.fits import SkillFits
from toolscout.skills.service import SkillService
from toolscout.skills.suggestions import SuggestionQueue
from toolscout.store.base import IndexIdentity, IndexState, Store
from toolscout.store.synclog import Inventory, inventory

log = logging.getLogger("toolscout")

Progress = Callable[[int, int], None]
__all__ = ["Engine", "Prepared", "input_hash", "prepare"]


class Engine:
    """The toolscout library API."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        config: SearchConfig | None = None,
        enricher: Enricher | None = None,
        enrich_max_age_days: float = 7.0,
        result_cache_size: int = 1024,
        skill_llm: LLM | None = None,
        skills_starter: bool = True,
        classify_concurrency: int = 4,
        feedback: FeedbackConfig | None = None,
    ) -> None:
        """Raises: ConfigError (the store was built with another embedder), StoreError,
        EmbedError (loading the starter catalog into a new index embeds it)."""
        self.store = store
        self._embedder = embedder
        store.bind(IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION))
        self.searcher = HybridSearcher(store, embedder, config)
        self.writer = IndexWriter(store, embedder)
        self.search_service = SearchService(store, self.searcher, cache_size=result_cache_size)
        #: Recorded calls (record/log/clear/summary); its memory boosts the fused ranking.
        self.feedback = FeedbackService(store, embedder, feedback)
        self.searcher.boost = self.feedback.memory
        pipeline = (
            EnrichmentPipeline(store, enricher, max_age_days=enrich_max_age_days)
            if enricher is not None
            else None
        )
        #: Enrichment of indexed tools (enrich_server/enrich_sync/enrichment_status/
        #: enrichment_stats/enrichment_fields).
        self.enrichment_service = EnrichmentService(store, pipeline, self.writer)
        #: Classification calls at once (the ``llm_concurrency`` setting).
        self.classify_concurrency = classify_concurrency
        self.skill_service = SkillService(
            store,
            embedder,
            llm=skill_llm,
            starter=skills_starter,
            concurrency=classify_concurrency,
        )
        #: The skill catalog (create/get/update/list/deactivate/reactivate/import/export).
        self.skills: SkillCatalog = self.skill_service.catalog
        #: Skills proposed by the LLM classifier (pending/approve/reject).
        self.suggestions: SuggestionQueue = self.skill_service.suggestions
        # The one explicit point where opening an index may write: a new index gets the
        # starter skill catalog (once; see SkillService.seed).
        self.skill_service.seed()
        #: Index and delete runs (the writer lock, the writes, the skills they touch).
        self.runs = IndexRuns(store, self.writer, self.skill_service, self.enrichment_service)
        #: The skill constants served (status/refit/use), refit on the catalog for a model the
        #: packaged ones were not fitted for.
        self.skill_fits = SkillFits(
            store, self.skill_service, self.search_service.hierarchical.stage1
        )

    @property
    def embedder(self) -> Embedder:
        """The embedder tool texts and queries go through."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        # Swapping it (a counting or caching wrapper) applies to what is indexed from now on.
        self._embedder = embedder
        self.writer.embedder = embedder

    @classmethod
    def open(cls, settings: Any = None, **overrides: Any) -> Engine:
        """Open the engine a :class:`~toolscout.config.Settings` describes.

        Raises:
            ConfigError, StoreError, EmbedError.
        """
        from toolscout.wiring import open_engine

        return open_engine(cls, settings, overrides)

    # -- indexing ---------------------------------------------------------------------------
    def index(
        self,
        loads: Iterable[Loaded],
        *,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IndexReport:
        """Add new tools, update changed ones, skip unchanged ones (no embedding for those);
        with ``prune``, delete what a loaded source no longer lists (:meth:`IndexRuns.index`).

        Raises:
            StoreError, EmbedError. Nothing already indexed is lost on error: each chunk of
            writes is one transaction, and the next run finishes what a killed one started.
        """
        return self.runs.index(loads, prune=prune, progress=progress)

    def delete(self, ids: Sequence[str]) -> int:
        """Raises: StoreError."""
        return self.runs.delete(ids)

    # -- search -----------------------------------------------------------------------------
    def find(self, request: SearchRequest) -> SearchResult:
        """The one search: ``request.strategy`` is direct (every tool), hierarchical (skills
        first, then the tools inside them) or hybrid (both). Every door calls this.

        Raises:
            QueryError: naming the invalid field (EmptyQuery for an empty query).
        """
        return self.search_service.find(request)

    def lookup(self, request: SearchRequest) -> Lookup:
        """The first half of ``find``: the request validated, the index state read and the
        result cache asked (``Lookup.cached``), no search run. A
        :class:`~toolscout.api.gate.SearchGate` calls this before queueing, then
        :meth:`answer` in a slot.

        Raises:
            QueryError: naming the invalid field. StoreError.
        """
        return self.search_service.lookup(request)

    def answer(self, looked: Lookup) -> SearchResult:
        """The second half of ``find``: the cached answer, else the search run at the
        looked-up index state.

        Raises:
            StoreError, EmbedError.
        """
        return self.search_service.answer(looked)

    def search(
        self,
        query: str,
        *,
        strategy: Strategy | str = Strategy.DIRECT,
        mode: SearchMode | str = SearchMode.HYBRID,
        limit: int = 5,
        min_score: float = 0.0,
        item_type: ItemType | str | None = None,
        servers: Sequence[str] | None = None,
        sources: Sequence[str] | None = None,
        include_schemas: bool = False,
    ) -> SearchResult:
        """``find`` with keyword arguments: by default every tool (``direct``), no threshold
        but ``min_score``.

        Raises:
            QueryError: naming the invalid field.
        """
        return self.find(
            SearchRequest(
                query,
                strategy=parse_strategy(strategy),
                item_type=parse_item_type(item_type) if item_type is not None else None,
                limit=limit,
                min_score=min_score,
                mode=parse_mode(mode),
                tool_threshold=0.0,
                include_schemas=include_schemas,
                servers=tuple(servers) if servers else None,
                sources=tuple(sources) if sources else None,
            )
        )

    def match_skills(
        self, query: str, *, limit: int = 5, threshold: float = 0.4
    ) -> list[SkillMatch]:
        """Stage 1 alone: active skills fitting ``query``, best first.

        Raises:
            QueryError: empty/long query, limit or threshold out of range.
        """
        return self.search_service.match_skills(query, limit=limit, threshold=threshold)

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
        return self.search_service.search_in_skills(
            query, skill_ids=skill_ids, item_type=item_type, limit=limit, threshold=threshold
        )

    def explain(
        self,
        query: str,
        *,
        strategy: Strategy | str = Strategy.DIRECT,
        mode: SearchMode | str = SearchMode.HYBRID,
        limit: int = 5,
        server: str | None = None,
        item_type: ItemType | str | None = None,
    ) -> Explanation:
        """A search with the evidence for every hit (see :mod:`toolscout.search.explain`).

        Raises:
            QueryError: naming the invalid field. StoreError, EmbedError.
        """
        return explain(
            self,
            query,
            strategy=strategy,
            mode=mode,
            limit=limit,
            server=server,
            item_type=item_type,
        )

    def state(self) -> IndexState:
        """The index's data version and tool count as a search reads them (one round trip on
        a server); a cache of anything derived from the index keys on the version.

        Raises: StoreError."""
        return self.store.state()

    def ensure_indexed(self) -> None:
        """Raises: EmptyIndex when the index holds no tools (every search would be empty)."""
        if self.store.count() == 0:
            raise EmptyIndex(self.store.url)

    # -- tools ------------------------------------------------------------------------------
    def get_tool(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound."""
        return self.store.tools.get(tool_id)

    def list_tools(
        self,
        *,
        servers: Sequence[str] | None = None,
        skill_ids: Sequence[str] | None = None,
        item_types: Sequence[ItemType | str] | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> tuple[list[Tool], int]:
        """One page of tools (ordered by id) and how many match in all.

        Raises:
            QueryError: offset below 0, limit outside 1..500, unknown item type.
        """
        check_page(offset, limit)
        filters = Filters(
            servers=tuple(servers) if servers else None,
            skill_ids=tuple(skill_ids) if skill_ids else None,
            item_types=tuple(parse_item_type(t) for t in item_types) if item_types else None,
        )
        tools = self.store.tools.list_tools(filters, offset=offset, limit=limit)
        return tools, self.store.count(filters)

    def inventory(self) -> Inventory:
        """Tools per server and per source, and each source's last sync.

        Raises:
            StoreError.
        """
        return inventory(self.store)

    # -- skills -----------------------------------------------------------------------------
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
        report = self.skill_service.classify_tools(
            None, force=all, concurrency=concurrency, progress=progress
        )
        self.skill_service.refit()
        return report

    # -- enrichment -------------------------------------------------------------------------
    @property
    def enrichment(self) -> EnrichmentPipeline | None:
        """The enrichment pipeline, or None when enrichment is off."""
        return self.enrichment_service.pipeline

    @enrichment.setter
    def enrichment(self, pipeline: EnrichmentPipeline | None) -> None:
        self.enrichment_service.pipeline = pipeline

    # -- service ----------------------------------------------------------------------------
    def query_cache_stats(self) -> dict[str, int] | None:
        """Hits, misses and entries of the query-vector cache, or None when it is off."""
        return self.embedder.stats() if isinstance(self.embedder, QueryCache) else None

    def result_cache_stats(self) -> dict[str, int] | None:
        """Hits, misses and entries of the result cache, or None when it is off."""
        cache = self.search_service.result_cache
        return cache.stats() if cache is not None else None

    def info(self) -> dict[str, Any]:
        """Counts, model and store location."""
        ident = self.store.identity()
        return {
            "store": self.store.url,
            "tools": self.store.count(),
            "by_item_type": self.store.tools.counts_by("item_type"),
            "servers": len(self.store.tools.counts_by("server")),
            "sources": self.store.tools.counts_by("source"),
            "embedder": ident.embedder if ident else None,
            "dim": ident.dim if ident else None,
            "analyzer": ident.analyzer if ident else None,
            "query_encoder": query_encoder(self.embedder),
            "fusion": self.searcher.config.fusion,
            "skill_scores": self.skill_fits.status,
            "feedback": self.feedback.summary(),
        }

    def close(self) -> None:
        self.searcher.close()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async edges: the same calls in a worker thread (one code path, no async twins) -------
    async def asearch(self, query: str, **options: Any) -> SearchResult:
        """:meth:`search` in a worker thread, for event loops. Raises: as :meth:`search`."""
        return await anyio.to_thread.run_sync(partial(self.search, query, **options))

    async def afind(self, request: SearchRequest) -> SearchResult:
        """:meth:`find` in a worker thread, for event loops. Raises: as :meth:`find`."""
        return await anyio.to_thread.run_sync(self.find, request)
