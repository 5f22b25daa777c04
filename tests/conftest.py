"""Shared fixtures: real SQLite files in tmp dirs, the real packaged embedding model."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import pytest

from support.postgres import running_postgres
from support.shared_bench import shared_set
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile

DATA = Path(__file__).parent / "data"
STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))


@pytest.fixture(scope="session")
def vector_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache per test session (each pytest-xdist worker has its own): a text is
    embedded with the real model once per worker."""
    return tmp_path_factory.mktemp("vector-cache")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """Base URL of a running PostgreSQL with pgvector (support/postgres.py), for the store
    contract suite and the fault suite alike: one server per session (per pytest-xdist
    worker)."""
    with running_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def starter_index(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Path:
    """The built-in starter catalog (~130 tools) indexed once with the real model, for the API,
    console and feedback tests alike. Tests copy the file; none opens this one."""
    path = tmp_path_factory.mktemp("starter") / "starter.db"
    engine = Engine.open(Settings(db=str(path), cache_dir=str(vector_cache)))
    try:
        engine.index([CatalogFile(STARTER, source="builtin").read()])
    finally:
        engine.close()
    return path


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, vector_cache: Path) -> None:
    for key in list(os.environ):
        if key.startswith("TOOLSCOUT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TOOLSCOUT_CACHE_DIR", str(vector_cache))
    monkeypatch.setenv("TOOLSCOUT_DB", str(tmp_path / "default.db"))
    monkeypatch.setenv("TOOLSCOUT_REPORTS_DIR", str(tmp_path / "reports"))


@pytest.fixture
def settings(tmp_path: Path, vector_cache: Path) -> Settings:
    return Settings(db=str(tmp_path / "index.db"), cache_dir=str(vector_cache))


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    eng = Engine.open(settings)
    yield eng
    eng.close()


def write_json(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


@pytest.fixture
def shared_bench() -> Callable[[str], Path]:
    """``shared_bench("toolbench_stable")`` -> the dataset folder (see :func:`shared_set`)."""
    return shared_set
