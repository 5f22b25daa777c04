"""Engine: builds and holds the services below; every adapter (CLI, HTTP, MCP) calls it.

* :class:`~toolscout.indexing.IndexWriter` - prepare, hash, embed in batches, upsert;
* :class:`~toolscout.search.service.SearchService` - every search, behind the result cache;
* :class:`~toolscout.skills.service.SkillService` - catalog, classifiers, suggestions;
* :class:`~toolscout.enrich.service.EnrichmentService` - enrichment and re-indexing.

The engine is synchronous; async edges call it through a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread

from toolscout.embed.base import Embedder, open_embedder
from toolscout.embed.batching import QueryBatcher
from toolscout.embed.cache import CachedEmbedder
from toolscout.embed.querycache import QueryCache
from toolscout.enrich.base import Enricher
from toolscout.enrich.factory import open_enricher
from toolscout.enrich.llm import LLM, open_llm
from toolscout.enrich.pipeline import EnrichmentPipeline, Fields
from toolscout.enrich.service import EnrichmentService
from toolscout.errors import EmptyIndex, QueryError
from toolscout.indexing import IndexWriter, Prepared, input_hash, keep_unreadable, prepare
from toolscout.ingest.sources import Loaded
from toolscout.ingest.synclog import Inventory, inventory
from toolscout.models import (
    ClassifyProgress,
    ClassifyReport,
    Filters,
    IndexReport,
    ItemType,
    Problem,
    SearchMode,
    SearchRequest,
    SearchResult,
    SkillMatch,
    Strategy,
    Tool,
    ToolHit,
)
from toolscout.search.explain import Explanation, explain
from toolscout.search.hybrid import DEFAULT_FIELD_WEIGHTS, HybridSearcher, SearchConfig
from toolscout.search.service import SearchService
from toolscout.search.text import ANALYZER_VERSION
from toolscout.skills.catalog import SkillCatalog
from toolscout.skills.service import SkillService
from toolscout.skills.suggestions import SuggestionQueue
from toolscout.store.base import IndexIdentity, Store, open_store

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
    ) -> None:
        """Raises: ConfigError (the store was built with another embedder), StoreError,
        EmbedError (loading the starter catalog into a new index embeds it)."""
        self.store = store
        self._embedder = embedder
        store.bind(IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION))
        self.searcher = HybridSearcher(store, embedder, config)
        self.writer = IndexWriter(store, embedder)
        self.search_service = SearchService(store, self.searcher, cache_size=result_cache_size)
        pipeline = (
            EnrichmentPipeline(store, enricher, max_age_days=enrich_max_age_days)
            if enricher is not None
            else None
        )
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
        from toolscout.config import Settings, load_settings

        s: Settings = settings if settings is not None else load_settings(**overrides)
        if s.blas_threads:
            # One query's mat-vec is too small to share: waking BLAS threads (and evicting the
            # matrix from cache between them) cost ~2x at 10k tools (docs/BENCHMARKS.md §2).
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=s.blas_threads, user_api="blas")
        embedder: Embedder = open_embedder(
            s.embed_model,
            threads=s.embed_threads,
            base_url=s.embed_base_url,
            api_key=s.embed_api_key,
            dim=s.embed_dim,
            query_encoder=s.query_encoder,
            cache_dir=Path(s.cache_dir),
        )
        if s.embed_cache:
            embedder = CachedEmbedder(embedder, Path(s.cache_dir) / "vectors.sqlite")
        if s.query_batch > 1:
            embedder = QueryBatcher(embedder, s.query_batch)
        if s.query_cache_size > 0:
            embedder = QueryCache(embedder, s.query_cache_size)
        store = open_store(s.db)
        config = SearchConfig(
            fusion=s.fusion,  # type: ignore[arg-type]  # validated by Settings
            rrf_k=s.rrf_k,
            lexical_weight=s.lexical_weight,
            vector_weight=s.vector_weight,
            field_weights=tuple(s.field_weights) if s.field_weights else DEFAULT_FIELD_WEIGHTS,
        )
        try:
            return cls(
                store,
                embedder,
                config=config,
                enricher=open_enricher(s),
                enrich_max_age_days=s.enrich_max_age_days,
                result_cache_size=s.result_cache_size,
                skill_llm=open_llm(s),
                skills_starter=s.skills_starter,
                classify_concurrency=s.llm_concurrency,
            )
        except Exception:
            store.close()
            raise

    # -- indexing ---------------------------------------------------------------------------
    def index(
        self,
        loads: Iterable[Loaded],
        *,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IndexReport:
        """Add new tools, update changed ones, skip unchanged ones (no embedding for those).

        With ``prune``, tools of each loaded source that the source no longer lists are deleted,
        except when some of the source's entries could not be read (:func:`keep_unreadable`).
        Concurrent runs on one index take turns (``Store.writer_lock``), so each reports only
        what it changed.

        Raises:
            StoreError, EmbedError. Nothing already indexed is lost on error: each chunk of
            writes is one transaction, and the next run finishes what a killed one started.
        """
        loads = list(loads)
        with self.store.writer_lock():
            return self._index(loads, prune, progress)

    def _index(
        self, loads: Sequence[Loaded], prune: bool, progress: Progress | None
    ) -> IndexReport:
        report = IndexReport()
        tools: dict[str, Tool] = {}
        sources: set[str] = set()
        damaged: set[str] = set()  # sources with entries that could not be read
        for loaded in loads:
            sources.add(loaded.source)
            if any(not p.deliberate for p in loaded.problems):
                damaged.add(loaded.source)
            report.skipped.extend(loaded.problems)
            for tool in loaded.tools:
                if tool.id in tools:
                    report.skipped.append(
                        Problem(loaded.source, "id", f"duplicate id {tool.id!r}; kept the first")
                    )
                    continue
                tools[tool.id] = tool
        existing = self.store.hashes()
        owned = (
            set(self.store.hashes(Filters(sources=tuple(sorted(sources))))) if sources else set()
        )
        dropped = owned - set(tools) if prune else set()
        dropped = keep_unreadable(self.store, dropped, damaged, report)
        for tool_id in sorted(set(tools).intersection(existing) - owned):
            report.warnings.append(
                Problem(
                    tools[tool_id].source or "",
                    "id",
                    f"{tool_id!r} was indexed from another source; this one replaces it "
                    "(give --server or explicit ids to keep both)",
                )
            )
        extra, context = self.enrichment_fields(tools, dropped)
        todo: list[Prepared] = []
        for tool in tools.values():
            old = existing.get(tool.id)
            if old is None:
                report.added += 1
            elif old[1] != input_hash(tool, extra.get(tool.id)):
                report.updated += 1
            else:
                report.unchanged += 1
                continue  # no text analysis for unchanged tools: see input_hash
            todo.append(prepare(tool, extra.get(tool.id)))
        for tool in context:  # same-server tools whose server profile changed
            if existing.get(tool.id, ("", ""))[1] != input_hash(tool, extra.get(tool.id)):
                report.updated += 1
                todo.append(prepare(tool, extra.get(tool.id)))
        self.writer.write(todo, report, progress)
        lost: set[str] = set()  # skills whose tools were deleted: their centroids change
        if prune and sources:
            gone = sorted(dropped)  # read before the writes; the writes only touch ``tools``
            lost = self.skill_service.skills_of(gone)
            report.deleted = self.store.delete(gone)
        self.skill_service.after_index([p.tool.id for p in todo], lost)
        return report

    def delete(self, ids: Sequence[str]) -> int:
        """Raises: StoreError."""
        with self.store.writer_lock():
            lost = self.skill_service.skills_of(ids)
            removed = self.store.delete(ids)
            self.skill_service.after_index([], lost)
        return removed

    # -- search -----------------------------------------------------------------------------
    def find(self, request: SearchRequest) -> SearchResult:
        """The one search: ``request.strategy`` is direct (every tool), hierarchical (skills
        first, then the tools inside them) or hybrid (both). Every door calls this.

        Raises:
            QueryError: naming the invalid field (EmptyQuery for an empty query).
        """
        return self.search_service.find(request)

    def cached_find(self, request: SearchRequest) -> SearchResult | None:
        """The answer ``find`` would give from the result cache alone, or None (no search
        runs); a :class:`~toolscout.search.gate.SearchGate` asks this before queueing.

        Raises:
            QueryError: naming the invalid field.
        """
        return self.search_service.cached_find(request)

    def search(
        self,
        query: str,
        *,
        strategy: Strategy | str = Strategy.DIRECT,
        mode: SearchMode | str = SearchMode.HYBRID,
        limit: int = 10,
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
                strategy=strategy,
                item_type=item_type,
                limit=limit,
                min_score=min_score,
                mode=mode,
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
        strategy: str = "hierarchical",
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
            self, query, strategy=strategy, mode=mode, limit=limit, server=server,
            item_type=item_type,
        )  # fmt: skip

    def ensure_indexed(self) -> None:
        """Raises: EmptyIndex when the index holds no tools (every search would be empty)."""
        if self.store.count() == 0:
            raise EmptyIndex(self.store.url)

    # -- tools ------------------------------------------------------------------------------
    def get_tool(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound."""
        return self.store.get(tool_id)

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
        if offset < 0:
            raise QueryError("offset", f"must be 0 or more, got {offset}")
        if not 1 <= limit <= 500:
            raise QueryError("limit", f"must be between 1 and 500, got {limit}")
        filters = Filters(
            servers=tuple(servers) if servers else None,
            skill_ids=tuple(skill_ids) if skill_ids else None,
            item_types=tuple(_parse_item_type(t) for t in item_types) if item_types else None,
        )
        tools = self.store.list_tools(filters, offset=offset, limit=limit)
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
        return self.skill_service.classify_tools(
            None, force=all, concurrency=concurrency, progress=progress
        )

    # -- enrichment -------------------------------------------------------------------------
    @property
    def enrichment(self) -> EnrichmentPipeline | None:
        """The enrichment pipeline, or None when enrichment is off."""
        return self.enrichment_service.pipeline

    @enrichment.setter
    def enrichment(self, pipeline: EnrichmentPipeline | None) -> None:
        self.enrichment_service.pipeline = pipeline

    def enrichment_fields(
        self, tools: dict[str, Tool], dropped: set[str]
    ) -> tuple[dict[str, Fields], list[Tool]]:
        """Enrichment for ``tools`` plus the other indexed tools of their servers.

        Raises: StoreError."""
        return self.enrichment_service.enrichment_fields(tools, dropped)

    def enrich_server(self, server: str, force: bool = True) -> dict[str, Any]:
        """(Re)make one server's profile and its tools' enrichment, then re-index them.

        Raises:
            QueryError: enrichment is off, or no indexed tool belongs to ``server``.
            StoreError, EmbedError.
        """
        return self.enrichment_service.enrich_server(server, force=force)

    def enrichment_status(self, server: str) -> dict[str, Any]:
        """Profile state and tool counts by state. Raises: QueryError (off), StoreError."""
        return self.enrichment_service.enrichment_status(server)

    def enrich_sync(self, progress: Progress | None = None) -> dict[str, Any]:
        """Enrich/re-index what changed. Raises: QueryError (off), StoreError, EmbedError."""
        return self.enrichment_service.enrich_sync(progress)

    def enrichment_stats(self) -> dict[str, Any]:
        """Stored enrichments by state, cache hits and LLM tokens. Raises: StoreError."""
        return self.enrichment_service.enrichment_stats()

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
            "by_item_type": self.store.counts_by("item_type"),
            "servers": len(self.store.counts_by("server")),
            "sources": self.store.counts_by("source"),
            "embedder": ident.embedder if ident else None,
            "dim": ident.dim if ident else None,
            "analyzer": ident.analyzer if ident else None,
            "query_encoder": _query_encoder(self.embedder),
            "fusion": self.searcher.config.fusion,
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


def _query_encoder(embedder: Embedder) -> str | None:
    """``int8`` or ``exact`` for the local model (through its wrappers), None otherwise."""
    inner: object = embedder
    while inner is not None:
        found = getattr(inner, "query_encoder", None)
        if isinstance(found, str):
            return found
        inner = getattr(inner, "inner", None)
    return None


def _parse_item_type(value: ItemType | str) -> ItemType:
    try:
        return ItemType(value)
    except ValueError:
        raise QueryError(
            "item_type", f"must be one of tool, prompt, resource; got {value!r}"
        ) from None
