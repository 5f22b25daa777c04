"""Fixtures for the serving edges: the session's indexed starter catalog (``starter_index``,
tests/conftest.py), copied per test so writes never leak between tests; the real app over a
real engine."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from support.served import ADMIN, LOOPBACK, Launched, server_env
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine


@pytest.fixture
def served_db(starter_index: Path, tmp_path: Path) -> Path:
    """A private copy of the indexed catalog (the engine checkpoints its WAL on close)."""
    target = tmp_path / "served.db"
    shutil.copyfile(starter_index, target)
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
