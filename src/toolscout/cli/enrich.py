"""``toolscout enrich ...``: semantic enrichment of the index.

``toolscout enrich`` (or ``enrich sync``) detects what changed and enriches only that, with a
progress bar; ``server`` remakes one server, ``status`` and ``stats`` report. Each command is
one Engine call plus rendering.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from toolscout.cli import app, console, err_console
from toolscout.cli.options import DbOption, JsonOption, open_engine

enrich_app = typer.Typer(
    help="Enrich tools with server profiles, action-entity pairs and keywords.",
    invoke_without_command=True,
)
app.add_typer(enrich_app, name="enrich")

EnricherOption = Annotated[
    str | None,
    typer.Option(
        "--enricher",
        help="offline (rules, no model) or llm (the configured OpenAI-compatible API). "
        "Default: the enrich setting (TOOLSCOUT_ENRICH).",
        show_default=False,
    ),
]


def _print(data: Any, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(data, ensure_ascii=False))
        return
    for key, value in data.items():
        console.print(f"[bold]{key}[/]: {escape(str(value))}", highlight=False)


def _enricher(value: str | None) -> str | None:
    if value is not None and value not in ("offline", "llm"):
        raise typer.BadParameter("must be offline or llm", param_hint="--enricher")
    return value


@enrich_app.callback()
def main(
    ctx: typer.Context,
    db: DbOption = None,
    enricher: EnricherOption = None,
    as_json: JsonOption = False,
) -> None:
    """Without a subcommand: ``sync`` (these options apply to it; subcommands take their own)."""
    if ctx.invoked_subcommand is None:
        sync(db=db, enricher=enricher, as_json=as_json)


@enrich_app.command()
def sync(db: DbOption = None, enricher: EnricherOption = None, as_json: JsonOption = False) -> None:
    """Enrich new and changed tools (and tools whose server profile changed); re-embed them."""
    engine = open_engine(db, enrich=_enricher(enricher))
    try:
        with Progress(
            TextColumn("[bold]enriching"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            task = bar.add_task("enrich", total=None)
            report = engine.enrichment_service.enrich_sync(
                progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
    finally:
        engine.close()
    _print(report, as_json)


@enrich_app.command()
def server(
    name: Annotated[str, typer.Argument(help="Server (or, for tools without one, category).")],
    db: DbOption = None,
    enricher: EnricherOption = None,
    force: Annotated[bool, typer.Option(help="Remake even fresh enrichments.")] = True,
    as_json: JsonOption = False,
) -> None:
    """Remake one server's profile and its tools' enrichment."""
    engine = open_engine(db, enrich=_enricher(enricher))
    try:
        report = engine.enrichment_service.enrich_server(name, force=force)
    finally:
        engine.close()
    _print(report, as_json)


@enrich_app.command()
def status(
    name: Annotated[str, typer.Argument(help="Server (or category).")],
    db: DbOption = None,
    enricher: EnricherOption = None,
    as_json: JsonOption = False,
) -> None:
    """Profile state and tool counts by state (fresh, stale, failed, missing)."""
    engine = open_engine(db, enrich=_enricher(enricher))
    try:
        data = engine.enrichment_service.enrichment_status(name)
    finally:
        engine.close()
    _print(data, as_json)


@enrich_app.command()
def stats(
    db: DbOption = None, enricher: EnricherOption = None, as_json: JsonOption = False
) -> None:
    """Stored enrichments by enricher, kind and state, with LLM tokens spent."""
    engine = open_engine(db, enrich=_enricher(enricher))
    try:
        data = engine.enrichment_service.enrichment_stats()
    finally:
        engine.close()
    _print(data, as_json)
