"""Sync that forgets what is gone, one source per file, ids that do not collide silently,
provider-run tools skipped, and searches refused on an index that holds nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from support.mcp_test_servers import Catalog, tool
from toolscout.cli import _register, app
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register()
    return CliRunner()


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _servers_config(path: Path, script: Path, catalogs: dict[str, Catalog]) -> Path:
    servers = {
        name: {"command": sys.executable, "args": [str(script), str(cat.path)]}
        for name, cat in catalogs.items()
    }
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_sync_prune_forgets_a_server_removed_from_the_config(
    cli: CliRunner, tmp_path: Path, server_script: Path
) -> None:
    files, clock = Catalog(tmp_path / "files.json"), Catalog(tmp_path / "clock.json")
    files.write([tool("read_file", "Read a file from disk")])
    clock.write([tool("now", "Current time in a time zone")])
    config = tmp_path / ".mcp.json"
    db = str(tmp_path / "p.db")
    base = ["sync", "--db", db, "--mcp-config", str(config), "--json"]
    _servers_config(config, server_script, {"files": files, "clock": clock})
    first = cli.invoke(app, base)
    assert _json(first)["totals"]["added"] == 2
    # each server is reported as it answers, while the others may still be starting
    assert "mcp:clock: 1 items" in first.stderr
    assert "mcp:files: 1 items" in first.stderr

    _servers_config(config, server_script, {"files": files})
    kept = _json(cli.invoke(app, base))  # without --prune nothing is forgotten
    assert kept["totals"]["deleted"] == 0
    pruned = _json(cli.invoke(app, [*base, "--prune"]))
    by_source = {s["source"]: s for s in pruned["sources"]}
    assert by_source["mcp:clock"]["deleted"] == 1
    info = _json(cli.invoke(app, ["info", "--db", db, "--json"]))
    assert info["sources"] == {"mcp:files": 1}


def test_remove_deletes_by_server_name_or_file_and_lists_valid_names_otherwise(
    cli: CliRunner, tmp_path: Path
) -> None:
    db = str(tmp_path / "r.db")
    weather = tmp_path / "weather.json"
    weather.write_text(json.dumps([tool("forecast", "Weather forecast")]), encoding="utf-8")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([tool("post", "Post a chat message")]), encoding="utf-8")
    _json(cli.invoke(app, ["index", str(weather), "--db", db, "--server", "weather", "--json"]))
    _json(cli.invoke(app, ["index", str(chat), "--db", db, "--json"]))

    assert _json(cli.invoke(app, ["remove", "weather", "--db", db, "--json"])) == {
        "removed": {"weather": 1}
    }
    assert _json(cli.invoke(app, ["remove", str(chat), "--db", db, "--json"]))["removed"] == {
        str(chat): 1
    }
    unknown = cli.invoke(app, ["remove", "nothing-here", "--db", db])
    assert unknown.exit_code != 0
    assert "nothing indexed from 'nothing-here'" in str(unknown.exception)


def test_a_relative_and_an_absolute_path_are_one_source(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "a.db")
    Path("cat.json").write_text(
        json.dumps([tool("a", "First tool"), tool("b", "Second tool")]), encoding="utf-8"
    )
    _json(cli.invoke(app, ["index", "./cat.json", "--db", db, "--json"]))
    Path("cat.json").write_text(json.dumps([tool("a", "First tool")]), encoding="utf-8")
    again = ["index", str(tmp_path / "cat.json"), "--db", db, "--prune", "--json"]
    report = _json(cli.invoke(app, again))
    assert (report["deleted"], report["unchanged"]) == (1, 1)
    info = _json(cli.invoke(app, ["info", "--db", db, "--json"]))
    assert info["sources"] == {str(tmp_path / "cat.json"): 1}


def test_same_name_in_two_files_gives_two_tools_and_a_shared_id_warns(
    engine: Engine, tmp_path: Path
) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    fn = {"type": "function", "function": {"name": "search", "description": "Search the web"}}
    one.write_text(json.dumps([fn]), encoding="utf-8")
    two.write_text(json.dumps([fn]), encoding="utf-8")
    engine.index([CatalogFile(one).read()])
    report = engine.index([CatalogFile(two).read()])
    assert report.warnings == [] and report.added == 1
    assert {t.id for t in engine.store.tools.list_tools()} == {"one::search", "two::search"}

    explicit = {**fn, "id": "web_search"}
    one.write_text(json.dumps([explicit]), encoding="utf-8")
    two.write_text(json.dumps([explicit]), encoding="utf-8")
    engine.index([CatalogFile(one).read()])
    clash = engine.index([CatalogFile(two).read()])
    assert [(w.field, "another source" in w.message) for w in clash.warnings] == [("id", True)]


def test_anthropic_server_tools_are_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "anthropic.json"
    path.write_text(
        json.dumps(
            [
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
                {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                {"name": "get_weather", "description": "Weather", "input_schema": {}},
            ]
        ),
        encoding="utf-8",
    )
    loaded = CatalogFile(path).read()
    assert [t.name for t in loaded.tools] == ["get_weather"]
    assert [p.field for p in loaded.problems] == ["type", "type"]
    assert "Anthropic server tool" in loaded.problems[0].message


def test_search_on_a_missing_index_exits_10_with_a_hint_and_creates_nothing(
    cli: CliRunner, tmp_path: Path
) -> None:
    db = tmp_path / "never.db"
    result = cli.invoke(app, ["search", "weather", "--db", str(db)])
    assert result.exit_code != 0
    assert "index is empty or missing: run `toolscout sync`" in str(result.exception)
    assert not db.exists()


def test_search_on_an_empty_index_exits_10_with_a_hint(cli: CliRunner, tmp_path: Path) -> None:
    import subprocess

    db = str(tmp_path / "empty.db")
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    made = cli.invoke(app, ["index", str(empty), "--db", db])
    assert made.exit_code == 0, made.output
    assert Path(db).is_file()
    # The search runs as a user runs it: its exit status and stderr are the process's own.
    found = subprocess.run(
        [sys.executable, "-m", "toolscout", "search", "weather", "--db", db],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 10
    assert "index is empty or missing: run `toolscout sync`" in found.stderr
    assert "Traceback" not in found.stderr


def test_watch_says_what_it_watches_as_soon_as_it_starts(tmp_path: Path) -> None:
    import subprocess
    import threading

    tools = tmp_path / "ws" / "mcptools" / "notes"
    tools.mkdir(parents=True)
    (tools / "save.py").write_text('def run(text: str):\n    """Save a note."""\n', "utf-8")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolscout",
            "watch",
            "--tools-dir",
            str(tmp_path / "ws"),
            "--db",
            str(tmp_path / "w.db"),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stderr.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=240)
    proc.terminate()
    proc.wait(timeout=60)
    if proc.stderr is not None:
        proc.stderr.close()
    assert first and first[0].startswith("watching 1 sources (")
    assert "Ctrl-C stops" in first[0]
