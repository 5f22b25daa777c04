"""``toolscout feedback list|learned|clear``: the calls recorded in an index, what ranking
learned from them, and forgetting them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table

from toolscout.cli import app, console
from toolscout.cli.options import DbOption, JsonOption, open_engine

feedback_app = typer.Typer(
    help="Recorded calls (which tool was called after which request) and what ranking learned.",
    no_args_is_help=True,
)
app.add_typer(feedback_app, name="feedback")

ToolOption = Annotated[
    str | None, typer.Option("--tool", help="Only this tool's calls.", show_default=False)
]


@feedback_app.command("list")
def list_feedback(
    db: DbOption = None,
    tool: ToolOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000)] = 50,
    as_json: JsonOption = False,
) -> None:
    """Recorded calls, newest first."""
    engine = open_engine(db, must_exist=True)
    try:
        rows = engine.feedback.log(tool_id=tool, limit=limit)
    finally:
        engine.close()
    if as_json:
        out = [
            {
                "id": r.id,
                "created_at": r.created_at,
                "query": r.query,
                "tool_id": r.tool_id,
                "outcome": r.outcome,
                "shown": list(r.shown),
                "source": r.source,
            }
            for r in rows
        ]
        console.print_json(json.dumps(out))
        return
    table = Table(title=f"{len(rows)} recorded call(s)")
    for column in ("id", "when (UTC)", "outcome", "tool", "request", "source"):
        table.add_column(column, overflow="fold")
    for r in rows:
        when = datetime.fromtimestamp(r.created_at, UTC).strftime("%Y-%m-%d %H:%M")
        table.add_row(str(r.id), when, r.outcome, r.tool_id, r.query, r.source)
    console.print(table)


@feedback_app.command("learned")
def learned(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Which tools learned from which requests."""
    engine = open_engine(db, must_exist=True)
    try:
        rows = engine.feedback.learned()
    finally:
        engine.close()
    if as_json:
        console.print_json(json.dumps(rows))
        return
    table = Table(title="learned from use")
    for column in ("tool", "success", "error", "recent successful requests"):
        table.add_column(column, overflow="fold")
    for row in rows:
        requests = "; ".join(row["requests"])
        table.add_row(row["tool_id"], str(row["success"]), str(row["error"]), requests)
    console.print(table)


@feedback_app.command("clear")
def clear(
    db: DbOption = None,
    tool: ToolOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete the recorded calls of this index (of one tool with --tool)."""
    what = f"the recorded calls of {tool}" if tool else "every recorded call of this index"
    if not yes and not typer.confirm(f"Delete {what}?"):
        raise typer.Exit(1)
    engine = open_engine(db, must_exist=True)
    try:
        deleted = engine.feedback.clear(tool)
    finally:
        engine.close()
    console.print(f"deleted {deleted} recorded call(s)", highlight=False)
