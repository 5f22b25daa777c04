"""Fixtures for the serving edges: one indexed copy of the starter catalog per test session,
copied per test so writes never leak between tests; the real app over a real engine."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile

ADMIN = "admin-key-for-tests"
LOOPBACK = ("127.0.0.1", 50000)
STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))


@pytest.fixture(scope="session")
def indexed_db(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Path:
    """The starter catalog (~130 tools) indexed once with the real model."""
    path = tmp_path_factory.mktemp("served") / "starter.db"
    engine = Engine.open(Settings(db=str(path), cache_dir=str(vector_cache)))
    try:
        engine.index([CatalogFile(STARTER, source="builtin").read()])
    finally:
        engine.close()
    return path


@pytest.fixture
def served_db(indexed_db: Path, tmp_path: Path) -> Path:
    """A private copy of the indexed catalog (the engine checkpoints its WAL on close)."""
    target = tmp_path / "served.db"
    shutil.copyfile(indexed_db, target)
    return target


@pytest.fixture
def api_settings(served_db: Path, vector_cache: Path) -> Settings:
    return Settings(db=str(served_db), cache_dir=str(vector_cache), api_key=ADMIN)


@pytest.fixture
def api_engine(api_settings: Settings) -> Iterator[Engine]:
    engine = Engine.open(api_settings)
    yield engine
    engine.close()


@pytest.fixture
def client(api_engine: Engine, api_settings: Settings) -> Iterator[TestClient]:
    """The real ASGI app, called from a loopback address."""
    with TestClient(create_app(api_engine, api_settings), client=LOOPBACK) as c:
        yield c


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}
