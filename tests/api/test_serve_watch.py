"""End to end: ``toolscout serve --watch`` keeps the served index in sync with a tool folder."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from support.served import Launched

TOOL = '''
def run(city: str) -> str:
    """{doc}"""
    return city
'''
ID = "mcptools:zephyr:gust_meter"


def _wait_for(http: httpx.Client, query: str, text: str, server: Launched) -> None:
    """Poll the served search until the tool's description contains ``text`` (60 s at most)."""
    deadline = time.monotonic() + 60
    last: object = None
    while time.monotonic() < deadline:
        try:  # several workers listen only once they have started, after the startup line
            found = http.get("/api/v1/search", params={"query": query, "limit": 10})
        except httpx.ConnectError as exc:
            last = exc
            time.sleep(0.2)
            continue
        hits = found.json()["tools"]
        last = [(h["id"], h["description"]) for h in hits]
        if any(h["id"] == ID and text in h["description"] for h in hits):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not served in 60 s; last hits {last}; log {server.log}")


def _free_port() -> str:
    """A port free now (with several workers uvicorn would report port 0 itself)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


@pytest.mark.parametrize("workers", ["1", "2"])  # 2: the watcher runs in the supervisor
def test_serve_watch_syncs_tool_files(
    launch: Callable[..., Launched], tmp_path: Path, workers: str
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    port = "0" if workers == "1" else _free_port()
    server = launch(
        "serve", "--watch", "--tools-dir", str(tools), "--port", port, "--workers", workers
    )
    tool = tools / "mcptools" / "zephyr" / "gust_meter.py"
    tool.parent.mkdir(parents=True)
    with httpx.Client(base_url=server.url, timeout=60) as http:
        tool.write_text(TOOL.format(doc="Measure quixotic zephyr gusts over a city."))
        _wait_for(http, "quixotic zephyr gusts", "quixotic zephyr", server)
        tool.write_text(TOOL.format(doc="Measure flamboyant zephyr gusts over a city."))
        _wait_for(http, "flamboyant zephyr gusts", "flamboyant zephyr", server)
