"""Engine: wires a store, an embedder and the searcher. Every adapter (CLI, HTTP, MCP) calls it.

The engine is synchronous; async edges call it through a worker thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolscout.embed.base import Embedder, open_embedder
from toolscout.embed.batching import QueryBatcher
from toolscout.embed.cache import CachedEmbedder
from toolscout.embed.querycache import QueryCache
from toolscout.enrich.base import Enricher
from toolscout.enrich.factory import open_enricher
from toolscout.enrich.ops import EnrichmentOps
from toolscout.enrich.pipeline import EnrichmentPipeline
from toolscout.errors import QueryError
from toolscout.ingest.sources import Loaded
from toolscout.ingest.synclog import Inventory, inventory
from toolscout.models import (
    Filters,
    IndexReport,
    ItemType,
    Problem,
    SearchHit,
    SearchMode,
    SearchResult,
    Tool,
)
from toolscout.search.document import DOCUMENT_VERSION, embed_text, lexical_fields
from toolscout.search.explain import Explanation, explain
from toolscout.search.hybrid import DEFAULT_FIELD_WEIGHTS, HybridSearcher, SearchConfig, check_query
from toolscout.search.results import ResultCache
from toolscout.search.text import ANALYZER_VERSION
from toolscout.skills.ops import SkillOps
from toolscout.store.base import IndexEntry, IndexIdentity, Store, open_store

log = logging.getLogger("toolscout")

Progress = Callable[[int, int], None]
EMBED_CHUNK = 256
#: A write of at least this many tools that also rewrites half the index is a bulk load.
BULK_MIN = 2000
MAX_LIMIT = 50


@dataclass(frozen=True)
class Prepared:
    """A tool with the derived text the store needs."""

    tool: Tool
    fields: dict[str, str]
    text: str
    text_hash: str


def input_hash(tool: Tool, enrichment: dict[str, str] | None = None) -> str:
    """Hash of every input of a tool's fields and vector, stored as its ``text_hash``.

    Hashing the inputs (content hash, server, category, source, enrichment, and the versions of
    the code that derives text) rather than the derived text lets a sync tell an unchanged tool
    without analysing its text: a no-change sync of 10k tools is then bound by reading, not by
    tokenising. ``source`` is included so a tool that moved between sources is rewritten with
    its new source (otherwise pruning the old source would delete it).
    """
    import hashlib
    import json

    payload = [
        DOCUMENT_VERSION,
        ANALYZER_VERSION,
        tool.content_hash,
        tool.server,
        tool.category,
        tool.source,
        sorted((enrichment or {}).items()),
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def prepare(tool: Tool, enrichment: dict[str, str] | None = None) -> Prepared:
    fields = lexical_fields(tool, enrichment)
    text = embed_text(tool, enrichment)
    return Prepared(tool, fields, text, input_hash(tool, enrichment))


class Engine(EnrichmentOps, SkillOps):
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
    ) -> None:
        self.store = store
        self.embedder = embedder
        store.bind(IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION))
        self.searcher = HybridSearcher(store, embedder, config)
        #: Finished searches by request, dropped on any index change (None: off).
        self.result_cache: ResultCache[Any] | None = (
            ResultCache(result_cache_size, store.data_version) if result_cache_size > 0 else None
        )
        self.enrichment = (
            EnrichmentPipeline(store, enricher, max_age_days=enrich_max_age_days)
            if enricher is not None
            else None
        )

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
            engine = cls(
                store,
                embedder,
                config=config,
                enricher=open_enricher(s),
                enrich_max_age_days=s.enrich_max_age_days,
                result_cache_size=s.result_cache_size,
            )
            engine.configure_skills(s)
            return engine
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

        With ``prune``, tools of each loaded source that the source no longer lists are deleted.
        Raises:
            StoreError, EmbedError. Nothing already indexed is lost on error: each chunk of
            writes is one transaction.
        """
        report = IndexReport()
        tools: dict[str, Tool] = {}
        sources: set[str] = set()
        for loaded in loads:
            sources.add(loaded.source)
            report.skipped.extend(loaded.problems)
            for tool in loaded.tools:
                if tool.id in tools:
                    report.skipped.append(
                        Problem(loaded.source, "id", f"duplicate id {tool.id!r}; kept the first")
                    )
                    continue
                tools[tool.id] = tool
        existing = self.store.hashes()
        dropped: set[str] = set()
        if prune and sources:
            dropped = set(self.store.hashes(Filters(sources=tuple(sorted(sources))))) - set(tools)
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
        self._write(todo, report, progress)
        lost: set[str] = set()  # skills whose tools were deleted: their centroids change
        if prune and sources:
            gone = sorted(dropped)  # read before the writes; the writes only touch ``tools``
            lost = self._skills_of(gone)
            report.deleted = self.store.delete(gone)
        self._skills_after_index([p.tool.id for p in todo], lost)
        return report

    def _write(
        self, todo: Sequence[Prepared], report: IndexReport, progress: Progress | None
    ) -> None:
        total = len(todo)
        if progress:
            progress(0, total)
        # Longest texts together: batches pad less (the model sorts again inside a chunk).
        ordered = sorted(todo, key=lambda p: len(p.text))
        # A store that can defer index upkeep to one rebuild (PostgreSQL's HNSW graph, 2x
        # faster for a 10k sync: docs/BENCHMARKS.md section 7) gets to for big rewrites.
        bulk: Callable[[], AbstractContextManager[None]] | None = getattr(self.store, "bulk", None)
        big = bulk is not None and total >= BULK_MIN and total * 2 >= self.store.count()
        with bulk() if bulk is not None and big else nullcontext():
            for start in range(0, total, EMBED_CHUNK):
                chunk = ordered[start : start + EMBED_CHUNK]
                vectors = self.embedder.embed([p.text for p in chunk])
                report.embedded += len(chunk)
                self.store.upsert(
                    [
                        IndexEntry(p.tool, p.fields, vectors[i], p.text_hash)
                        for i, p in enumerate(chunk)
                    ]
                )
                if progress:
                    progress(min(start + EMBED_CHUNK, total), total)

    def delete(self, ids: Sequence[str]) -> int:
        """Raises: StoreError."""
        lost = self._skills_of(ids)
        removed = self.store.delete(ids)
        self._skills_after_index([], lost)
        return removed

    # -- search -----------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        mode: SearchMode | str = SearchMode.HYBRID,
        limit: int = 10,
        servers: Sequence[str] | None = None,
        sources: Sequence[str] | None = None,
        item_types: Sequence[ItemType | str] | None = None,
        filters: Filters | None = None,
    ) -> SearchResult:
        """Search the index.

        Raises:
            QueryError: empty/long query, limit outside 1..50, unknown mode or item type.
        """
        check_query(query)
        mode = _parse_mode(mode)
        if not 1 <= limit <= MAX_LIMIT:
            raise QueryError("limit", f"must be between 1 and {MAX_LIMIT}, got {limit}")
        if filters is None:
            filters = Filters(
                servers=tuple(servers) if servers else None,
                sources=tuple(sources) if sources else None,
                item_types=tuple(_parse_item_type(t) for t in item_types) if item_types else None,
            )
        t0 = time.perf_counter()
        # The ranking configuration is part of the key: callers may swap it at run time.
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

    def query_cache_stats(self) -> dict[str, int] | None:
        """Hits, misses and entries of the query-vector cache, or None when it is off."""
        stats = (
            getattr(self.embedder, "stats", None) if isinstance(self.embedder, QueryCache) else None
        )
        return stats() if callable(stats) else None

    def result_cache_stats(self) -> dict[str, int] | None:
        """Hits, misses and entries of the result cache, or None when it is off."""
        return self.result_cache.stats() if self.result_cache is not None else None

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


def _query_encoder(embedder: Embedder) -> str | None:
    """``int8`` or ``exact`` for the local model (through its wrappers), None otherwise."""
    inner: object = embedder
    while inner is not None:
        found = getattr(inner, "query_encoder", None)
        if isinstance(found, str):
            return found
        inner = getattr(inner, "inner", None)
    return None


def _parse_mode(mode: SearchMode | str) -> SearchMode:
    try:
        return SearchMode(mode)
    except ValueError:
        raise QueryError("mode", f"must be one of bm25, vector, hybrid; got {mode!r}") from None


def _parse_item_type(value: ItemType | str) -> ItemType:
    try:
        return ItemType(value)
    except ValueError:
        raise QueryError(
            "item_type", f"must be one of tool, prompt, resource; got {value!r}"
        ) from None
