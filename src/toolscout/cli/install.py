"""``toolscout install CLIENT``: add the toolscout gateway to an MCP client's configuration,
index the client's servers, and check that the written entry starts."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import anyio
import typer

from toolscout.cli import app, console
from toolscout.cli.options import DbOption, open_engine, settings
from toolscout.cli.sync import sync_with_progress
from toolscout.ingest.mcpconfig import DEFAULT_TIMEOUT
from toolscout.sync.sync import resolve_sources


def _location(db: str) -> str:
    """The index as the entry names it: a store URL as it is, a file by absolute path (the
    client starts the entry in a folder of its own)."""
    return db if "://" in db else str(Path(db).expanduser().absolute())


def _say(text: str) -> None:
    console.print(text, highlight=False, markup=False)


@app.command()
def install(
    client: Annotated[str, typer.Argument(help="claude-desktop, claude-code or cursor.")],
    db: DbOption = None,
    move_servers: Annotated[
        bool,
        typer.Option(
            "--move-servers",
            help="Move the servers already configured there behind the gateway (the client "
            "then loads toolscout alone); without it the entry refers to them where they are.",
        ),
    ] = False,
    project: Annotated[
        bool, typer.Option("--project", help="claude-code / cursor: the project's file.")
    ] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="The client's file (default: its usual place).")
    ] = None,
    index: Annotated[
        bool, typer.Option(help="Index the client's servers now (as `toolscout sync`).")
    ] = True,
    check: Annotated[
        bool, typer.Option(help="Start the written entry as the client will and list its tools.")
    ] = True,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print, write nothing.")] = False,
) -> None:
    """Write the toolscout entry (absolute paths) into a client's MCP configuration (the old
    file is kept as a backup), index the client's servers into the entry's index, and check
    that the entry starts and lists its tools (exits 3 when it does not)."""
    from toolscout.gateway.clients import apply_install, check_entry, config_path, plan_install

    path = config or config_path(client, project=project)
    db_path = _location(settings(db).db)
    plan = plan_install(path, db=db_path, move_servers=move_servers)
    if dry_run:
        console.print_json(json.dumps(plan.document))
        return
    backup = apply_install(plan)
    _say(f"wrote {path}" + (f" (backup: {backup})" if backup else ""))
    if plan.upstream_path is not None:
        _say(f"moved {len(plan.moved)} server(s) to {plan.upstream_path}")
    _index_servers(plan.servers_file, db_path, now=index)
    if check:
        _say(f"checking: {shlex.join([plan.entry['command'], *plan.entry['args']])}")
        names = anyio.run(check_entry, plan.entry)
        _say(f"ok: it starts and lists {len(names)} tools ({', '.join(sorted(names))})")
    _say("restart the client to load it")


def _index_servers(servers_file: Path, db: str, *, now: bool) -> None:
    """Index the servers of ``servers_file`` into ``db`` (or say how); every command printed
    names the same index the entry uses."""
    again = shlex.join(["toolscout", "sync", "--mcp-config", str(servers_file), "--db", db])
    found = (
        resolve_sources(settings(db), mcp_configs=[servers_file], timeout=DEFAULT_TIMEOUT)
        if now
        else None
    )
    if found is None or not found.servers:
        # An index to serve, even empty: `toolscout mcp` refuses a missing one, and the client
        # would only see "Connection closed".
        open_engine(db).close()
        if found is None:
            _say(f"index the servers with:\n  {again}")
        else:
            _say(f"no MCP servers in {servers_file}; add some, then run:\n  {again}")
        return
    _say(f"indexing {len(found.servers)} server(s) into {db}")
    report = sync_with_progress(db, found)
    for s in report.sources:
        listed = s.added + s.updated + s.unchanged
        _say(f"  {s.source}: " + (f"failed: {s.error}" if s.error else f"{listed} tools"))
    if not report.ok:
        _say(f"some servers could not be listed; once they start, run:\n  {again}")
