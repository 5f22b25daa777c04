"""A tool file that cannot be read holds back only its own tool's deletion: every other file
of the same folder (one source) is synced as usual, through the CLI and the library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscout.cli import _register, app
from toolscout.engine import Engine
from toolscout.ingest.pyfile import ToolDirectory
from toolscout.models import Loaded, Problem, Tool
from toolscout.sync.sync import sync

TOOLS = {
    "alpha/one": "Count the words of a text",
    "alpha/two": "Translate a sentence into French",
    "beta/three": "Resize a photo to a given width",
}


def write_tools(root: Path) -> None:
    for where, doc in TOOLS.items():
        path = root / "mcptools" / f"{where}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'def run(text: str):\n    """{doc}"""\n', encoding="utf-8")


def damage(root: Path) -> Path:
    """Break beta/three.py and delete alpha/two.py, as in a working tree mid-edit."""
    broken = root / "mcptools" / "beta" / "three.py"
    broken.write_text("def run(:\n", encoding="utf-8")
    (root / "mcptools" / "alpha" / "two.py").unlink()
    return broken


def test_a_broken_tool_file_keeps_only_its_own_tool_and_other_deletions_proceed(
    engine: Engine, tmp_path: Path
) -> None:
    root = tmp_path / "tools"
    write_tools(root)
    sync(engine, [ToolDirectory(root)])
    assert {t.id for t in engine.store.tools.list_tools()} == {
        "mcptools:alpha:one",
        "mcptools:alpha:two",
        "mcptools:beta:three",
    }
    broken = damage(root)

    summary = sync(engine, [ToolDirectory(root)]).sources[0]

    assert summary.deleted == 1
    assert {t.id for t in engine.store.tools.list_tools()} == {
        "mcptools:alpha:one",
        "mcptools:beta:three",
    }
    assert engine.get_tool("mcptools:beta:three").description == TOOLS["beta/three"]
    assert all(h.tool.id != "mcptools:alpha:two" for h in engine.search("translate French").hits)
    kept = [p for p in summary.problems if p.field == "(prune)"]
    assert [(p.location, "'mcptools:beta:three'" in p.message) for p in kept] == [
        (str(broken), True)
    ]


def test_an_unreadable_entry_that_names_nothing_still_keeps_every_tool_of_its_source(
    engine: Engine,
) -> None:
    tools = [Tool(id=i, name=i, description=f"tool {i}", source="s") for i in ("a", "b", "c")]
    engine.index([Loaded(source="s", tools=tools)], prune=True)
    # A catalog line that does not parse may be any of the tools the listing lost.
    damaged = Loaded(source="s", tools=tools[:1], problems=[Problem("s:2", "(json)", "not JSON")])

    report = engine.index([damaged], prune=True)

    assert report.deleted == 0
    assert {t.id for t in engine.store.tools.list_tools()} == {"a", "b", "c"}


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register()
    return CliRunner()


def test_sync_command_names_the_broken_file_and_the_id_it_kept(
    cli: CliRunner, tmp_path: Path
) -> None:
    root = tmp_path / "tools"
    write_tools(root)
    args = ["sync", "--db", str(tmp_path / "cli.db"), "--tools-dir", str(root), "--json"]
    assert cli.invoke(app, args).exit_code == 0
    broken = damage(root)

    result = cli.invoke(app, args)

    report = json.loads(result.stdout)
    (summary,) = report["sources"]
    assert summary["deleted"] == 1
    kept = [p for p in summary["problems"] if "(prune)" in p]
    assert len(kept) == 1
    assert kept[0].startswith(str(broken)) and "'mcptools:beta:three'" in kept[0]
