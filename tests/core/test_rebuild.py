"""``index --rebuild`` builds beside and swaps at the end: a catalog that does not load or a
model that cannot be opened leaves the current index exactly as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError, IngestError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Skill
from toolscout.sync.rebuild import rebuild_index

OLD = [
    {"name": "create_issue", "server": "github", "description": "Open a new issue."},
    {"name": "get_forecast", "server": "weather", "description": "Weather forecast."},
]
NEW = [{"name": "send_message", "server": "slack", "description": "Post a chat message."}]


def _indexed(settings: Settings, tmp_path: Path) -> Path:
    catalog = tmp_path / "old.json"
    catalog.write_text(json.dumps(OLD), encoding="utf-8")
    engine = Engine.open(settings)
    try:
        engine.index([CatalogFile(catalog).read()])
        engine.skills.create(Skill("quantum_lab", "Quantum lab", "Run quantum experiments."))
    finally:
        engine.close()
    new = tmp_path / "new.json"
    new.write_text(json.dumps(NEW), encoding="utf-8")
    return new


def _ids(settings: Settings) -> list[str]:
    engine = Engine.open(settings)
    try:
        return [t.id for t in engine.list_tools()[0]]
    finally:
        engine.close()


def test_a_rebuild_replaces_the_tools_and_keeps_the_skill_catalog(
    settings: Settings, tmp_path: Path
) -> None:
    new = _indexed(settings, tmp_path)
    report = rebuild_index(settings, [CatalogFile(new).read()])
    assert report.added == 1
    assert _ids(settings) == ["slack::send_message"]
    engine = Engine.open(settings)
    try:
        assert engine.skills.get("quantum_lab").name == "Quantum lab"
    finally:
        engine.close()
    assert not Path(f"{settings.db}.rebuild").exists()


def test_a_model_that_cannot_load_leaves_the_index_as_it_was(
    settings: Settings, tmp_path: Path
) -> None:
    new = _indexed(settings, tmp_path)
    broken = settings.model_copy(update={"embed_model": "local:no-such-model"})
    with pytest.raises(ConfigError):
        rebuild_index(broken, [CatalogFile(new).read()])
    assert _ids(settings) == ["github::create_issue", "weather::get_forecast"]


def test_catalogs_without_a_usable_tool_leave_the_index_as_it_was(
    settings: Settings, tmp_path: Path
) -> None:
    _indexed(settings, tmp_path)
    empty = tmp_path / "bad.jsonl"
    empty.write_text('{"name": ""}\n"not a tool"\n', encoding="utf-8")
    with pytest.raises(IngestError, match="no usable tool"):
        rebuild_index(settings, [CatalogFile(empty).read()])
    assert len(_ids(settings)) == 2


def test_rebuild_with_an_unreadable_catalog_exits_5_and_changes_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    new = _indexed(settings, tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text('{"tools": [', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "toolscout", "index", "--rebuild", str(new), str(broken),
         "--db", settings.db],
        capture_output=True, text=True, timeout=300, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert result.returncode == 5, result.stderr
    assert "left as it was" in " ".join(result.stderr.split())
    assert len(_ids(settings)) == 2
