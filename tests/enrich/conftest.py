"""Fixtures for the enrichment tests: a real SQLite store in a temp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolscout.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(f"sqlite:///{tmp_path / 'enrich.db'}")
    yield s
    s.close()
