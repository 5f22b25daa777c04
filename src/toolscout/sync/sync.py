"""Hash-based incremental sync of many sources into one index.

Each source is listed, then handed to :meth:`Engine.index` with ``prune=True`` on its own: only
tools whose text hash changed are embedded, tools the source no longer lists are deleted, and the
summary is per source. A source that cannot be listed (a server that will not start, a missing
directory) is reported as failed and its tools stay: a failed listing is not an empty listing.

Crash safety comes from the engine: it writes in transactional chunks and a tool row, its text
and its vector are written in one transaction, so a killed sync leaves every tool in its old or
new state, and the next sync finds the remaining differences by hash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolscout.errors import IngestError, QueryError
from toolscout.ingest.jsonfile import CatalogFile, catalog_files
from toolscout.ingest.mcp import SOURCE_PREFIX as MCP_PREFIX
from toolscout.ingest.mcp import McpSource
from toolscout.ingest.mcpconfig import (
    DEFAULT_TIMEOUT,
    ServerSpec,
    read_mcp_config,
    servers_from_settings,
)
from toolscout.ingest.openapi import OpenApiSource
from toolscout.ingest.openapi_documents import OPENAPI_CACHE, DocumentCache, is_url
from toolscout.ingest.pyfile import SOURCE_PREFIX as TOOLS_PREFIX
from toolscout.ingest.pyfile import ToolDirectory
from toolscout.ingest.sources import Source
from toolscout.models import JSON, Filters, Loaded, Problem
from toolscout.sync.synclog import record_sync

if TYPE_CHECKING:
    from toolscout.config import Settings
    from toolscout.engine import Engine, Progress

log = logging.getLogger("toolscout.sync.sync")

#: Called with a server's name and its listing (or the error) as soon as it has answered.
OnListed = Callable[[str, "Loaded | IngestError"], None]
#: Sources ``sync --prune`` never removes: the built-in starter catalog.
PRUNE_KEEPS = frozenset({"builtin"})


@dataclass
class SourceSummary:
    """What one sync did to one source. ``error`` is set when the source could not be listed."""

    source: str
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    embedded: int = 0
    problems: list[Problem] = field(default_factory=list)
    error: str | None = None
    warnings: list[Problem] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """Items that could not be indexed: skipped entries, or 1 for a source that failed."""
        return len(self.problems) + (1 if self.error else 0)

    def to_dict(self) -> JSON:
        return {
            "source": self.source,
            "added": self.added,
            "updated": self.updated,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "embedded": self.embedded,
            "error": self.error,
            "problems": [str(p) for p in self.problems],
            "warnings": [str(p) for p in self.warnings],
        }


@dataclass
class SyncReport:
    """Per-source summaries of one sync pass, plus configuration entries that were skipped."""

    sources: list[SourceSummary] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.error is None for s in self.sources) and not self.problems

    def total(self, key: str) -> int:
        return sum(int(getattr(s, key)) for s in self.sources)

    def to_dict(self) -> JSON:
        return {
            "sources": [s.to_dict() for s in self.sources],
            "problems": [str(p) for p in self.problems],
            "totals": {
                k: self.total(k)
                for k in ("added", "updated", "deleted", "unchanged", "failed", "embedded")
            },
        }


def apply_listing(
    engine: Engine, loaded: Loaded, *, progress: Progress | None = None
) -> SourceSummary:
    """Bring the index in line with one source's complete listing.

    Raises:
        StoreError, EmbedError: from the engine (work committed before stays committed).
    """
    report = engine.index([loaded], prune=True, progress=progress)
    return SourceSummary(
        source=loaded.source,
        added=report.added,
        updated=report.updated,
        deleted=report.deleted,
        unchanged=report.unchanged,
        embedded=report.embedded,
        problems=list(report.skipped),
        warnings=list(report.warnings),
    )


def sync_source(
    engine: Engine, source: Source, *, progress: Progress | None = None
) -> SourceSummary:
    """List one source and apply it; a listing failure keeps the source's tools.

    Raises:
        StoreError, EmbedError: from the engine.
    """
    try:
        loaded = source.read()
    except IngestError as exc:
        log.info("sync: %s kept as it was: %s", source.name, exc)
        return SourceSummary(source=source.name, error=str(exc))
    return apply_listing(engine, loaded, progress=progress)


def list_servers(
    servers: Sequence[McpSource], *, on_listed: OnListed | None = None
) -> list[Loaded | IngestError]:
    """List every MCP server at once (each within its own timeout), in the order given.

    Servers start slowly (``npx``/``uvx`` launches take seconds), so a config with ten of them
    is listed in the time of the slowest rather than of all of them together.

    Raises:
        Nothing: each server's failure is its value.
    """
    results: list[Loaded | IngestError] = [IngestError("not listed")] * len(servers)

    async def one(i: int) -> None:
        try:
            results[i] = await servers[i].read_async()
        except IngestError as exc:
            results[i] = exc
        if on_listed is not None:
            on_listed(servers[i].name, results[i])

    async def everyone() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(len(servers)):
                tg.start_soon(one, i)

    if servers:
        anyio.run(everyone)
    return results


def sync(
    engine: Engine,
    sources: Iterable[Source],
    *,
    progress: Progress | None = None,
    on_listed: OnListed | None = None,
    on_source: Callable[[str], None] | None = None,
) -> SyncReport:
    """Sync each source (see the module docstring). MCP servers are listed concurrently first
    (``on_listed`` hears of each as it answers or fails); index writes then happen one source
    at a time, in the order given (``on_source`` hears each name before its write).

    Raises:
        StoreError, EmbedError: from the engine; sources synced before stay synced.
    """
    ordered = list(sources)
    servers = [s for s in ordered if isinstance(s, McpSource)]
    listed = dict(zip(map(id, servers), list_servers(servers, on_listed=on_listed), strict=True))
    report = SyncReport()
    for source in ordered:
        if on_source is not None:
            on_source(source.name)
        result = listed.get(id(source))
        if isinstance(result, IngestError):
            log.info("sync: %s kept as it was: %s", source.name, result)
            report.sources.append(SourceSummary(source=source.name, error=str(result)))
        elif result is not None:
            report.sources.append(apply_listing(engine, result, progress=progress))
        else:
            report.sources.append(sync_source(engine, source, progress=progress))
    record_sync(engine.store, report.sources)
    return report


@dataclass(frozen=True)
class ApiSpec:
    """An OpenAPI document to index: ``name`` (None: from its title) and where it is;
    ``cache_dir`` holds fetched documents between syncs (None: no cache)."""

    location: str
    name: str | None = None
    base_url: str | None = None
    cache_dir: str | None = None

    def source(self) -> OpenApiSource:
        cache = DocumentCache(Path(self.cache_dir) / OPENAPI_CACHE) if self.cache_dir else None
        return OpenApiSource(self.location, api=self.name, base_url=self.base_url, cache=cache)


@dataclass(frozen=True)
class SourceSet:
    """The sources one ``sync`` / ``watch`` run covers, resolved from arguments or settings."""

    catalogs: tuple[Path, ...] = ()
    tool_dirs: tuple[Path, ...] = ()
    servers: tuple[ServerSpec, ...] = ()
    problems: tuple[Problem, ...] = ()
    apis: tuple[ApiSpec, ...] = ()

    def file_sources(self) -> list[Source]:
        out: list[Source] = [CatalogFile(p, source=catalog_source(p)) for p in self.catalogs]
        out.extend(ToolDirectory(d) for d in self.tool_dirs)
        out.extend(api.source() for api in self.apis)
        return out

    def server_sources(self) -> list[McpSource]:
        return [McpSource(spec) for spec in self.servers]

    def all_sources(self) -> list[Source]:
        return [*self.file_sources(), *self.server_sources()]

    def is_empty(self) -> bool:
        return not (self.catalogs or self.tool_dirs or self.servers or self.apis)


def catalog_source(path: Path) -> str:
    """The source name of a catalog file: its absolute path, so a relative path and a later
    absolute one name the same source."""
    return str(Path(path).expanduser().resolve())


def resolve_sources(
    settings: Settings | None = None,
    *,
    mcp_configs: Sequence[str | Path] = (),
    tools_dirs: Sequence[str | Path] = (),
    catalogs: Sequence[str | Path] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> SourceSet:
    """The sources named by arguments; with none, the ones the settings name.

    Raises:
        IngestError: an MCP configuration file cannot be read at all.
    """
    servers_table: dict[str, Any] = {}
    apis: list[ApiSpec] = []
    cache_dir = settings.cache_dir if settings is not None else None
    if not (mcp_configs or tools_dirs or catalogs) and settings is not None:
        apis = [
            ApiSpec(api.spec, name=name, base_url=api.base_url, cache_dir=cache_dir)
            for name, api in sorted(settings.apis.items())
        ]
        mcp_configs, tools_dirs, catalogs = (
            settings.mcp_configs,
            settings.tools_dirs,
            settings.catalogs,
        )
        servers_table = dict(settings.mcp_servers)
    configs = servers_from_settings(servers_table, timeout=timeout)
    for path in mcp_configs:
        found = read_mcp_config(Path(path).expanduser(), timeout=timeout)
        configs.servers.extend(found.servers)
        configs.problems.extend(found.problems)
    seen: dict[str, ServerSpec] = {}
    problems = list(configs.problems)
    for spec in configs.servers:
        if spec.name in seen:
            problems.append(
                Problem(
                    spec.origin, spec.name, f"server defined again; kept {seen[spec.name].origin}"
                )
            )
            continue
        seen[spec.name] = spec
    apis.extend(ApiSpec(str(c), cache_dir=cache_dir) for c in catalogs if is_url(str(c)))
    files = [Path(p).expanduser() for p in catalogs if not is_url(str(p))]
    return SourceSet(
        apis=tuple(apis),
        catalogs=tuple(catalog_files(files, missing_ok=True)),
        tool_dirs=tuple(Path(p).expanduser() for p in tools_dirs),
        servers=tuple(seen.values()),
        problems=tuple(problems),
    )


def prune_unlisted(engine: Engine, report: SyncReport) -> list[SourceSummary]:
    """Delete the tools of every indexed source this sync did not cover (a server removed from
    its configuration, a catalog no longer named), except :data:`PRUNE_KEEPS`. A source whose
    listing failed was covered: it keeps its tools.

    Raises:
        StoreError: from the engine.
    """
    covered = {s.source for s in report.sources} | PRUNE_KEEPS
    pruned: list[SourceSummary] = []
    for source in sorted(s for s in engine.store.counts_by("source") if s and s not in covered):
        ids = sorted(engine.store.hashes(Filters(sources=(source,))))
        pruned.append(SourceSummary(source=source, deleted=engine.delete(ids)))
    report.sources.extend(pruned)
    return pruned


def remove_sources(engine: Engine, names: Sequence[str]) -> dict[str, int]:
    """Delete every tool of each named source or server; ``{name: tools deleted}``.

    A name may be a source as ``toolscout info`` lists it, an MCP server's name (as search
    results show it), a catalog file or a tool folder (relative paths are resolved).

    Raises:
        QueryError: a name matches no indexed source or server (the message lists them).
        StoreError: from the engine.
    """
    # counts_by names a NULL column "None": tools without a server are no server.
    sources = {s for s in engine.store.counts_by("source") if s and s != "None"}
    servers = {s for s in engine.store.counts_by("server") if s and s != "None"}
    found: dict[str, Filters] = {}
    for name in names:
        path = str(Path(name).expanduser().resolve())
        candidates = (name, MCP_PREFIX + name, path, TOOLS_PREFIX + path)
        source = next((c for c in candidates if c in sources), None)
        if source is not None:
            found[name] = Filters(sources=(source,))
        elif name in servers:
            found[name] = Filters(servers=(name,))
        else:
            known = ", ".join(sorted(sources | servers)) or "none (the index is empty)"
            raise QueryError("source", f"nothing indexed from {name!r}; indexed: {known}")
    return {
        name: engine.delete(sorted(engine.store.hashes(filters))) for name, filters in found.items()
    }
