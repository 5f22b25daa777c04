"""Fixtures for learning from use: the session's indexed starter catalog (``starter_index``,
tests/conftest.py), copied per test so recorded calls never leak between tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine


@pytest.fixture
def db_copy(starter_index: Path, tmp_path: Path) -> Callable[[str], Path]:
    """A private copy of the indexed starter catalog, named ``name``."""

    def copy(name: str = "index.db") -> Path:
        target = tmp_path / name
        shutil.copyfile(starter_index, target)
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
