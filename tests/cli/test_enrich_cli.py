"""``toolscout enrich ...`` through the real command line app (real index, offline enricher)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscout.cli import _register, app

_register()
runner = CliRunner()

CATALOG = {
    "tools": [
        {"name": "create_issue", "description": "Create a new issue."},
        {"name": "delete_issue", "description": "Delete an issue."},
        {"name": "list_issues", "description": "List issues of a repo."},
    ]
}


def run(*args: str) -> dict[str, object]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def _indexed(tmp_path: Path) -> str:
    catalog = tmp_path / "tracker.json"
    catalog.write_text(json.dumps(CATALOG), encoding="utf-8")
    db = str(tmp_path / "cli.db")
    run("index", str(catalog), "--server", "tracker", "--db", db, "--json")
    return db


def test_index_enriches_by_default_and_enrich_reuses_or_remakes_it(tmp_path: Path) -> None:
    db = _indexed(tmp_path)  # the default enrich setting (offline) enriched while indexing
    again = run("enrich", "--db", db, "--json")
    assert again["tools"] == {"cached": 3, "made": 0, "failed": 0}
    assert again["reindexed"] == 0
    forced = run("enrich", "server", "tracker", "--db", db, "--json")
    assert forced["tools"] == {"cached": 0, "made": 3, "failed": 0}
    status = run("enrich", "status", "tracker", "--db", db, "--json")
    assert status["tool_states"] == {"fresh": 3, "stale": 0, "failed": 0, "missing": 0}
    stats = run("enrich", "stats", "--enricher", "offline", "--db", db, "--json")
    assert stats["llm_tokens_stored"] == 0


def test_enrich_with_enrichment_off_exits_with_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _indexed(tmp_path)
    monkeypatch.setenv("TOOLSCOUT_ENRICH", "none")
    proc = subprocess.run(
        [sys.executable, "-c", "from toolscout.cli import main; main()", "enrich", "--db", db],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "enrichment is off" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_enricher_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["enrich", "stats", "--enricher", "gpt", "--db", "x.db"])
    assert result.exit_code == 2
    assert "--enricher" in result.output
