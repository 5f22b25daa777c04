"""Fixtures for the serving edges: one indexed copy of the starter catalog per test session,
copied per test so writes never leak between tests; the real app over a real engine."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from support.served import ADMIN, LOOPBACK, Launched, server_env
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile

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
    # TestClient sends "Host: testserver"; a real client sends a loopback name.
    return Settings(
        db=str(served_db), cache_dir=str(vector_cache), api_key=ADMIN, allowed_hosts=["testserver"]
    )


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


@pytest.fixture
def launch(served_db: Path, vector_cache: Path) -> Iterator[Callable[..., Launched]]:
    """Start ``toolscout <args>`` on the test index; every process is stopped afterwards."""
    started: list[Launched] = []

    def start(*args: str, **env: str) -> Launched:
        server = Launched(list(args), server_env(served_db, vector_cache, **env))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
