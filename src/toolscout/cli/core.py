"""Core commands: index, search, info, eval."""

from __future__ import annotations

import json
import tempfile
import time
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from toolscout.api.schemas import SearchResponse
from toolscout.cli import app, console, err_console
from toolscout.cli.options import SQLITE, DbOption, JsonOption, missing_file, open_engine
from toolscout.cli.options import settings as _settings
from toolscout.cli.progress import embedding_bar, peak_rss_mb
from toolscout.errors import IngestError
from toolscout.eval.reports import report_payload, write_report
from toolscout.eval.run import Report, evaluate, index_dataset
from toolscout.formats import GroupBy, ProviderFormat, render
from toolscout.ingest.jsonfile import CatalogFile, catalog_files
from toolscout.ingest.openapi import OpenApiSource
from toolscout.ingest.openapi_documents import OPENAPI_CACHE, DocumentCache, is_url
from toolscout.ingest.sources import Source
from toolscout.models import IndexReport, ItemType, Loaded, SearchMode, Strategy
from toolscout.search.request import check_query
from toolscout.sync.rebuild import rebuild_index

BUILTIN = "starter_catalog.json"


class GroupChoice(StrEnum):
    """How ``--format openai-responses`` groups tools into namespaces."""

    SERVER = "server"
    SKILL = "skill"


class EnrichMode(StrEnum):
    NONE = "none"
    OFFLINE = "offline"
    LLM = "llm"


def _progress() -> Progress:
    return embedding_bar()


def _print_report(report: IndexReport, as_json: bool, took: float | None = None) -> None:
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
        return
    console.print(
        f"added [green]{report.added}[/], updated [yellow]{report.updated}[/], "
        f"unchanged {report.unchanged}, deleted {report.deleted}, "
        f"skipped [red]{len(report.skipped)}[/]"
    )
    if took is not None and report.embedded:
        console.print(
            f"embedded {report.embedded:,} in {took:.1f} s "
            f"({report.embedded / max(took, 1e-9):,.0f} tools/s); "
            f"peak memory {peak_rss_mb():,.0f} MB",
            highlight=False,
        )
    for problem in report.skipped[:50]:
        console.print(f"  skipped {problem}", highlight=False, markup=False)
    if len(report.skipped) > 50:
        console.print(f"  ... and {len(report.skipped) - 50} more")
    for problem in report.warnings[:50]:
        console.print(f"  warning {problem}", highlight=False, markup=False)


def _read_catalogs(
    paths: list[str], *, builtin: bool, server: str | None, cache_dir: str
) -> tuple[list[Loaded], int]:
    """Read every named catalog; ``(listings, how many could not be read at all)``.

    Raises:
        IngestError: nothing named, or a path that does not exist.
    """
    urls = [p for p in paths if is_url(p)]
    files = catalog_files([Path(p) for p in paths if not is_url(p)])
    if builtin:
        files.append(Path(str(resources.files("toolscout.data").joinpath(BUILTIN))))
    if not files and not urls:
        raise IngestError("index: give catalog files or folders, OpenAPI URLs, or --builtin")
    cache = DocumentCache(Path(cache_dir) / OPENAPI_CACHE)
    sources: list[Source] = [OpenApiSource(url, api=server, cache=cache) for url in urls]
    for file in files:
        name = "builtin" if file.name == BUILTIN and builtin else None
        sources.append(CatalogFile(file, server=server, source=name))
    loads: list[Loaded] = []
    unusable = 0
    for source in sources:
        try:
            loads.append(source.read())
        except IngestError as exc:
            unusable += 1
            err_console.print(f"[red]skipped file[/] {escape(str(exc))}", highlight=False)
    return loads, unusable


