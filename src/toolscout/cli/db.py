"""Store commands: ``toolscout db upgrade`` and ``toolscout migrate --from URL --to URL``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated

import typer

from toolscout.cli import app, console
from toolscout.cli.options import DbOption, JsonOption, open_engine, settings
from toolscout.engine import Engine, prepare
from toolscout.errors import StoreError
from toolscout.models import Tool
from toolscout.store.base import normalise_url, open_store
from toolscout.store.transfer import Derive, copy_index

db_app = typer.Typer(help="Manage the index's database.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def upgrade(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Apply pending schema migrations (opening a store applies them too)."""
    url = settings(db).db
    store = open_store(url)
    try:
        version = store.get_meta("schema_version")
        shown = store.url
    finally:
        store.close()
    if as_json:
        console.print_json(json.dumps({"store": shown, "schema_version": version}))
    else:
        console.print(f"{shown}: schema version {version}", highlight=False, markup=False)


def _existing_source(url_or_path: str) -> str:
    url = normalise_url(url_or_path)
    # Opening a missing SQLite file would create an empty one.
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise StoreError(f"migrate: --from {url_or_path}: no such index file")
    return url


def _deriver(engine: Engine) -> Derive:
    def derive(tools: Sequence[Tool]) -> Mapping[str, tuple[Mapping[str, str], str]]:
        extra, _ = engine.enrichment_service.enrichment_fields({t.id: t for t in tools}, set())
        out: dict[str, tuple[Mapping[str, str], str]] = {}
        for tool in tools:
            prepared = prepare(tool, extra.get(tool.id))
            out[tool.id] = (prepared.fields, prepared.text_hash)
        return out

    return derive


@app.command()
def migrate(
    source: Annotated[str, typer.Option("--from", help="Index to copy (path or store URL).")],
    target: Annotated[
        str, typer.Option("--to", help="Store to copy into (e.g. postgresql://...).")
    ],
    as_json: JsonOption = False,
) -> None:
    """Copy a whole index (tools, vectors, skills, enrichment cache) into another store."""
    src = open_store(_existing_source(source))
    try:
        engine = open_engine(target)
        try:
            report = copy_index(src, engine.store, _deriver(engine))
        finally:
            engine.close()
    finally:
        src.close()
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
        return
    console.print(
        f"copied {report.tools} tools, {report.skills} skills, {report.assignments} "
        f"assignments, {report.suggestions} suggestions, {report.enrichments} enrichment rows"
    )
    if report.text_differs:
        console.print(
            f"[yellow]{report.text_differs} tools' text differs from the source's record "
            f"(built by another version or enricher setting); `toolscout index` refreshes them"
        )
