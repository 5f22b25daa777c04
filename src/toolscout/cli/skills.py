"""``toolscout skills ...`` (catalog, classification, suggestions) and ``toolscout find``.

Each command is one Engine call plus rendering; errors map to exit codes in cli/__init__.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolscout.cli import app, console, err_console
from toolscout.cli.options import DbOption, JsonOption, open_engine
from toolscout.errors import SkillError
from toolscout.models import ItemType, SearchRequest, SearchResult, Skill, Suggestion
from toolscout.search.request import parse_strategy

skills_app = typer.Typer(help="Govern the skill catalog, classify tools, review suggestions.")
suggestions_app = typer.Typer(help="Skills the LLM classifier proposed.")
skills_app.add_typer(suggestions_app, name="suggestions")
app.add_typer(skills_app, name="skills")

ListOption = Annotated[list[str] | None, typer.Option(help="Repeat for several values.")]


def _print(data: Any) -> None:
    console.print_json(json.dumps(data, ensure_ascii=False))


def _skill_json(skill: Skill, **extra: Any) -> dict[str, Any]:
    return {**skill.to_dict(), **extra}


def _suggestion_json(s: Suggestion) -> dict[str, Any]:
    return {
        "id": s.id,
        "skill_id": s.skill_id,
        "name": s.name,
        "description": s.description,
        "keywords": list(s.keywords),
        "source_tool_id": s.source_tool_id,
        "status": s.status,
        "reason": s.reason,
        "created_at": s.created_at,
    }


@skills_app.command("list")
def list_(
    db: DbOption = None,
    active: Annotated[bool, typer.Option(help="Only active skills.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List skills with their tool counts."""
    engine = open_engine(db)
    try:
        rows = engine.skills.list(include_inactive=not active)
    finally:
        engine.close()
    if as_json:
        _print([_skill_json(m.skill, tool_count=m.tool_count) for m in rows])
        return
    table = Table(title=f"{len(rows)} skills")
    for column in ("id", "name", "tools", "active", "description"):
        table.add_column(column, overflow="fold")
    for m in rows:
        s = m.skill
        table.add_row(
            escape(s.id),
            escape(s.name),
            str(m.tool_count),
            "yes" if s.is_active else "no",
            escape(s.description[:90]),
        )
    console.print(table)


@skills_app.command()
def show(skill_id: str, db: DbOption = None) -> None:
    """Show one skill (JSON)."""
    engine = open_engine(db)
    try:
        skill = engine.skills.get(skill_id)
        count = next((m.tool_count for m in engine.skills.list() if m.skill.id == skill_id), 0)
    finally:
        engine.close()
    _print(_skill_json(skill, tool_count=count))


@skills_app.command()
def create(
    skill_id: str,
    name: Annotated[str, typer.Option(help="Display name.")],
    description: Annotated[str, typer.Option()] = "",
    keyword: ListOption = None,
    example: ListOption = None,
    parent: Annotated[str | None, typer.Option()] = None,
    db: DbOption = None,
) -> None:
    """Create a skill (id: ^[a-z][a-z0-9_]*$)."""
    engine = open_engine(db)
    try:
        skill = engine.skills.create(
            Skill(skill_id, name, description, tuple(keyword or ()), tuple(example or ()), parent)
        )
    finally:
        engine.close()
    _print(_skill_json(skill))


@skills_app.command()
def update(
    skill_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    description: Annotated[str | None, typer.Option()] = None,
    keyword: ListOption = None,
    example: ListOption = None,
    parent: Annotated[str | None, typer.Option()] = None,
    db: DbOption = None,
) -> None:
    """Change a skill's fields (only those given; lists replace the old ones)."""
    changes: dict[str, Any] = {
        k: v
        for k, v in {"name": name, "description": description, "parent": parent}.items()
        if v is not None
    }
    if keyword is not None:
        changes["keywords"] = keyword
    if example is not None:
        changes["examples"] = example
    if not changes:
        raise SkillError(
            "update: give at least one of --name, --description, --keyword, --example, --parent"
        )
    engine = open_engine(db)
    try:
        skill = engine.skills.update(skill_id, **changes)
    finally:
        engine.close()
    _print(_skill_json(skill))


@skills_app.command()
def deactivate(skill_id: str, db: DbOption = None) -> None:
    """Soft-delete a skill: assignments stay, search leaves it out."""
    engine = open_engine(db)
    try:
        engine.skills.deactivate(skill_id)
    finally:
        engine.close()
    console.print(f"deactivated {skill_id}", markup=False)


@skills_app.command()
def reactivate(skill_id: str, db: DbOption = None) -> None:
    """Bring a deactivated skill back into search."""
    engine = open_engine(db)
    try:
        engine.skills.reactivate(skill_id)
    finally:
        engine.close()
    console.print(f"reactivated {skill_id}", markup=False)


@skills_app.command("import")
def import_(path: Path, db: DbOption = None) -> None:
    """Import a YAML/JSON catalog (new ids created, existing ones updated)."""
    engine = open_engine(db)
    try:
        count = engine.skills.import_file(path)
    finally:
        engine.close()
    console.print(f"imported {count} skills from {path}", markup=False)


