"""EnrichmentService: the engine's enrichment operations, one object the engine holds.

The HTTP, MCP and CLI edges call these through the engine; each is one pass of the pipeline
plus a re-index (through the engine's :class:`~toolscout.indexing.IndexWriter`) of the tools
whose text changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from toolscout.enrich.base import group_key
from toolscout.enrich.pipeline import EnrichmentPipeline, Fields, iter_tools
from toolscout.errors import QueryError, ServerNotFound
from toolscout.indexing import IndexWriter, Prepared, prepare
from toolscout.models import Filters, IndexReport, Tool
from toolscout.store.base import Store

Progress = Callable[[int, int], None]
log = logging.getLogger("toolscout.enrich")


class EnrichmentService:
    """Enrichment of indexed tools; ``pipeline`` is None when enrichment is off."""

    def __init__(
        self, store: Store, pipeline: EnrichmentPipeline | None, writer: IndexWriter
    ) -> None:
        self.store = store
        self.pipeline = pipeline
        self.writer = writer

    def enrichment_fields(
        self, tools: dict[str, Tool], dropped: set[str]
    ) -> tuple[dict[str, Fields], list[Tool]]:
        """Enrichment for ``tools`` plus the other indexed tools of their servers.

        Returns ``({id: fields}, context tools)``; context tools are indexed tools of the same
        servers that were not loaded (their profile may have changed). Without an enricher,
        every tool maps to None and there is no context.

        Raises: StoreError."""
        if self.pipeline is None:
            return {}, []
        context = self.pipeline.context(tools, dropped)
        fields = self.pipeline.fields([*tools.values(), *context])
        report = self.pipeline.last_report
        if report.tools_failed or report.profiles_failed:
            log.warning(
                "enrichment failed for %d tools and %d server profiles (they are indexed with "
                "their own text; `toolscout enrich` retries them); first: %s",
                report.tools_failed,
                report.profiles_failed,
                report.failures[0] if report.failures else "-",
            )
        return fields, context

    def _refresh(
        self, tools: Sequence[Tool], *, force: bool, progress: Progress | None
    ) -> dict[str, Any]:
        """Enrich ``tools`` (forced or by change detection) and re-embed those whose text
        changed. Returns the enrichment report plus how many tools were re-indexed."""
        pipeline = self._require()
        fields = pipeline.fields(tools, force=force, progress=progress)
        existing = self.store.tools.hashes(Filters(tool_ids=tuple(t.id for t in tools)))
        todo: list[Prepared] = []
        for tool in tools:
            prepared = prepare(tool, fields.get(tool.id))
            old = existing.get(tool.id)
            if old is None or old[1] != prepared.text_hash:
                todo.append(prepared)
        index_report = IndexReport(updated=len(todo))
        self.writer.write(todo, index_report)
        return {**pipeline.last_report.to_dict(), "reindexed": len(todo)}

    def _require(self) -> EnrichmentPipeline:
        if self.pipeline is None:
            raise QueryError(
                "enrich", "enrichment is off (enrich = none); set TOOLSCOUT_ENRICH=offline or llm"
            )
        return self.pipeline

    def enrich_server(self, server: str, force: bool = True) -> dict[str, Any]:
        """(Re)make one server's profile and its tools' enrichment, then re-index them.

        Raises:
            QueryError: enrichment is off.
            ServerNotFound: no indexed tool belongs to ``server``.
            StoreError, EmbedError.
        """
        tools = list(iter_tools(self.store, Filters(servers=(server,))))
        if not tools:
            tools = [t for t in iter_tools(self.store) if group_key(t) == server]
        if not tools:
            raise ServerNotFound(server)
        return {"server": server, **self._refresh(tools, force=force, progress=None)}

    def enrichment_status(self, server: str) -> dict[str, Any]:
        """Profile state (fresh, stale, failed, missing) and tool counts by state.

        Raises: QueryError when enrichment is off; StoreError."""
        return self._require().status(server)

    def enrich_sync(self, progress: Progress | None = None) -> dict[str, Any]:
        """Detect changes over the whole index and enrich/re-index what needs it; an
        unchanged index asks the enricher nothing.

        Raises: QueryError when enrichment is off; StoreError, EmbedError."""
        tools = list(iter_tools(self.store))
        return self._refresh(tools, force=False, progress=progress)

    def enrichment_stats(self) -> dict[str, Any]:
        """Stored enrichments by state, cache hits and LLM tokens.

        Raises: StoreError."""
        if self.pipeline is None:
            return {"enricher": None, "stored": {}, "llm_tokens_stored": 0}
        return self.pipeline.stats()
