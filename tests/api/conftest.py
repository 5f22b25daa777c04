"""Fixtures for the serving edges: one indexed copy of the starter catalog per test session,
copied per test so writes never leak between tests; the real app over a real engine."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
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


RUNNING = re.compile(r"Uvicorn running on (http://\S+:\d+)")
TOOLSCOUT = str(Path(sys.executable).with_name("toolscout"))


def server_env(db: Path, cache: Path, **extra: str) -> dict[str, str]:
    """The environment of a served subprocess: this venv, the test index and cache only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCOUT_")}
    env.update(TOOLSCOUT_DB=str(db), TOOLSCOUT_CACHE_DIR=str(cache), TOOLSCOUT_EMBED_THREADS="1")
    env.update(extra)
    return env


class Launched:
    """A real server process started by a test; ``url`` is read from its startup line."""

    def __init__(self, args: list[str], env: dict[str, str], timeout: float = 90.0) -> None:
        self.proc = subprocess.Popen(
            [TOOLSCOUT, *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        found: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(found,), daemon=True)
        self._reader.start()
        try:
            self.url = found.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"server did not start in {timeout}s: {''.join(self.log)}") from None

    def _read(self, found: queue.Queue[str]) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            match = RUNNING.search(line)
            if match:
                found.put(match.group(1))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        # The reader ends at the pipe's EOF once the process is gone; then the pipe is closed.
        self._reader.join(timeout=20)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


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
