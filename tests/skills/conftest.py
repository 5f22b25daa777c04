"""Fixtures for the skills tests: a small real catalog indexed once per session with the real
model, the starter skills and the offline classifier; each test gets its own copy of the file."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.skills_catalog import build
from toolscout.config import Settings
from toolscout.engine import Engine


@pytest.fixture(scope="session")
def built_index(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Path:
    """The catalog indexed and classified once; tests copy the file."""
    folder = tmp_path_factory.mktemp("skills-index")
    settings = Settings(db=str(folder / "index.db"), cache_dir=str(vector_cache))
    build(settings).close()
    return folder / "index.db"


@pytest.fixture
def skills_engine(built_index: Path, tmp_path: Path, vector_cache: Path) -> Iterator[Engine]:
    """A private copy of the session's indexed, classified catalog."""
    target = tmp_path / "skills.db"
    shutil.copy(built_index, target)
    engine = Engine.open(Settings(db=str(target), cache_dir=str(vector_cache)))
    yield engine
    engine.close()
