"""``toolscout install CLIENT``: add the toolscout gateway to an MCP client's configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from toolscout.cli import app, console
from toolscout.cli.options import DbOption, settings


@app.command()
def install(
    client: Annotated[str, typer.Argument(help="claude-desktop, claude-code or cursor.")],
    db: DbOption = None,
    move_servers: Annotated[
        bool,
        typer.Option(
            "--move-servers",
            help="Move the servers already configured there behind the gateway.",
        ),
    ] = False,
    project: Annotated[
        bool, typer.Option("--project", help="claude-code / cursor: the project's file.")
    ] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="The client's file (default: its usual place).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print, write nothing.")] = False,
) -> None:
    """Write the toolscout entry (absolute paths) into a client's MCP configuration; the old
    file is kept as a backup."""
    from toolscout.gateway.clients import apply_install, config_path, plan_install

    path = config or config_path(client, project=project)
    plan = plan_install(path, db=settings(db).db, move_servers=move_servers)
    if dry_run:
        console.print_json(json.dumps(plan.document))
        return
    backup = apply_install(plan)
    console.print(f"wrote {path}" + (f" (backup: {backup})" if backup else ""), highlight=False)
    if plan.upstream_path is not None:
        console.print(
            f"moved {len(plan.moved)} server(s) to {plan.upstream_path}; index them with:\n"
            f"  toolscout sync --mcp-config {plan.upstream_path}",
            highlight=False,
        )
    console.print("restart the client to load it", highlight=False)
