"""The core engine on a real SQLite file with the real packaged model."""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError, QueryError, ToolNotFound
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import IndexReport, ItemType, SearchMode
from toolscout.store.base import IndexIdentity
from toolscout.store.sqlite import SQLiteStore

CATALOG = [
    {
        "name": "create_issue",
        "server": "github",
        "description": "Open a new issue in a repository's tracker.",
    },
    {
        "name": "list_pull_requests",
        "server": "github",
        "description": "List open pull requests of a repository.",
    },
    {"name": "send_message", "server": "slack", "description": "Post a chat message to a channel."},
    {
        "name": "get_forecast",
        "server": "weather",
        "description": "Weather forecast for a city for the next days.",
    },
    {
        "name": "create_event",
        "server": "calendar",
        "description": "Add an event with attendees to a calendar.",
    },
    {
        "name": "read_file",
        "server": "files",
        "description": "Read the contents of a file from disk.",
    },
    {
        "name": "summarize",
        "server": "files",
        "item_type": "prompt",
        "description": "Prompt: summarise a document.",
    },
]


def _catalog(
    tmp_path: Path, entries: Sequence[Mapping[str, object]] = CATALOG, name: str = "c.json"
) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def _index(engine: Engine, path: Path, *, prune: bool = False) -> IndexReport:
    return engine.index([CatalogFile(path).read()], prune=prune)


def test_paraphrased_request_finds_the_right_tool(engine: Engine, tmp_path: Path) -> None:
    _index(engine, _catalog(tmp_path))
    assert engine.search("file a bug in the repo", limit=3).hits[0].tool.name == "create_issue"
    assert (
        engine.search("will it rain in Berlin tomorrow", limit=3).hits[0].tool.name
        == "get_forecast"
    )


def test_every_mode_returns_sorted_scores_in_unit_range(engine: Engine, tmp_path: Path) -> None:
    _index(engine, _catalog(tmp_path))
    for mode in SearchMode:
        hits = engine.search("post a message in a channel", mode=mode, limit=5).hits
        assert hits, mode
        scores = [h.score for h in hits]
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert hits[0].tool.name == "send_message"


def test_exact_tool_name_in_any_spelling_comes_first(engine: Engine, tmp_path: Path) -> None:
    _index(engine, _catalog(tmp_path))
    for query in ("list_pull_requests", "listPullRequests", "list-pull-requests"):
        assert engine.search(query, limit=3).hits[0].tool.name == "list_pull_requests"


def test_reindexing_unchanged_catalog_embeds_nothing(engine: Engine, tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    first = _index(engine, path)
    assert (first.added, first.embedded) == (len(CATALOG), len(CATALOG))
    again = _index(engine, path)
    assert (again.added, again.updated, again.unchanged, again.embedded) == (0, 0, len(CATALOG), 0)
    changed = [dict(e) for e in CATALOG]
    changed[0]["description"] = "Report a defect to the project's issue tracker."
    report = _index(engine, _catalog(tmp_path, changed))
    assert (report.updated, report.unchanged, report.embedded) == (1, len(CATALOG) - 1, 1)


def test_bad_entries_are_skipped_and_nothing_indexed_is_lost(
    engine: Engine, tmp_path: Path
) -> None:
    _index(engine, _catalog(tmp_path))
    broken = [{"name": "new_tool", "description": "A fresh tool."}, {"description": "nameless"}]
    report = _index(engine, _catalog(tmp_path, broken, "broken.json"))
    assert report.added == 1 and len(report.skipped) == 1
    assert report.skipped[0].field == "name" and "broken.json[1]" in report.skipped[0].location
    assert engine.store.count() == len(CATALOG) + 1


def test_prune_deletes_what_a_source_no_longer_lists(engine: Engine, tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    _index(engine, path)
    path.write_text(json.dumps(CATALOG[:2]), encoding="utf-8")
    report = _index(engine, path, prune=True)
    assert report.deleted == len(CATALOG) - 2
    with pytest.raises(ToolNotFound):
        engine.get_tool("slack::send_message")


def test_filters_restrict_every_mode(engine: Engine, tmp_path: Path) -> None:
    _index(engine, _catalog(tmp_path))
    for mode in SearchMode:
        hits = engine.search("post an issue", mode=mode, servers=["slack"]).hits
        assert {h.tool.server for h in hits} == {"slack"}
        prompts = engine.search("summarise a document", mode=mode, item_type="prompt").hits
        assert [h.tool.item_type for h in prompts] == [ItemType.PROMPT]
    assert engine.search("open an issue", sources=["nowhere"]).hits == []
    assert engine.search("open an issue", servers=["github"]).hits


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "NEAR(a b)",
        "*",
        "-",
        "issue -bug",
        "a OR b AND NOT c",
        "'; DROP TABLE tools; --",
        "tools_fts MATCH 'x'",
        "^^^",
        "名前",
        "\x00",
    ],
)
def test_fts_syntax_and_sql_in_queries_never_raise(
    engine: Engine, tmp_path: Path, query: str
) -> None:
    _index(engine, _catalog(tmp_path))
    for mode in SearchMode:
        engine.search(query, mode=mode)
    assert engine.store.count() == len(CATALOG)


def test_bad_requests_name_the_field(engine: Engine) -> None:
    cases = [
        (dict(query=""), "query"),
        (dict(query="   "), "query"),
        (dict(query="x" * 1001), "query"),
        (dict(query="x", limit=0), "limit"),
        (dict(query="x", limit=51), "limit"),
        (dict(query="x", mode="fuzzy"), "mode"),
        (dict(query="x", item_type="widget"), "item_type"),
    ]
    for kwargs, field in cases:
        with pytest.raises(QueryError) as info:
            engine.search(**kwargs)  # type: ignore[arg-type]
        assert info.value.field == field
    engine.search("x" * 1000)  # the limit itself is allowed


def test_ties_are_broken_by_id(engine: Engine, tmp_path: Path) -> None:
    twins = [
        {"name": n, "server": "s", "description": "Identical twin description."}
        for n in ("b_tool", "a_tool")
    ]
    _index(engine, _catalog(tmp_path, twins))
    hits = engine.search("identical twin description", mode=SearchMode.VECTOR).hits
    tied = [h for h in hits if h.score == hits[0].score]
    assert [h.tool.id for h in tied] == sorted(h.tool.id for h in tied)


def test_index_built_with_another_model_refuses_to_open(settings: Settings, tmp_path: Path) -> None:
    engine = Engine.open(settings)
    engine.close()
    store = SQLiteStore(settings.db)
    with pytest.raises(ConfigError, match="rebuild"):
        store.bind(IndexIdentity("other-model", 768, "a3"))
    store.close()
    store = SQLiteStore(settings.db)
    store.set_meta(
        "identity", json.dumps({"embedder": "other-model", "dim": 768, "analyzer": "a3"})
    )
    store.close()
    with pytest.raises(ConfigError, match=r"other-model.*index --rebuild"):
        Engine.open(settings)


def test_store_is_wal_with_a_schema_version(engine: Engine) -> None:
    store = engine.store
    assert isinstance(store, SQLiteStore)
    assert store.get_meta("schema_version") is not None
    mode = store.database.query("PRAGMA journal_mode")[0][0]
    assert mode == "wal"


def test_schemas_come_back_with_their_parameter_order(engine: Engine, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {}}}
    _index(engine, _catalog(tmp_path, [{"name": "ordered", "inputSchema": schema}]))
    assert engine.get_tool("c::ordered").parameter_names() == ["zeta", "alpha"]
