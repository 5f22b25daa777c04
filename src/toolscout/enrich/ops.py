"""The engine's enrichment operations (issue 6), kept in their own module as a mixin of
:class:`~toolscout.engine.Engine` so the engine module stays small.

The HTTP, MCP and CLI edges call these methods; each is one pass of the pipeline plus a
re-index of the tools whose text changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolscout.enrich.base import group_key
from toolscout.enrich.pipeline import EnrichmentPipeline, Fields, iter_tools
from toolscout.errors import QueryError
from toolscout.models import Filters, IndexReport, Tool

if TYPE_CHECKING:
    from toolscout.engine import Prepared
    from toolscout.store.base import Store

Progress = Callable[[int, int], None]
log = logging.getLogger("toolscout.enrich")


class EnrichmentOps:
    """Mixed into Engine: needs ``store``, ``enrichment`` and ``_write``."""

    store: Store
    enrichment: EnrichmentPipeline | None

    def _write(
        self, todo: Sequence[Prepared], report: IndexReport, progress: Progress | None
    ) -> None:  # provided by Engine
        raise NotImplementedError

    def enrichment_fields(
        self, tools: dict[str, Tool], dropped: set[str]
    ) -> tuple[dict[str, Fields], list[Tool]]:
        """Enrichment for ``tools`` plus the other indexed tools of their servers.

        Returns ``({id: fields}, context tools)``; context tools are indexed tools of the same
        servers that were not loaded (their profile may have changed). Without an enricher,
        every tool maps to None and there is no context.

        Raises: StoreError."""
        if self.enrichment is None:
            return {}, []
        context = self.enrichment.context(tools, dropped)
        fields = self.enrichment.fields([*tools.values(), *context])
        report = self.enrichment.last_report
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
        from toolscout.engine import prepare

        pipeline = self._require()
        fields = pipeline.fields(tools, force=force, progress=progress)
        existing = self.store.hashes(Filters(tool_ids=tuple(t.id for t in tools)))
        todo: list[Prepared] = []
        for tool in tools:
            prepared = prepare(tool, fields.get(tool.id))
            old = existing.get(tool.id)
            if old is None or old[1] != prepared.text_hash:
                todo.append(prepared)
        index_report = IndexReport(updated=len(todo))
        self._write(todo, index_report, None)
        return {**pipeline.last_report.to_dict(), "reindexed": len(todo)}

    def _require(self) -> EnrichmentPipeline:
        if self.enrichment is None:
            raise QueryError(
                "enrich", "enrichment is off (enrich = none); set TOOLSCOUT_ENRICH=offline or llm"
            )
        return self.enrichment

    def enrich_server(self, server: str, force: bool = True) -> dict[str, Any]:
        """(Re)make one server's profile and its tools' enrichment, then re-index them.

        Raises:
            QueryError: enrichment is off, or no indexed tool belongs to ``server``.
            StoreError, EmbedError.
        """
        tools = list(iter_tools(self.store, Filters(servers=(server,))))
        if not tools:
            tools = [t for t in iter_tools(self.store) if group_key(t) == server]
        if not tools:
            raise QueryError("server", f"no indexed tool belongs to {server!r}")
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
        if self.enrichment is None:
            return {"enricher": None, "stored": {}, "llm_tokens_stored": 0}
        return self.enrichment.stats()
