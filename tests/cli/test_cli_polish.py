"""The CLI a newcomer meets: version, logging, completion, a config file, help that shows what
was written, choices, schemas on request, and an eval table that fits a terminal."""

from __future__ import annotations

import json
import logging
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscout.cli import _register, app

CATALOG: list[dict[str, object]] = [
    {"name": "create_issue", "server": "github", "description": "Open an issue in a repository.",
     "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}},
                     "required": ["title"]}},
    {"name": "get_forecast", "server": "weather", "description": "Weather forecast for a city."},
]  # fmt: skip


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register()
    return CliRunner()


def test_version_prints_the_installed_version(cli: CliRunner) -> None:
    result = cli.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"toolscout {version('toolscout')}"


def test_log_level_is_a_choice_and_v_raises_verbosity(cli: CliRunner) -> None:
    wrong = cli.invoke(app, ["--log-level", "loud", "config", "show"])
    assert wrong.exit_code == 2
    assert "debug" in wrong.output and "warning" in wrong.output
    root = logging.getLogger()
    before = root.level
    try:
        assert cli.invoke(app, ["-vv", "config", "show"]).exit_code == 0
        assert root.level == logging.DEBUG
        assert cli.invoke(app, ["--log-level", "ERROR", "config", "show"]).exit_code == 0
        assert root.level == logging.ERROR
    finally:
        root.setLevel(before)


def test_shell_completion_is_offered(cli: CliRunner) -> None:
    text = cli.invoke(app, ["--help"]).output
    assert "--install-completion" in text and "--show-completion" in text


def test_config_init_writes_the_default_file_that_show_then_reads(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    expected = tmp_path / "xdg" / "toolscout" / "config.toml"
    assert "none" in cli.invoke(app, ["config", "show"]).stdout
    assert cli.invoke(app, ["config", "init"]).exit_code == 0
    assert expected.is_file()
    again = cli.invoke(app, ["config", "init"])
    assert again.exit_code != 0 and str(expected) in str(again.exception)

    expected.write_text('fusion = "rrf"\napi_key = "secret"\n', encoding="utf-8")
    shown = json.loads(cli.invoke(app, ["config", "show", "--json"]).stdout)
    assert shown["config_file"] == str(expected)
    assert (shown["fusion"], shown["api_key"]) == ("rrf", "***")

    expected.write_text('fusion = "bogus"\n', encoding="utf-8")
    bad = cli.invoke(app, ["config", "show"])
    assert bad.exit_code != 0
    assert str(expected) in str(bad.exception) and "fusion" in str(bad.exception)


def test_help_shows_markup_as_written_and_choices_as_choices(cli: CliRunner) -> None:
    create = cli.invoke(app, ["skills", "create", "--help"], terminal_width=200).stdout
    assert "^[a-z][a-z0-9_]*$" in create
    search = cli.invoke(app, ["search", "--help"], terminal_width=200).stdout
    assert "tool|prompt|resource" in search and "bm25|vector|hybrid" in search
    evaluate = cli.invoke(app, ["eval", "--help"], terminal_width=200).stdout
    assert "none|offline|llm" in evaluate
    index = cli.invoke(app, ["index", "--help"], terminal_width=200).stdout
    assert "operation). Unchanged tools are not re-embedded." in index


def test_search_schemas_adds_each_hits_input_schema(cli: CliRunner, tmp_path: Path) -> None:
    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps(CATALOG), encoding="utf-8")
    db = str(tmp_path / "s.db")
    assert cli.invoke(app, ["index", str(catalog), "--db", db]).exit_code == 0
    plain = json.loads(cli.invoke(app, ["search", "report a bug", "--db", db, "--json"]).stdout)
    assert plain["tools"][0]["input_schema"] is None
    args = ["search", "report a bug", "--db", db, "--json", "--schemas", "--limit", "1"]
    full = json.loads(cli.invoke(app, args).stdout)
    assert full["tools"][0]["input_schema"]["required"] == ["title"]


def test_eval_table_fits_80_columns_and_all_shows_every_metric(
    cli: CliRunner, tmp_path: Path
) -> None:
    data = tmp_path / "set"
    data.mkdir()
    tools = [{**t, "id": f"{t['server']}::{t['name']}"} for t in CATALOG]
    (data / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in tools), encoding="utf-8")
    queries = [
        {"id": "q1", "query": "open a bug report", "gold": ["github::create_issue"]},
        {"id": "q2", "query": "will it rain in Oslo", "gold": ["weather::get_forecast"]},
    ]
    (data / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries), "utf-8")
    short = cli.invoke(app, ["eval", str(data)], terminal_width=80)
    assert short.exit_code == 0, short.output
    lines = short.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if "subset" in line)
    assert all(c in header for c in ("recall@1", "recall@5", "hit@3", "ndcg@10"))
    assert any(line.startswith("score calibration error (ECE, 10 bins): ") for line in lines)
    every = cli.invoke(app, ["eval", str(data), "--all"]).stdout.splitlines()
    assert max(len(line) for line in every) <= 80
    metrics = [line.split("│")[1].strip() for line in every if line.count("│") > 2]
    assert metrics == [
        f"{m}@{k}" for m in ("recall", "hit", "complete", "ndcg") for k in (1, 3, 5, 10)
    ]