@skills_app.command("export")
def export(path: Path, db: DbOption = None) -> None:
    """Export every skill to a YAML (.yaml/.yml) or JSON file."""
    engine = open_engine(db)
    try:
        count = engine.skills.export_file(path)
    finally:
        engine.close()
    console.print(f"exported {count} skills to {path}", markup=False)


@skills_app.command()
def classify(
    db: DbOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Every tool, not only new/changed.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, max=64)] = 4,
    as_json: JsonOption = False,
) -> None:
    """Classify unclassified, failed or changed tools (all with --all)."""
    engine = open_engine(db)
    bar = Progress(
        TextColumn("[bold]classifying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    try:
        with bar:
            task = bar.add_task("classify", total=None, errors=0)
            report = engine.classify(
                all=all_,
                concurrency=concurrency,
                progress=lambda p: bar.update(
                    task, completed=p.processed, total=p.total, errors=p.errors
                ),
            )
    finally:
        engine.close()
    data = {
        "processed": report.processed,
        "total": report.total,
        "errors": report.errors,
        "failed": report.failed,
    }
    if as_json:
        _print(data)
        return
    console.print(f"classified {report.processed}/{report.total}, errors {report.errors}")
    for tool_id in report.failed[:20]:
        console.print(f"  failed {tool_id} (run classify again to retry)", markup=False)


@suggestions_app.command("list")
def suggestions_list(
    db: DbOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Decided ones too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List pending suggestions."""
    engine = open_engine(db)
    try:
        rows = engine.suggestions.all() if all_ else engine.suggestions.pending()
    finally:
        engine.close()
    if as_json:
        _print([_suggestion_json(s) for s in rows])
        return
    table = Table(title=f"{len(rows)} suggestions")
    for column in ("id", "skill", "status", "from tool", "description"):
        table.add_column(column, overflow="fold")
    for s in rows:
        table.add_row(
            str(s.id),
            escape(s.skill_id),
            s.status,
            escape(s.source_tool_id),
            escape(s.description[:80]),
        )
    console.print(table)


@suggestions_app.command("approve")
def suggestions_approve(suggestion_id: int, db: DbOption = None) -> None:
    """Create the proposed skill and re-classify its source tool."""
    engine = open_engine(db)
    try:
        skill = engine.suggestions.approve(suggestion_id)
    finally:
        engine.close()
    _print(_skill_json(skill))


@suggestions_app.command("reject")
def suggestions_reject(
    suggestion_id: int,
    reason: Annotated[str, typer.Option(help="Why (kept with the suggestion).")],
    db: DbOption = None,
) -> None:
    """Reject a suggestion with a reason."""
    engine = open_engine(db)
    try:
        s = engine.suggestions.reject(suggestion_id, reason)
    finally:
        engine.close()
    _print(_suggestion_json(s))


def result_json(result: SearchResult) -> dict[str, Any]:
    """The search contract's result as JSON (the shape the HTTP edge returns)."""
    from toolscout.api.schemas import SearchResponse

    data: dict[str, Any] = SearchResponse.of(result).model_dump(mode="json")
    return data


@app.command()
def find(
    query: Annotated[str, typer.Argument(help="What the agent wants to do.")],
    db: DbOption = None,
    strategy: Annotated[str, typer.Option(help="hierarchical, direct or hybrid.")] = "hierarchical",
    limit: Annotated[int, typer.Option()] = 5,
    skill_limit: Annotated[int, typer.Option()] = 10,
    skill_threshold: Annotated[float, typer.Option()] = 0.1,
    skill_coverage: Annotated[
        float, typer.Option(help="Add skills until they hold the tool with this probability.")
    ] = 0.99,
    tool_threshold: Annotated[float, typer.Option()] = 0.0,
    item_type: Annotated[ItemType | None, typer.Option(help="tool, prompt or resource.")] = None,
    schemas: Annotated[bool, typer.Option("--schemas", help="Include input schemas.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Hierarchical search: matching skills first, then the tools inside them."""
    request = SearchRequest(
        query,
        item_type,
        limit,
        skill_limit,
        skill_threshold,
        tool_threshold,
        schemas,
        parse_strategy(strategy),
        skill_coverage=skill_coverage,
    )
    engine = open_engine(db)
    try:
        result = engine.find(request)
    finally:
        engine.close()
    if as_json:
        _print(result_json(result))
        return
    meta = result.metadata
    skills = escape(", ".join(f"{m.skill.id} {m.score:.2f}" for m in result.matched_skills))
    skills = skills or "none"
    console.print(
        f"skills: {skills}  (searched {100 * meta['searched_fraction']:.0f} % of tools, "
        f"{meta['total_time_ms']:.1f} ms)",
        highlight=False,
    )
    table = Table()
    for column in ("score", "id", "primary skill", "description"):
        table.add_column(column, overflow="fold")
    for h in result.tools:
        table.add_row(
            f"{h.score:.3f}",
            escape(h.tool.id),
            escape(h.primary_skill_id or "-"),
            escape(h.tool.description[:100]),
        )
    console.print(table)
    if result.no_match:
        from toolscout.cli.core import NO_MATCH

        console.print(NO_MATCH, highlight=False)
