"""Enrichment as the engine uses it: tools in, the lexical/embedding extras of each tool out.

The engine calls :meth:`EnrichmentPipeline.fields` before it prepares tools for embedding, so
the text hash it compares covers the enrichment: a tool whose enrichment changed is
re-embedded, an unchanged one is not (and an unchanged re-run asks the enricher nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from toolscout.enrich.base import Enricher, group_key, merged_fields
from toolscout.enrich.cache import (
    DEFAULT_MAX_AGE_DAYS,
    MAX_REPORTED_FAILURES,
    EnrichmentCache,
    EnrichReport,
    Progress,
)
from toolscout.models import Filters, Tool
from toolscout.store.base import Store

Fields = dict[str, str] | None
PAGE = 1000


class EnrichmentPipeline:
    """Profiles + tool enrichments with change detection, for one store and one enricher."""

    def __init__(
        self,
        store: Store,
        enricher: Enricher,
        *,
        max_age_days: float = DEFAULT_MAX_AGE_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.enricher = enricher
        self.cache = EnrichmentCache(
            store.enrichments, enricher, max_age_days=max_age_days, clock=clock
        )
        self.last_report = EnrichReport()
        self.totals = EnrichReport()

    def fields(
        self,
        tools: Sequence[Tool],
        *,
        force: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, Fields]:
        """``{tool id: enrichment fields or None}``; profiles come from ``tools`` grouped by
        server (or category). Failures leave a tool with None (its original text only).

        Raises: StoreError."""
        report = EnrichReport()
        groups: dict[str, list[Tool]] = {}
        for tool in tools:
            groups.setdefault(group_key(tool), []).append(tool)
        profiles = self.cache.profiles(groups, report, force=force)
        enrichments = self.cache.tools(tools, profiles, report, force=force, progress=progress)
        self._account(report)
        return {
            t.id: merged_fields(t, enrichments.get(t.id), profiles.get(group_key(t))) for t in tools
        }

    def _account(self, report: EnrichReport) -> None:
        self.last_report = report
        t = self.totals
        t.profiles_cached += report.profiles_cached
        t.profiles_made += report.profiles_made
        t.profiles_failed += report.profiles_failed
        t.tools_cached += report.tools_cached
        t.tools_made += report.tools_made
        t.tools_failed += report.tools_failed
        t.tokens += report.tokens
        room = max(0, MAX_REPORTED_FAILURES - len(t.failures))
        t.failures.extend(report.failures[:room])

    def context(self, tools: dict[str, Tool], dropped: set[str]) -> list[Tool]:
        """Indexed tools of the servers in ``tools`` that were not loaded this time (and are
        not about to be pruned): a server's profile is made from *all* its tools, and when
        it changes, these tools need their enrichment refreshed too.

        Raises: StoreError."""
        servers = sorted({t.server for t in tools.values() if t.server})
        if not servers:
            return []
        # Ids first (cheap), full tools only for the few not loaded: a full sync loads them all.
        ids = self.store.tools.hashes(Filters(servers=tuple(servers)))
        missing = sorted(i for i in ids if i not in tools and i not in dropped)
        found = self.store.tools.get_many(missing) if missing else {}
        return [found[i] for i in missing if i in found]

    def status(self, server: str) -> dict[str, Any]:
        """Profile and per-tool cache state of one server (or category) as stored.

        Raises: StoreError."""
        tools = [t for t in iter_tools(self.store, Filters(servers=(server,)))]
        if not tools:
            tools = [t for t in iter_tools(self.store) if group_key(t) == server]
        name = self.enricher.name
        record = self.store.enrichments.get_enrichments("profile", [server], name).get(server)
        profile_hash = self.cache.profile_hash(tools) if tools else ""
        profile: dict[str, Any] = {"state": "missing"}
        if record is not None:
            fresh = self.cache.is_fresh(record, profile_hash)
            state = "failed" if record.status == "failed" else ("fresh" if fresh else "stale")
            profile = {"state": state, "created_at": record.created_at, "error": record.error}
            if record.status == "ok":
                profile["profile"] = _json(record.payload)
        rows = self.store.enrichments.get_enrichments("tool", [t.id for t in tools], name)
        counts = {"fresh": 0, "stale": 0, "failed": 0, "missing": 0}
        for tool in tools:
            row = rows.get(tool.id)
            if row is None:
                counts["missing"] += 1
            elif row.status == "failed":
                counts["failed"] += 1
            else:
                # A tool row is judged by age and status here; its inputs are re-checked
                # (with the current profile) by the next sync.
                counts["fresh" if self.clock_ok(row.created_at) else "stale"] += 1
        return {
            "server": server,
            "enricher": name,
            "tools": len(tools),
            "profile": profile,
            "tool_states": counts,
        }

    def clock_ok(self, created_at: float) -> bool:
        return self.cache.clock() - created_at <= self.cache.max_age_s

    def stats(self) -> dict[str, Any]:
        """Stored rows by enricher/kind/state with their tokens, plus this process's counters.

        Raises: StoreError."""
        by_state: dict[str, dict[str, dict[str, int]]] = {}
        tokens = 0
        for enricher, kind, status, rows, spent in self.store.enrichments.enrichment_summary():
            by_state.setdefault(enricher, {}).setdefault(kind, {})[status] = rows
            tokens += spent
        t = self.totals
        return {
            "enricher": self.enricher.name,
            "stored": by_state,
            "llm_tokens_stored": tokens,
            "session": t.to_dict(),
            "cache_hits": t.profiles_cached + t.tools_cached,
            "cache_misses": t.profiles_made + t.tools_made + t.profiles_failed + t.tools_failed,
        }


def iter_tools(store: Store, filters: Filters | None = None) -> Iterator[Tool]:
    """Every indexed tool matching ``filters``, page by page (ordered by id).

    Raises: StoreError."""
    offset = 0
    while True:
        page = store.tools.list_tools(filters, offset=offset, limit=PAGE)
        yield from page
        if len(page) < PAGE:
            return
        offset += PAGE


def _json(raw: str) -> Any:
    import json

    try:
        return json.loads(raw)
    except ValueError:
        return None
