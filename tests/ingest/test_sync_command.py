"""``toolscout sync`` over an MCP config, a tool folder and a catalog, through the real CLI app."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support.mcp_test_servers import CRASH_SCRIPT, Catalog, tool
from toolscout.cli import _register, app

RUN_CLI = "import sys; from toolscout.cli import main; sys.argv[0] = 'toolscout'; main()"


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register()
    return CliRunner()


def test_sync_reports_each_source_and_exits_5_when_one_failed(
    cli: CliRunner, tmp_path: Path, server_script: Path, catalog: Catalog
) -> None:
    catalog.write([tool("read_file", "Read a file"), tool("write_file", "Write a file")])
    crash = tmp_path / "crash.py"
    crash.write_text(CRASH_SCRIPT, encoding="utf-8")
    config = tmp_path / ".mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {
                        "command": sys.executable,
                        "args": [str(server_script), str(catalog.path)],
                    },
                    "broken": {"command": sys.executable, "args": [str(crash)]},
                    "typo": {"args": ["no command"]},
                }
            }
        ),
        encoding="utf-8",
    )
    tools = tmp_path / "tools" / "mcptools" / "text"
    tools.mkdir(parents=True)
    (tools / "shout.py").write_text('def run(s: str):\n    """Upper-case a text."""\n', "utf-8")
    cat_file = tmp_path / "extra.json"
    cat_file.write_text(json.dumps([tool("ping", "Ping a host")]), encoding="utf-8")
    db = tmp_path / "cli.db"
    args = ["sync", "--db", str(db), "--mcp-config", str(config)]
    args += ["--tools-dir", str(tmp_path / "tools"), str(cat_file), "--json"]

    result = cli.invoke(app, args)
    assert result.exit_code == 5, result.output
    report = json.loads(result.stdout)
    by_source = {s["source"]: s for s in report["sources"]}
    assert by_source["mcp:files"]["added"] == 2
    assert by_source[f"tools:{(tmp_path / 'tools').resolve()}"]["added"] == 1
    assert by_source[str(cat_file.resolve())]["added"] == 1
    assert "TOKEN is not set" in by_source["mcp:broken"]["error"]
    assert any("'typo'" in p and "command" in p for p in report["problems"])

    again = json.loads(cli.invoke(app, args).stdout)
    assert again["totals"]["embedded"] == 0
    assert again["totals"]["unchanged"] == 4


def test_sync_without_any_source_says_how_to_give_one(cli: CliRunner, tmp_path: Path) -> None:
    result = cli.invoke(app, ["sync", "--db", str(tmp_path / "x.db")])
    assert result.exit_code != 0
    assert "no sources" in str(result.exception)


def test_a_missing_tools_dir_is_refused_up_front(cli: CliRunner, tmp_path: Path) -> None:
    result = cli.invoke(app, ["watch", "--db", str(tmp_path / "x.db"), "--tools-dir", "nope"])
    assert result.exit_code != 0
    assert "no such directory" in str(result.exception)


def _ctrl_c_as_in_a_terminal() -> None:
    """A child inherits an ignored SIGINT, and some library of the suite leaves the test process
    ignoring it; a terminal's Ctrl-C reaches a process whose SIGINT is at its default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_watch_command_reports_changes_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    tools = tmp_path / "tools" / "mcptools" / "text"
    tools.mkdir(parents=True)
    (tools / "shout.py").write_text('def run(s: str):\n    """Upper-case a text."""\n', "utf-8")
    args = ["watch", "--db", str(tmp_path / "w.db"), "--tools-dir", str(tmp_path / "tools")]
    # Its own vector cache: the process is killed on failure, and must not share a cache file
    # with the rest of the suite. PYTHONFAULTHANDLER: a SIGABRT on timeout dumps every thread.
    env = {
        **os.environ,
        "COLUMNS": "400",
        "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONFAULTHANDLER": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN_CLI, *args, "--debounce-ms", "50"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    def wait_for(text: str) -> None:
        seen: list[str] = []
        while True:
            try:
                line = lines.get(timeout=60)
            except queue.Empty:
                pytest.fail(f"no {text!r} on stderr within 60 s; saw {seen}")
            seen.append(line)
            if text in line:
                return

    try:
        wait_for("added 1")
        (tools / "whisper.py").write_text(
            'def run(s: str):\n    """Lower-case a text."""\n', "utf-8"
        )
        wait_for("added 1")
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints where each thread is
            proc.wait(timeout=30)
            reader.join(timeout=30)
            stacks = "".join(lines.queue)
            pytest.fail(f"watch did not stop within 30 s of Ctrl-C; its threads:\n{stacks}")
        assert code == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        reader.join(timeout=30)  # ends at EOF, now that the process is gone
        if proc.stderr is not None:
            proc.stderr.close()


def test_sync_expands_a_catalog_folder_like_index_does(cli: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "catalogs"
    (folder / "nested").mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps([tool("ping", "Ping a host")]), "utf-8")
    nested = folder / "nested" / "b.jsonl"
    nested.write_text(json.dumps(tool("traceroute", "Trace a route")) + "\n", "utf-8")
    (folder / "notes.txt").write_text("not a catalog", "utf-8")
    result = cli.invoke(app, ["sync", "--db", str(tmp_path / "f.db"), str(folder), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    added = {s["source"]: s["added"] for s in report["sources"]}
    assert added == {str((folder / "a.json").resolve()): 1, str(nested.resolve()): 1}
