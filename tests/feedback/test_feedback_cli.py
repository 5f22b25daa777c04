"""``toolscout feedback list|learned|clear`` and the counts in ``toolscout info``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from toolscout.cli import _register, app
from toolscout.config import Settings
from toolscout.engine import Engine

RIGHT = "github::create_pull_request"


def test_feedback_commands_list_count_and_clear_recorded_calls(
    db_copy: Callable[[str], Path], vector_cache: Path
) -> None:
    db = db_copy("cli.db")
    with Engine.open(Settings(db=str(db), cache_dir=str(vector_cache))) as engine:
        engine.feedback.record("open a PR into main", RIGHT, "success")
        engine.feedback.record("open a PR into main", RIGHT, "error")
    _register()
    cli = CliRunner()

    listed = cli.invoke(app, ["feedback", "list", "--db", str(db), "--json"])
    assert listed.exit_code == 0, listed.output
    assert [r["outcome"] for r in json.loads(listed.output)] == ["error", "success"]

    learned = cli.invoke(app, ["feedback", "learned", "--db", str(db), "--json"])
    assert json.loads(learned.output)[0] == {
        "tool_id": RIGHT, "success": 1, "error": 1, "requests": ["open a PR into main"],
    }  # fmt: skip

    info = cli.invoke(app, ["info", "--db", str(db), "--json"])
    counts = json.loads(info.output)["feedback"]
    assert (counts["rows"], counts["success"], counts["error"]) == (2, 1, 1)

    refused = cli.invoke(app, ["feedback", "clear", "--db", str(db)], input="n\n")
    assert refused.exit_code == 1
    cleared = cli.invoke(app, ["feedback", "clear", "--db", str(db), "--yes"])
    assert cleared.exit_code == 0 and "deleted 2" in cleared.output
    after = cli.invoke(app, ["info", "--db", str(db), "--json"])
    assert json.loads(after.output)["feedback"]["rows"] == 0
