"""``toolscout migrate`` copies a real SQLite index into PostgreSQL, vectors and all, and
``toolscout db upgrade`` reports the schema version."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from toolscout.cli import _register, app
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.store.postgres.migrations import SCHEMA_VERSION

pytestmark = pytest.mark.postgres
STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register()
    return CliRunner()


def test_migrate_copies_tools_vectors_and_skills(
    cli: CliRunner, tmp_path: Path, pg_url: str, vector_cache: Path
) -> None:
    tools = json.loads(STARTER.read_text("utf-8"))[:25]
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(tools), encoding="utf-8")
    lite = tmp_path / "old.db"
    source = Engine.open(Settings(db=str(lite), cache_dir=str(vector_cache)))
    try:
        source.index([CatalogFile(catalog, source="starter").read()])
        before = {q: [h.tool.id for h in source.search(q).hits] for q in ("read a file", "git")}
        ids = sorted(source.store.tools.hashes())
        vectors = source.store.vectors(ids)
        assignments = source.store.skills.assignments(ids)
    finally:
        source.close()

    result = cli.invoke(app, ["migrate", "--from", str(lite), "--to", pg_url, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["tools"] == len(ids) == 25
    assert report["text_differs"] == 0
    assert report["assignments"] == sum(len(v) for v in assignments.values()) > 0

    target = Engine.open(Settings(db=pg_url, cache_dir=str(vector_cache)))
    try:
        assert sorted(target.store.tools.hashes()) == ids
        copied = target.store.vectors(ids)
        for tool_id, vector in vectors.items():
            np.testing.assert_array_equal(copied[tool_id], vector)
        assert target.store.skills.assignments(ids) == assignments
        after = {q: [h.tool.id for h in target.search(q).hits] for q in before}
        assert after == before
    finally:
        target.close()

    upgraded = cli.invoke(app, ["db", "upgrade", "--db", pg_url, "--json"])
    assert upgraded.exit_code == 0, upgraded.output
    assert json.loads(upgraded.output)["schema_version"] == str(SCHEMA_VERSION)


def test_migrate_from_a_missing_file_changes_nothing(cli: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    result = cli.invoke(app, ["migrate", "--from", str(missing), "--to", str(tmp_path / "x.db")])
    assert result.exit_code != 0
    assert "no such index file" in str(result.exception)
    assert not missing.exists() and not (tmp_path / "x.db").exists()
