"""Fixtures for the ingest tests: real MCP servers (see ``support.mcp_test_servers``)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.mcp_test_servers import SERVER_SCRIPT, Catalog
from toolscout.ingest.mcpconfig import ServerSpec


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "test_mcp_server.py"
    path.write_text(SERVER_SCRIPT, encoding="utf-8")
    return path


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(tmp_path / "server_catalog.json")
    cat.write([])
    return cat


@pytest.fixture
def stdio_spec(server_script: Path, catalog: Catalog) -> Callable[..., ServerSpec]:
    def make(name: str = "files", timeout: float = 20.0) -> ServerSpec:
        return ServerSpec(
            name=name,
            transport="stdio",
            command=sys.executable,
            args=(str(server_script), str(catalog.path)),
            timeout=timeout,
        )

    return make


def _serve(server_script: Path, catalog: Catalog, transport: str, path: str) -> Iterator[str]:
    """Run the test server over HTTP on a free port (it binds port 0 and prints the port)."""
    proc = subprocess.Popen(
        [sys.executable, str(server_script), str(catalog.path), transport],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    port: list[str] = []
    reader = threading.Thread(target=lambda: port.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=30)
    try:
        if not port or not port[0].strip():
            proc.kill()
            raise RuntimeError(f"test MCP server did not start: {proc.communicate()[1][-2000:]}")
        yield f"http://127.0.0.1:{port[0].strip()}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def http_url(server_script: Path, catalog: Catalog) -> Iterator[str]:
    """The test server over streamable HTTP."""
    yield from _serve(server_script, catalog, "http", "/mcp")


@pytest.fixture
def sse_url(server_script: Path, catalog: Catalog) -> Iterator[str]:
    """The test server over the older HTTP+SSE transport."""
    yield from _serve(server_script, catalog, "sse", "/sse")
