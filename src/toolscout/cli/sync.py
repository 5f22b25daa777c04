"""``toolscout sync`` (one pass) and ``toolscout watch`` (keep syncing) over every source kind."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from toolscout.cli import app, console, err_console
from toolscout.cli.options import DbOption, JsonOption, open_engine, settings
from toolscout.cli.progress import SyncProgress
from toolscout.errors import IngestError
from toolscout.ingest.mcpconfig import DEFAULT_TIMEOUT
from toolscout.sync.sync import (
    SourceSet,
    SourceSummary,
    SyncReport,
    prune_unlisted,
    remove_sources,
    resolve_sources,
    sync,
)
from toolscout.sync.watch import DEFAULT_DEBOUNCE_MS, DEFAULT_RELIST_INTERVAL, Watcher

McpConfigOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--mcp-config",
        help="An MCP client configuration (claude_desktop_config.json, .mcp.json, VS Code "
        "mcp.json); repeatable.",
    ),
]
ToolsDirOption = Annotated[
    list[Path] | None,
    typer.Option("--tools-dir", help="A Python tool folder (freeact layout); repeatable."),
]
CatalogArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Catalog files (JSON/JSONL), OpenAPI documents or their URLs, as for `index`."
    ),
]
TimeoutOption = Annotated[
    float, typer.Option(min=0.1, help="Seconds each MCP server gets to start and list.")
]


def _sources(
    db: str | None,
    mcp_config: list[Path] | None,
    tools_dir: list[Path] | None,
    catalogs: list[str] | None,
    timeout: float,
) -> SourceSet:
    found = resolve_sources(
        settings(db),
        mcp_configs=mcp_config or [],
        tools_dirs=tools_dir or [],
        catalogs=catalogs or [],
        timeout=timeout,
    )
    if found.is_empty():
        raise IngestError(
            "sync: no sources; give --mcp-config, --tools-dir or catalog files, or set "
            "mcp_configs / mcp_servers / tools_dirs / catalogs in the configuration"
        )
    return found


def _summary_line(s: SourceSummary) -> str:
    if s.error:
        return f"[red]failed[/] {escape(s.source)}: kept as it was ({escape(s.error)})"
    return (
        f"{escape(s.source)}: added [green]{s.added}[/], updated [yellow]{s.updated}[/], "
        f"deleted {s.deleted}, unchanged {s.unchanged}, failed [red]{s.failed}[/]"
    )


def _print_sync(report: SyncReport, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
        return
    table = Table(title="sync")
    for column in ("source", "added", "updated", "deleted", "unchanged", "failed"):
        table.add_column(column, overflow="fold")
    for s in report.sources:
        table.add_row(
            escape(s.source),
            str(s.added),
            str(s.updated),
            str(s.deleted),
            str(s.unchanged),
            str(s.failed),
        )
    console.print(table)
    for s in report.sources:
        if s.error:
            console.print(f"  failed {s.source}: {s.error}", highlight=False, markup=False)
        for problem in s.problems[:20]:
            console.print(f"  skipped {problem}", highlight=False, markup=False)
        for problem in s.warnings[:20]:
            console.print(f"  warning {problem}", highlight=False, markup=False)
    for problem in report.problems:
        console.print(f"  config {problem}", highlight=False, markup=False)


def sync_with_progress(db: str | None, found: SourceSet, *, prune: bool = False) -> SyncReport:
    """One sync pass of ``found`` into ``db``, showing servers listed and tools embedded.

    Raises:
        StoreError, EmbedError: from the engine (a source that fails is in the report).
    """
    engine = open_engine(db)
    try:
        with SyncProgress(len(found.servers)) as shown:
            report = sync(
                engine,
                found.all_sources(),
                progress=shown.embedded,
                on_listed=shown.listed,
                on_source=shown.source,
            )
        report.problems.extend(found.problems)
        if prune:
            prune_unlisted(engine, report)
    finally:
        engine.close()
    return report


@app.command("sync")
def sync_(
    catalogs: CatalogArg = None,
    mcp_config: McpConfigOption = None,
    tools_dir: ToolsDirOption = None,
    db: DbOption = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT,
    prune: Annotated[
        bool,
        typer.Option(
            help="Also delete the tools of indexed sources this run does not name (a server "
            "removed from its configuration, a catalog no longer given); the built-in "
            "catalog stays."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Sync MCP servers, tool folders and catalogs into the index.

    One pass; only changed items are embedded. Exits 5 when a source could not be listed;
    its tools are kept.
    """
    found = _sources(db, mcp_config, tool_dir_list(tools_dir), catalogs, timeout)
    report = sync_with_progress(db, found, prune=prune)
    _print_sync(report, as_json)
    if not report.ok:
        raise typer.Exit(5)


@app.command()
def remove(
    names: Annotated[
        list[str],
        typer.Argument(
            help="Sources or servers, as `toolscout info` and search results show them: an MCP "
            "server name, a catalog file or a tool folder."
        ),
    ],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete every tool of the named sources or servers from the index."""
    engine = open_engine(db, must_exist=True)
    try:
        removed = remove_sources(engine, names)
    finally:
        engine.close()
    if as_json:
        console.print_json(json.dumps({"removed": removed}))
        return
    for name, count in removed.items():
        console.print(f"removed {count} tools of {name}", highlight=False, markup=False)


def tool_dir_list(dirs: list[Path] | None) -> list[Path]:
    """Check tool folders up front: a typo should fail now, not be watched forever.

    Raises:
        IngestError: a folder does not exist.
    """
    for d in dirs or []:
        if not d.is_dir():
            raise IngestError(f"--tools-dir {d}: no such directory")
    return list(dirs or [])


@app.command()
def watch(
    catalogs: CatalogArg = None,
    mcp_config: McpConfigOption = None,
    tools_dir: ToolsDirOption = None,
    db: DbOption = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT,
    interval: Annotated[
        float, typer.Option(min=1.0, help="Re-list MCP servers at least this often (seconds).")
    ] = DEFAULT_RELIST_INTERVAL,
    debounce_ms: Annotated[
        int, typer.Option(min=10, help="Group file changes over this many milliseconds.")
    ] = DEFAULT_DEBOUNCE_MS,
) -> None:
    """Sync, then keep syncing as tool files, catalogs and MCP servers change (Ctrl-C stops)."""
    found = _sources(db, mcp_config, tool_dir_list(tools_dir), catalogs, timeout)
    for problem in found.problems:
        err_console.print(f"config {problem}", highlight=False, markup=False)
    watched = [str(p) for p in (*found.catalogs, *found.tool_dirs)]
    watched += [f"mcp:{spec.name}" for spec in found.servers]
    err_console.print(
        f"watching {len(watched)} sources ({', '.join(watched)}); syncing now. Ctrl-C stops.",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    engine = open_engine(db)

    def show(summary: SourceSummary) -> None:
        if summary.error or summary.added or summary.updated or summary.deleted:
            err_console.print(_summary_line(summary), highlight=False)

    watcher = Watcher(
        engine, found, debounce_ms=debounce_ms, relist_interval=interval, on_sync=show
    )
    stop = threading.Event()
    try:
        watcher.run(stop)
    except KeyboardInterrupt:
        stop.set()
    finally:
        engine.close()
