"""Fixtures for the web console: a real server on a free port over an indexed starter catalog,
and headless Chromium (Debian's package) driven by Playwright.

The browser is never optional in CI: without it the tests fail there, and skip (saying why)
only on a developer's machine that lacks the package.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from support.console import ADMIN, Served, chromium_path
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

#: How long the server may take to start (its own ``started`` flag is polled).
START_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def console_settings() -> dict[str, Any]:
    """Settings the served console takes besides its defaults (a test module overrides this)."""
    return {}


@pytest.fixture
def served(
    starter_index: Path, tmp_path: Path, vector_cache: Path, console_settings: dict[str, Any]
) -> Iterator[Served]:
    """The real app under uvicorn on a free loopback port, on a private copy of the index."""
    db = tmp_path / "console.db"
    shutil.copyfile(starter_index, db)
    settings = Settings(
        db=str(db),
        cache_dir=str(vector_cache),
        api_key=ADMIN,
        reports_dir=str(tmp_path / "reports"),
        **console_settings,
    )
    engine = Engine.open(settings)
    app = create_app(engine, settings)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="console-server", daemon=True)
    thread.start()
    ticks = threading.Event()
    try:
        waited = 0.0
        while not server.started and thread.is_alive() and waited < START_TIMEOUT:
            ticks.wait(0.05)
            waited += 0.05
        assert server.started, "the console server did not start"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield Served(f"http://127.0.0.1:{port}", engine, settings)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        engine.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium from the Debian package (fails in CI when missing, never skips).

    Module-scoped: Playwright's sync API keeps an asyncio loop running in the main thread while
    it is open, and a session-wide one broke every later test that runs a loop of its own.
    """
    path = chromium_path()
    if path is None:
        message = "Debian's chromium is not installed (scripts/setup --dev installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=path, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page, 1280x900; fails on JavaScript errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
