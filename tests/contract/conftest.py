"""The store contract suite's fixtures: a fresh schema of the session's PostgreSQL
(``postgres_url``, tests/conftest.py) per test, and the same store on every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.backends import open_backend, qdrant_url, with_options
from support.postgres import fresh_schema
from toolscout.store.base import Store


@pytest.fixture
def pg_url(postgres_url: str) -> str:
    """A URL to a fresh, empty schema of its own."""
    return fresh_schema(postgres_url)


@pytest.fixture
def url_with() -> Callable[..., str]:
    """``url_with(url, **options)``: a URL with store options added."""
    return with_options


@pytest.fixture
def qdrant_vectors() -> Callable[[Path], str]:
    """``qdrant_vectors(folder)``: a ``vectors`` URL for a new Qdrant leg (see qdrant_url)."""
    return qdrant_url


@pytest.fixture(
    params=[
        "sqlite",
        "sqlite_ann",
        "sqlite_lex",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("qdrant", marks=pytest.mark.postgres),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same contract, on a real SQLite file (with the exact vector leg and FTS5, with the
    Qdrant Edge shard forced on at any size, and with the in-memory posting index answering
    the lexical leg at any size), on a real PostgreSQL schema, and on PostgreSQL with a
    Qdrant vector leg (Qdrant Edge in process)."""
    url = request.getfixturevalue("pg_url") if not request.param.startswith("sqlite") else None
    backend = open_backend(request.param, tmp_path, url)
    yield backend
    backend.close()
