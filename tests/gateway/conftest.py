"""Fixtures for the gateway tests: real upstream MCP servers (``upstream_server.py`` and the
published ``mcp-server-time`` / ``mcp-server-git`` from requirements-dev.lock), indexed once
per session with the real model; a fresh copy of that index per test."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.rest_app import serving
from support.upstreams import git_spec, make_repo, time_spec, upstream_spec
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.mcp import McpSource
from toolscout.ingest.openapi import OpenApiSource


@pytest.fixture(scope="session")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("gitrepo") / "repo")


@pytest.fixture(scope="session")
def gateway_index(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path, repo: Path) -> Path:
    """The test upstream, mcp-server-time and mcp-server-git, synced once."""
    path = tmp_path_factory.mktemp("gateway") / "index.db"
    engine = Engine.open(Settings(db=str(path), cache_dir=str(vector_cache)))
    try:
        engine.index([McpSource(s).read() for s in (upstream_spec(), time_spec(), git_spec(repo))])
    finally:
        engine.close()
    return path


@pytest.fixture
def gateway_settings(gateway_index: Path, tmp_path: Path, vector_cache: Path) -> Settings:
    target = tmp_path / "index.db"
    shutil.copyfile(gateway_index, target)
    return Settings(db=str(target), cache_dir=str(vector_cache))


@pytest.fixture
def gw_engine(gateway_settings: Settings) -> Iterator[Engine]:
    engine = Engine.open(gateway_settings)
    yield engine
    engine.close()


@pytest.fixture
def mcp_config(tmp_path: Path, repo: Path) -> Callable[..., Path]:
    """Write a Claude-Desktop-shaped config naming the upstream servers."""

    def write(**extra: Any) -> Path:
        servers = {}
        for spec in (upstream_spec(), time_spec(), git_spec(repo)):
            servers[spec.name] = {"command": spec.command, "args": list(spec.args)}
        servers.update(extra)
        path = tmp_path / "claude_desktop_config.json"
        path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    """The REST test app (tests/support/rest_app.py) served for a module; its base URL."""
    with serving() as url:
        yield url


@pytest.fixture
def shop_engine(engine: Engine, shop: str) -> Engine:
    engine.index([OpenApiSource(f"{shop}/openapi.json").read()])
    return engine