@app.command()
def index(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Catalog files or folders, OpenAPI documents or their URLs."),
    ] = None,
    db: DbOption = None,
    builtin: Annotated[bool, typer.Option(help="Index the built-in starter catalog.")] = False,
    server: Annotated[
        str | None,
        typer.Option(help="Server name for entries without one (an OpenAPI document's API name)."),
    ] = None,
    prune: Annotated[bool, typer.Option(help="Delete tools these files no longer list.")] = False,
    rebuild: Annotated[
        bool,
        typer.Option(
            help="Build a new index from these files beside the current one and swap it in "
            "at the end (e.g. after changing the model); the current one stays until then."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Index catalog files (MCP tools/list, OpenAI, Anthropic or JSONL tools) and OpenAPI
    documents (a file or an http(s) URL: one tool per operation). Unchanged tools are not
    re-embedded. Exits 5 when a catalog could not be read at all; the tools it had are kept."""
    loads, unusable = _read_catalogs(
        list(paths or []), builtin=builtin, server=server, cache_dir=_settings(db).cache_dir
    )
    if rebuild and unusable:
        # A rebuild replaces the whole index: never start one from a partial catalog.
        raise IngestError(
            f"index --rebuild: {unusable} catalog file(s) could not be read; the index "
            "was left as it was. Fix or leave out those files and run it again."
        )
    started = time.perf_counter()
    with _progress() as bar:
        task = bar.add_task("embed", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        if rebuild:
            report = rebuild_index(_settings(db), loads, progress=progress)
        else:
            engine = open_engine(db)
            try:
                report = engine.index(loads, prune=prune, progress=progress)
            finally:
                engine.close()
    _print_report(report, as_json, time.perf_counter() - started)
    if unusable:
        # As for `sync`: the readable files were indexed, the unusable ones kept their tools.
        raise typer.Exit(5)


#: What the CLI prints under a result flagged ``no_match``.
NO_MATCH = (
    "no suitable tool: no indexed tool is likely to serve this request"
    " (the tools above, if any, are the closest; see min_score)"
)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What the agent wants to do.")],
    db: DbOption = None,
    strategy: Annotated[
        Strategy, typer.Option(help="direct (every tool), hierarchical (skills first), hybrid.")
    ] = Strategy.DIRECT,
    mode: Annotated[SearchMode, typer.Option(help="Retrieval legs.")] = SearchMode.HYBRID,
    limit: Annotated[int, typer.Option(min=1, max=50)] = 5,
    min_score: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Drop tools below this calibrated probability of fitting."
        ),
    ] = 0.0,
    server: Annotated[list[str] | None, typer.Option(help="Only these servers.")] = None,
    source: Annotated[list[str] | None, typer.Option(help="Only these sources.")] = None,
    item_type: Annotated[ItemType | None, typer.Option(help="tool, prompt or resource.")] = None,
    schemas: Annotated[bool, typer.Option("--schemas", help="Include input schemas.")] = False,
    as_json: JsonOption = False,
    fmt: Annotated[
        ProviderFormat | None,
        typer.Option(
            "--format",
            help="Print the found tools as one provider's tool definitions (JSON).",
        ),
    ] = None,
    group_by: Annotated[
        GroupChoice | None,
        typer.Option(help="With --format openai-responses: namespaces by server or skill."),
    ] = None,
) -> None:
    """Search the index (``--json`` prints the REST API's search response, ``--format`` the
    tools as Anthropic or OpenAI definitions; exits 10 with a hint when the index is empty or
    missing)."""
    check_query(query)  # a usage error comes first, whatever the index holds
    if fmt is not None and item_type is None:
        item_type = ItemType.TOOL  # provider shapes define tools a model calls
    engine = open_engine(db, must_exist=True)
    try:
        result = engine.search(
            query,
            strategy=strategy,
            mode=mode,
            limit=limit,
            min_score=min_score,
            item_type=item_type,
            servers=server,
            sources=source,
            # Provider shapes carry each tool's input schema: load them with the search.
            include_schemas=schemas or fmt is not None,
        )
        if not result.tools:
            engine.ensure_indexed()
    finally:
        engine.close()
    if fmt is not None:
        grouping: GroupBy | None = None
        if group_by is not None:
            grouping = "server" if group_by is GroupChoice.SERVER else "skill"
        console.print_json(json.dumps(render(result, fmt, group_by=grouping)))
        return
    if as_json:
        console.print_json(SearchResponse.of(result).model_dump_json())
        return
    total = result.metadata["total_time_ms"]
    title = f"{query!r} ({strategy.value}, {mode.value}, {total:.1f} ms)"
    table = Table(title=escape(title))
    for column in ("score", "id", "description"):
        table.add_column(column, overflow="fold")
    for hit in result.tools:
        table.add_row(f"{hit.score:.3f}", escape(hit.tool.id), escape(hit.tool.description[:120]))
    console.print(table)
    if result.no_match:
        console.print(NO_MATCH, highlight=False)
    for hit in result.tools if schemas else ():
        console.print(f"[bold]{escape(hit.tool.id)}[/] input schema:", highlight=False)
        console.print_json(json.dumps(hit.schema or hit.tool.input_schema or {}))


@app.command()
def info(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Show counts, model and store location (an index that does not exist is not created)."""
    missing = missing_file(db)
    if missing is None:
        engine = open_engine(db)
        try:
            data = engine.info()
        finally:
            engine.close()
    else:
        # The model and settings still answer; a throwaway index stands in for the missing one.
        with tempfile.TemporaryDirectory() as scratch:
            engine = open_engine(str(Path(scratch) / "index.db"))
            try:
                data = engine.info()
            finally:
                engine.close()
        data["store"] = SQLITE + missing
        data["exists"] = False
    if as_json:
        console.print_json(json.dumps(data))
        return
    for key, value in data.items():
        console.print(f"[bold]{key}[/]: {escape(str(value))}", highlight=False)


#: The eval table's columns by default: readable in 80 columns (``--all`` shows every metric).
EVAL_COLUMNS = ("recall@1", "recall@5", "hit@3", "complete@5", "ndcg@10")
ALL_EVAL_COLUMNS = tuple(
    f"{m}@{k}" for m in ("recall", "hit", "complete", "ndcg") for k in (1, 3, 5, 10)
)


def _print_eval(report: Report, every_metric: bool) -> None:
    title = escape(f"{report.dataset} ({report.mode}, {report.queries} queries)")
    groups = [("ALL", report.overall), *report.groups.items()]
    rows = [(escape(name), metrics) for name, metrics in groups]
    if every_metric:  # one row per metric, one column per subset: still fits a terminal
        table = Table(title=title)
        table.add_column("metric")
        for name, _ in rows:
            table.add_column(name, justify="right", overflow="fold")
        for metric in ALL_EVAL_COLUMNS:
            table.add_row(metric, *(f"{100 * m[metric]:.1f}" for _, m in rows))
    else:
        table = Table(title=title)
        for c in ("subset", *EVAL_COLUMNS):
            table.add_column(c, justify="right", overflow="fold")
        for name, metrics in rows:
            table.add_row(name, *(f"{100 * metrics[c]:.1f}" for c in EVAL_COLUMNS))
    console.print(table)
    lat = ", ".join(f"{k} {v:.1f} ms" for k, v in report.latency_ms.items())
    console.print(f"search latency: {lat}", highlight=False)
    if report.calibration:
        errs = ", ".join(
            f"{name} {report.calibration[key]['ece']:.3f}"
            f" (floor {report.calibration[key].get('floor', 0.0):.3f})"
            for key, name in (("top1", "first hit"), ("top5", "first five"))
        )
        # The floor: the error exact probabilities would show on this many hits.
        console.print(f"score calibration error (ECE, 10 bins): {errs}", highlight=False)


@app.command("eval")
def eval_(
    set_dir: Annotated[Path, typer.Argument(help="Folder with tools.jsonl and queries.jsonl.")],
    db: DbOption = None,
    mode: Annotated[SearchMode, typer.Option()] = SearchMode.HYBRID,
    reuse: Annotated[
        bool, typer.Option(help="Search the --db index as it is (no indexing).")
    ] = False,
    tools: Annotated[
        Path | None,
        typer.Option(help="Catalog to index (default: SET_DIR/tools.jsonl)."),
    ] = None,
    group: Annotated[str | None, typer.Option(help="Query field to report per subset.")] = None,
    run_file: Annotated[
        Path | None, typer.Option(help="Write each query's ranking (JSONL).")
    ] = None,
    enrich: Annotated[
        EnrichMode | None,
        typer.Option(help="Enrichment while indexing (default: the setting).", show_default=False),
    ] = None,
    report_dir: Annotated[
        Path | None,
        typer.Option(help="Folder for the report file (default: the reports_dir setting)."),
    ] = None,
    label: Annotated[str | None, typer.Option(help="A note stored in the report.")] = None,
    every_metric: Annotated[
        bool, typer.Option("--all", help="Show every metric at 1, 3, 5 and 10 (one row each).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Measure recall/hit/complete/nDCG@1,3,5,10 and latency on a dataset, and write a report
    file (JSON, read by the web console)."""
    s = _settings(db, enrich=enrich.value if enrich else None)
    with tempfile.TemporaryDirectory(prefix="toolscout-eval-") as tmp:
        engine = open_engine(
            db if (db or reuse) else str(Path(tmp) / "eval.db"),
            enrich=enrich.value if enrich else None,
        )
        try:
            if not reuse:
                with _progress() as bar:
                    task = bar.add_task("embedding", total=None)
                    index_dataset(
                        engine,
                        set_dir,
                        lambda d, t: bar.update(task, completed=d, total=t),
                        tools=tools,
                    )
            report = evaluate(engine, set_dir, mode=mode, group_field=group, run_file=run_file)
            info = engine.info()
        finally:
            engine.close()
    described = {k: info.get(k) for k in ("embedder", "query_encoder", "fusion", "analyzer")}
    payload = report_payload([report], engine=described, label=label)
    path = write_report(report_dir or Path(s.reports_dir), payload)
    if as_json:
        console.print_json(json.dumps({**report.to_dict(), "report_file": str(path)}))
    else:
        _print_eval(report, every_metric)
        console.print(f"report: {path}", highlight=False, markup=False)
