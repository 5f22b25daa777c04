"""``toolscout skills ...`` and ``toolscout find`` through the real command line app."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolscout.cli import _register, app, main
from toolscout.engine import Engine

_register()
runner = CliRunner()


def run(*args: str) -> Any:
    """The command's JSON output, parsed (a test narrows it where it reads it)."""
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture
def db(skills_engine: Engine) -> str:
    path = skills_engine.store.url.removeprefix("sqlite:///")
    skills_engine.close()
    return path


def test_find_prints_the_contract_result_as_json(db: str) -> None:
    out = run("find", "send an email to a colleague", "--db", db, "--schemas", "--json")
    assert isinstance(out, dict)
    tools = out["tools"]
    assert isinstance(tools, list) and tools[0]["id"] == "gmail::send_email"
    assert tools[0]["primary_skill_id"] == "email" and tools[0]["input_schema"]["type"] == "object"
    assert out["matched_skills"][0]["id"] == "email"
    assert out["metadata"]["strategy_used"] == "hierarchical"
    only = run("find", "weather terms", "--db", db, "--item-type", "resource", "--json",
               "--strategy", "direct")  # fmt: skip
    assert [t["id"] for t in only["tools"]] == ["docs::weather_glossary"]


def test_skill_commands_create_update_deactivate_and_list(db: str, tmp_path: Path) -> None:
    run("skills", "create", "pet_care", "--name", "Pet care", "--keyword", "dog", "--db", db)
    updated = run("skills", "update", "pet_care", "--description", "Vets.", "--db", db)
    assert isinstance(updated, dict) and updated["description"] == "Vets."
    runner.invoke(app, ["skills", "deactivate", "pet_care", "--db", db], catch_exceptions=False)
    listed = run("skills", "list", "--active", "--json", "--db", db)
    assert "pet_care" not in {row["id"] for row in listed}
    path = tmp_path / "skills.json"
    runner.invoke(app, ["skills", "export", str(path), "--db", db], catch_exceptions=False)
    exported = json.loads(path.read_text(encoding="utf-8"))["skills"]
    assert {"id": "pet_care", "is_active": False}.items() <= next(
        s for s in exported if s["id"] == "pet_care"
    ).items()
    report = run("skills", "classify", "--all", "--json", "--db", db)
    assert isinstance(report, dict) and report["errors"] == 0 and report["total"] > 0


def test_errors_become_a_message_and_an_exit_code(
    db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["toolscout", "find", "x", "--strategy", "fast", "--db", db])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert "strategy: must be one of" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["toolscout", "skills", "show", "nope", "--db", db])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 9
