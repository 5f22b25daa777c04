"""Change detection for enrichment: make a profile or tool enrichment only when its inputs'
hash changed or it is older than the maximum age, and keep it in the index.

Inputs hashed:

* a server profile: the enricher's name and the server's tool list (ids + content hashes);
* a tool enrichment: the enricher's name, the tool's content hash, server and category, and
  the *digest of its server's profile* - so a changed profile re-enriches its tools, while an
  unchanged profile regenerated after expiry with the same content does not.

A failure is stored as a ``failed`` row: the tool keeps its original text, the failure is
reported, and the next pass tries again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolscout.enrich.base import (
    Enricher,
    ServerProfile,
    ToolEnrichment,
    group_key,
    tools_hash,
)
from toolscout.errors import EnrichError
from toolscout.models import Tool
from toolscout.store.roles import EnrichmentRecord, EnrichStore

DEFAULT_MAX_AGE_DAYS = 7.0
#: Rows are written every this many results, so an interrupted pass keeps its progress.
WRITE_EVERY = 64
MAX_REPORTED_FAILURES = 50

Progress = Callable[[int, int], None]
T = TypeVar("T")


@dataclass
class EnrichReport:
    """What one enrichment pass did (``cached`` = reused, ``made`` = generated now)."""

    profiles_cached: int = 0
    profiles_made: int = 0
    profiles_failed: int = 0
    tools_cached: int = 0
    tools_made: int = 0
    tools_failed: int = 0
    tokens: int = 0
    failures: list[str] = field(default_factory=list)

    def fail(self, key: str, error: str) -> None:
        if len(self.failures) < MAX_REPORTED_FAILURES:
            self.failures.append(f"{key}: {error}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "profiles": {
                "cached": self.profiles_cached,
                "made": self.profiles_made,
                "failed": self.profiles_failed,
            },
            "tools": {
                "cached": self.tools_cached,
                "made": self.tools_made,
                "failed": self.tools_failed,
            },
            "tokens": self.tokens,
            "failures": list(self.failures),
        }


def _sha(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


class EnrichmentCache:
    """Enrichment with change detection over a store's ``enrichments`` table."""

    def __init__(
        self,
        store: EnrichStore,
        enricher: Enricher,
        *,
        max_age_days: float = DEFAULT_MAX_AGE_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.enricher = enricher
        self.max_age_s = max_age_days * 86400.0
        self.clock = clock

    # -- hashing ----------------------------------------------------------------------------
    def profile_hash(self, tools: Sequence[Tool]) -> str:
        return _sha(self.enricher.name, tools_hash(tools))

    def tool_hash(
        self, tool: Tool, profile: ServerProfile | None, digest: str | None = None
    ) -> str:
        """``digest`` may pass ``profile.digest()`` computed once for a whole server."""
        if digest is None:
            digest = profile.digest() if profile else ""
        return _sha(
            self.enricher.name, tool.content_hash, tool.server or "", tool.category or "", digest
        )

    def is_fresh(self, record: EnrichmentRecord | None, input_hash: str) -> bool:
        """A usable row: made from these inputs, successfully, within the maximum age."""
        return (
            record is not None
            and record.status == "ok"
            and record.input_hash == input_hash
            and self.clock() - record.created_at <= self.max_age_s
        )

    # -- passes -----------------------------------------------------------------------------
    def profiles(
        self,
        groups: Mapping[str, Sequence[Tool]],
        report: EnrichReport,
        *,
        force: bool = False,
    ) -> dict[str, ServerProfile]:
        """The profile of each group, from the cache when fresh.

        Raises: StoreError. Enricher failures are recorded, not raised."""
        keys = sorted(groups)
        stored = self.store.get_enrichments("profile", keys, self.enricher.name)
        out: dict[str, ServerProfile] = {}
        todo: list[tuple[str, str]] = []
        for key in keys:
            h = self.profile_hash(groups[key])
            record = stored.get(key)
            if not force and record is not None and self.is_fresh(record, h):
                try:
                    out[key] = ServerProfile.from_json(record.payload)
                    report.profiles_cached += 1
                    continue
                except EnrichError:
                    pass  # an unreadable row is regenerated like a stale one
            todo.append((key, h))

        def make(item: tuple[str, str]) -> ServerProfile:
            return self.enricher.profile(item[0], groups[item[0]])

        for (key, h), result in self._run(todo, make, None):
            if isinstance(result, ServerProfile):
                made = _stamp(result, h, self.clock())
                out[key] = made
                report.profiles_made += 1
                report.tokens += made.tokens
            else:
                report.profiles_failed += 1
                report.fail(f"profile {key}", result)
        return out

    def tools(
        self,
        tools: Sequence[Tool],
        profiles: Mapping[str, ServerProfile],
        report: EnrichReport,
        *,
        force: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, ToolEnrichment]:
        """The enrichment of each tool (tools that failed are absent: they keep their text).

        Raises: StoreError. Enricher failures are recorded, not raised."""
        stored = self.store.get_enrichments("tool", [t.id for t in tools], self.enricher.name)
        out: dict[str, ToolEnrichment] = {}
        todo: list[tuple[Tool, str]] = []
        digests: dict[str, str] = {}
        for tool in tools:
            group = group_key(tool)
            if group not in digests:
                profile = profiles.get(group)
                digests[group] = profile.digest() if profile else ""
            h = self.tool_hash(tool, None, digests[group])
            record = stored.get(tool.id)
            if not force and record is not None and self.is_fresh(record, h):
                try:
                    out[tool.id] = ToolEnrichment.from_json(record.payload)
                    report.tools_cached += 1
                    continue
                except EnrichError:
                    pass
            todo.append((tool, h))

        def make(item: tuple[Tool, str]) -> ToolEnrichment:
            return self.enricher.enrich(item[0], profiles.get(group_key(item[0])))

        for (tool, _h), result in self._run(todo, make, progress):
            if isinstance(result, ToolEnrichment):
                out[tool.id] = result
                report.tools_made += 1
                report.tokens += result.tokens
            else:
                report.tools_failed += 1
                report.fail(tool.id, result)
        return out

    def _run(
        self,
        todo: Sequence[tuple[Any, str]],
        make: Callable[[tuple[Any, str]], T],
        progress: Progress | None,
    ) -> list[tuple[tuple[Any, str], T | str]]:
        """Call ``make`` on each item (up to ``enricher.concurrency`` at once), storing each
        result or failure as it arrives; returns (item, result or error message) in order."""
        results: list[tuple[tuple[Any, str], T | str]] = []
        pending: list[EnrichmentRecord] = []
        total = len(todo)
        if progress:
            progress(0, total)

        def attempt(item: tuple[Any, str]) -> T | str:
            try:
                return make(item)
            except EnrichError as exc:
                return str(exc) or type(exc).__name__

        workers = max(1, int(self.enricher.concurrency))
        if workers == 1 or total <= 1:
            outcomes = map(attempt, todo)
            self._collect(todo, outcomes, results, pending, progress)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="enrich") as pool:
                self._collect(todo, pool.map(attempt, todo), results, pending, progress)
        self.store.put_enrichments(pending)
        return results

    def _collect(
        self,
        todo: Sequence[tuple[Any, str]],
        outcomes: Any,
        results: list[tuple[tuple[Any, str], Any]],
        pending: list[EnrichmentRecord],
        progress: Progress | None,
    ) -> None:
        for done, (item, result) in enumerate(zip(todo, outcomes, strict=True), 1):
            results.append((item, result))
            pending.append(self._record(item, result))
            if len(pending) >= WRITE_EVERY:
                self.store.put_enrichments(pending)
                pending.clear()
            if progress:
                progress(done, len(todo))

    def _record(self, item: tuple[Any, str], result: Any) -> EnrichmentRecord:
        subject, input_hash = item
        now = self.clock()
        if isinstance(subject, Tool):
            kind, key = "tool", subject.id
        else:
            kind, key = "profile", str(subject)
        if isinstance(result, str):
            return EnrichmentRecord(
                kind, key, self.enricher.name, input_hash, "", "failed", result, now, 0
            )
        if isinstance(result, ServerProfile):
            result = _stamp(result, input_hash, now)
        return EnrichmentRecord(
            kind,
            key,
            self.enricher.name,
            input_hash,
            result.to_json(),
            "ok",
            "",
            now,
            result.tokens,
        )


def _stamp(profile: ServerProfile, input_hash: str, now: float) -> ServerProfile:
    from dataclasses import replace

    return replace(profile, tools_hash=input_hash, created_at=now)
