"""Shedding answers at once: a search the gate has no room for is refused with 503 ``overloaded``
and ``Retry-After`` before its body is parsed, on a connection that stays open for the retry;
excess load is never queued past the gate's queue, and never answered by a reset."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import anyio
import pytest
from fastapi.testclient import TestClient

from support.served import LOOPBACK, Launched, occupied
from toolscout.api.gate import SearchGate
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import Overloaded

#: Client connections against one search slot and no queue: nearly all of them are excess.
CLIENTS = 32
#: Searches each client sends, one after another on its one connection.
ROUNDS = 4
JSON = {"Content-Type": "application/json"}
QUERIES = [
    "send an email to a colleague",
    "create a calendar event",
    "search the web for news",
    "read a file from disk",
    "post a message to a chat channel",
    "convert currency amounts",
    "get the weather forecast",
    "open a pull request",
]


def test_a_search_without_room_is_refused_before_its_body_is_parsed(
    api_engine: Engine, api_settings: Settings
) -> None:
    gate = SearchGate(api_engine, 1, queue=0, wait_s=1.0, retry_after=2)
    app = create_app(api_engine, api_settings, gate=gate)
    held, release = threading.Event(), threading.Event()
    not_json = b'{"query": "send an email"'  # parsed, this body would be a 400
    with TestClient(app, client=LOOPBACK) as c:
        c.portal.start_task_soon(occupied(gate, held, release))  # type: ignore[union-attr]
        assert held.wait(30)
        shed = c.post("/api/v1/search", content=not_json, headers=JSON)
        stage = c.get("/api/v1/search/tools", params={"query": "email", "limit": 999})
        listing = c.get("/api/v1/tools", params={"limit": 1})  # not a search: never shed
        release.set()
        parsed = c.post("/api/v1/search", content=not_json, headers=JSON)
    assert shed.status_code == 503, shed.text
    assert shed.headers["retry-after"] == "2" and shed.json()["error"]["code"] == "overloaded"
    assert shed.headers.get("connection") != "close"  # the body was read: the retry reuses it
    assert stage.status_code == 503  # refused before its invalid limit was looked at
    assert listing.status_code == 200
    # Once there is room, the same body is parsed and refused as the JSON it is not.
    assert parsed.status_code == 422 and parsed.json()["error"]["code"] != "overloaded"
    assert gate.shed == 2


def test_a_search_that_would_miss_its_deadline_is_refused_at_once_not_at_the_deadline(
    api_engine: Engine,
) -> None:
    # Searches have held their slot 6 s each: with 30 s deadlines the first two to wait can
    # expect a slot within half of it (6 s, 12 s), a third (18 s) cannot, and is told so now
    # instead of waiting in the queue (the message says which refusal it got).
    gate = SearchGate(api_engine, 1, queue=8, wait_s=30.0, retry_after=1)
    gate.observe(6.0)
    held, release = threading.Event(), threading.Event()
    outcomes: list[str] = []

    async def main() -> None:
        async def wait_for_slot(name: str) -> None:
            outcomes.append(await gate.run(lambda: name))

        async with anyio.create_task_group() as tg:
            tg.start_soon(occupied(gate, held, release))
            while not held.is_set():
                await anyio.sleep(0.01)
            for name in ("second", "third"):
                tg.start_soon(wait_for_slot, name)
                await anyio.wait_all_tasks_blocked()
            assert gate.waiting == 2 and gate.expected_wait() == 18.0
            with pytest.raises(Overloaded, match="too close to its 30 s deadline"):
                await gate.run(lambda: "fourth")
            release.set()

    anyio.run(main)
    assert outcomes == ["second", "third"] and gate.shed == 1


def _client(url: str, index: int) -> list[tuple[int, str | None, str]]:
    """One keep-alive connection sending ROUNDS searches; (status, Retry-After, code) each."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    answers = []
    try:
        for n in range(ROUNDS):
            query = f"{QUERIES[(index + n) % len(QUERIES)]} number {index * ROUNDS + n}"
            body = json.dumps({"query": query})
            conn.request("POST", "/api/v1/search", body, headers=JSON)
            response = conn.getresponse()
            payload = json.loads(response.read())
            code = payload["error"]["code"] if response.status != 200 else "ok"
            answers.append((response.status, response.getheader("Retry-After"), code))
    finally:
        conn.close()
    return answers


def test_excess_searches_on_a_real_server_get_503_with_retry_after_and_no_reset(
    launch: Callable[..., Launched],
) -> None:
    server = launch(
        "serve",
        "--port",
        "0",
        TOOLSCOUT_SEARCH_THREADS="1",
        TOOLSCOUT_SEARCH_QUEUE="0",
        TOOLSCOUT_SEARCH_QUEUE_TIMEOUT="30",
        TOOLSCOUT_RESULT_CACHE_SIZE="0",
    )
    # A connection reset or a dropped connection raises here (http.client does not retry).
    with ThreadPoolExecutor(CLIENTS) as pool:
        runs = list(pool.map(lambda i: _client(server.url, i), range(CLIENTS)))
    answers = [a for run in runs for a in run]
    statuses = {status for status, _, _ in answers}
    shed = [a for a in answers if a[0] == 503]
    print(f"{len(answers)} searches: {len(answers) - len(shed)} answered, {len(shed)} shed")
    assert len(answers) == CLIENTS * ROUNDS  # every request answered on its own connection
    assert statuses <= {200, 503}, statuses
    assert shed, "no search was shed with one slot, no queue and 32 clients"
    assert all(retry == "1" and code == "overloaded" for _, retry, code in shed), shed[:3]
    assert 200 in statuses  # the slot kept serving while the excess was refused
