"""Fixtures for learning from use: the starter catalog indexed once per session with the real
model, copied per test so recorded calls never leak between tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile

STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))


@pytest.fixture(scope="session")
def starter_db(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Path:
    path = tmp_path_factory.mktemp("feedback") / "starter.db"
    engine = Engine.open(Settings(db=str(path), cache_dir=str(vector_cache)))
    try:
        engine.index([CatalogFile(STARTER, source="builtin").read()])
    finally:
        engine.close()
    return path


@pytest.fixture
def db_copy(starter_db: Path, tmp_path: Path) -> Callable[[str], Path]:
    """A private copy of the indexed starter catalog, named ``name``."""

    def copy(name: str = "index.db") -> Path:
        target = tmp_path / name
        shutil.copyfile(starter_db, target)
        return target

    return copy


@pytest.fixture
def open_copy(
    db_copy: Callable[[str], Path], vector_cache: Path
) -> Iterator[Callable[..., Engine]]:
    """Open an engine over a fresh copy (keyword arguments are settings)."""
    opened: list[Engine] = []

    def open_(name: str = "index.db", **settings: object) -> Engine:
        engine = Engine.open(
            Settings(db=str(db_copy(name)), cache_dir=str(vector_cache), **settings)  # type: ignore[arg-type]
        )
        opened.append(engine)
        return engine

    yield open_
    for engine in opened:
        engine.close()


@pytest.fixture
def engine(open_copy: Callable[..., Engine]) -> Engine:
    return open_copy()
