"""HTTP hardening: what a request must pass before any route runs (Host, key, body size), the
minimal health answer for remote callers, and load shedding when searches queue up."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from support.served import ADMIN, LOOPBACK, Launched, occupied
from toolscout.api.gate import SearchGate
from toolscout.api.guard import host_name
from toolscout.api.http import create_app
from toolscout.api.mcp import create_mcp_server
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import Overloaded
from toolscout.models import SearchRequest, Strategy

REMOTE = ("203.0.113.7", 50000)


def _call(
    app: Any, method: str, path: str, headers: dict[str, str], body: bytes
) -> tuple[int, dict[str, Any], int]:
    """Call the ASGI app directly; returns status, JSON body and how often it read the body."""
    reads = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": REMOTE,
        "server": ("127.0.0.1", 8765),
        "state": {},
    }
    anyio.run(app, scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return int(start["status"]), json.loads(payload), reads


def test_an_unauthenticated_body_is_refused_before_it_is_read(
    api_engine: Engine, api_settings: Settings
) -> None:
    app = create_app(api_engine, api_settings)
    body = json.dumps({"id": "x", "name": "y"}).encode()
    headers = {"host": "localhost", "content-type": "application/json"}
    headers["content-length"] = str(len(body))
    status, payload, reads = _call(app, "POST", "/api/v1/skills", headers, body)
    assert status == 401 and payload["error"]["code"] == "unauthorized"
    assert reads == 0
    # A remote search without the read key is refused the same way, body unread.
    status, payload, reads = _call(app, "POST", "/api/v1/search", headers, b'{"query": "x"}')
    assert status == 403 and reads == 0


def test_a_body_over_the_limit_is_refused_with_413(
    client: TestClient, admin_headers: dict[str, str], api_engine: Engine, api_settings: Settings
) -> None:
    big = b'{"query": "' + b"a" * (api_settings.max_body_bytes + 1) + b'"}'
    response = client.post("/api/v1/search", content=big, headers=admin_headers)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"

    def chunks() -> Any:  # no Content-Length: the guard counts what arrives
        for _ in range(3):
            yield b"x" * (api_settings.max_body_bytes // 2)

    response = client.post("/api/v1/skills", content=chunks(), headers=admin_headers)
    assert response.status_code == 413


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1.nip.io"])
def test_a_host_header_outside_the_allow_list_is_refused(
    api_engine: Engine, api_settings: Settings, host: str
) -> None:
    app = create_app(api_engine, api_settings.model_copy(update={"allowed_hosts": []}))
    with TestClient(app, client=LOOPBACK, base_url=f"http://{host}") as c:
        response = c.get("/api/v1/tools")
    assert response.status_code == 421
    assert response.json()["error"]["field"] == "Host"
    for name in ("localhost:8765", "127.0.0.1", "[::1]:8765"):
        with TestClient(app, client=LOOPBACK, base_url=f"http://{name}") as c:
            assert c.get("/api/v1/tools").status_code == 200, name


def test_allowed_hosts_extends_the_list_and_a_star_allows_any(
    api_engine: Engine, api_settings: Settings
) -> None:
    named = create_app(api_engine, api_settings.model_copy(update={"allowed_hosts": ["tools.lan"]}))
    with TestClient(named, client=LOOPBACK, base_url="http://tools.lan:8765") as c:
        assert c.get("/api/v1/tools").status_code == 200
    anyone = create_app(api_engine, api_settings.model_copy(update={"allowed_hosts": ["*"]}))
    with TestClient(anyone, client=LOOPBACK, base_url="http://whatever.example") as c:
        assert c.get("/api/v1/tools").status_code == 200


def test_host_name_strips_ports_and_brackets() -> None:
    assert host_name("LocalHost:8765") == "localhost"
    assert host_name("[::1]:8765") == "::1"
    assert host_name("::1") == "::1"
    assert host_name("example.com") == "example.com"


def test_remote_health_shows_the_status_alone(
    api_engine: Engine, api_settings: Settings, client: TestClient
) -> None:
    with TestClient(create_app(api_engine, api_settings), client=REMOTE) as remote:
        brief = remote.get("/health")
        keyed = remote.get("/health", headers={"Authorization": f"Bearer {ADMIN}"})
    assert brief.status_code == 200 and brief.json() == {"status": "ok"}
    assert "store" in keyed.json() and "pid" in keyed.json()
    assert "store" in client.get("/health").json()  # loopback callers see everything


def _slot_taken(gate: SearchGate) -> bool:
    return gate._limiters()[0].borrowed_tokens > 0


def test_searches_beyond_the_queue_are_shed_with_retry_after(api_engine: Engine) -> None:
    gate = SearchGate(api_engine, 1, queue=1, wait_s=30.0, retry_after=2)
    release = threading.Event()
    outcomes: list[str] = []

    async def main() -> None:
        async def one(fn: Callable[[], str]) -> None:
            try:
                outcomes.append(await gate.run(fn))
            except Overloaded as exc:
                outcomes.append(f"shed after {exc.retry_after}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, lambda: "first" if release.wait(30) else "timeout")
            while gate.waiting or not _slot_taken(gate):
                await anyio.sleep(0.01)  # until the first holds the slot
            tg.start_soon(one, lambda: "second")
            while gate.waiting == 0:
                await anyio.sleep(0.01)  # until the second waits
            await one(lambda: "third")  # queue full: answered at once
            release.set()

    anyio.run(main)
    assert outcomes == ["shed after 2", "first", "second"]
    assert gate.shed == 1


def test_a_search_waiting_past_its_deadline_is_shed(api_engine: Engine) -> None:
    gate = SearchGate(api_engine, 1, queue=8, wait_s=0.2)
    release = threading.Event()
    outcomes: list[str] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def hold() -> None:
                outcomes.append(await gate.run(lambda: "held" if release.wait(30) else "-"))

            tg.start_soon(hold)
            while not _slot_taken(gate):
                await anyio.sleep(0.01)
            with pytest.raises(Overloaded, match=r"within 0\.2 s"):
                await gate.find(SearchRequest("send an email", strategy=Strategy.DIRECT))
            release.set()

    anyio.run(main)
    assert outcomes == ["held"]
    assert gate.shed == 1


def test_overloaded_answers_503_with_retry_after(
    api_engine: Engine, api_settings: Settings
) -> None:
    gate = SearchGate(api_engine, 1, queue=0, wait_s=1.0, retry_after=3)
    app = create_app(api_engine, api_settings, gate=gate)
    held, release = threading.Event(), threading.Event()
    with TestClient(app, client=LOOPBACK) as c:
        # Occupy the one slot from the app's own event loop, then ask for a search.
        c.portal.start_task_soon(occupied(gate, held, release))  # type: ignore[union-attr]
        assert held.wait(30)
        response = c.get("/api/v1/search", params={"query": "send an email"})
        skills = c.get("/api/v1/search/skills", params={"query": "send an email"})
        # The web console's searches take the same slots (its pages without a search do not).
        console = c.get("/", params={"q": "send an email"})
        catalog = c.get("/catalog", params={"q": "email"})
        listing = c.get("/catalog")
        release.set()
        metrics = c.get("/metrics").text
        after = c.get("/", params={"q": "send an email"})
    assert response.status_code == 503 and skills.status_code == 503
    assert console.status_code == 503 and catalog.status_code == 503, console.text
    assert "retry in 3 s" in console.text and listing.status_code == 200
    assert after.status_code == 200 and "gmail" in after.text
    assert 'toolscout_searches{kind="shed"} 4.0' in metrics, metrics
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["code"] == "overloaded"


def test_the_mcp_door_sheds_a_search_with_a_tool_error_saying_when_to_retry(
    api_engine: Engine,
) -> None:
    """The same gate serves MCP: a shed search is a tool error the model can act on."""
    gate = SearchGate(api_engine, 1, queue=0, wait_s=1.0, retry_after=4)
    held, release = threading.Event(), threading.Event()

    async def main() -> Any:
        async with Client(create_mcp_server(api_engine, gate=gate)) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(occupied(gate, held, release))
                while not held.is_set():
                    await anyio.sleep(0.01)
                result = await client.call_tool("search_tools", {"query": "send an email"})
                release.set()
            return result

    result = anyio.run(main)
    assert result.is_error
    text = result.content[0].text
    assert "overloaded: " in text and "retry in 4 s" in text


def test_a_client_that_never_finishes_its_headers_is_disconnected(
    launch: Callable[..., Launched],
) -> None:
    server = launch("serve", "--host", "0.0.0.0", "--port", "0", TOOLSCOUT_HEADER_TIMEOUT="1")
    log = "".join(server.log)
    assert "WARNING: serving on 0.0.0.0" in log and "No read key" in log
    port = urlsplit(server.url).port
    assert port is not None
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        sock.settimeout(30)  # a bound for the test, far above the 1 s header deadline
        assert sock.recv(1024) == b""  # closed by the server, nothing answered
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")
