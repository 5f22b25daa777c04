"""``/api/v1/feedback`` through the real app: the admin key is required, ``outcome`` is
validated, and a recorded call is listed, learned from and cleared."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

ADMIN = "admin-key-for-tests"
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}
BODY = {
    "query": "open a PR from feature/search into main",
    "tool_id": "github::create_pull_request",
    "outcome": "success",
}


@pytest.fixture
def client(db_copy: Callable[[str], Path], vector_cache: Path) -> Iterator[TestClient]:
    settings = Settings(
        db=str(db_copy("served.db")),
        cache_dir=str(vector_cache),
        api_key=ADMIN,
        allowed_hosts=["testserver"],
    )
    engine = Engine.open(settings)
    try:
        with TestClient(create_app(engine, settings), client=("127.0.0.1", 50000)) as c:
            yield c
    finally:
        engine.close()


def test_recording_feedback_without_the_admin_key_is_refused(client: TestClient) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = client.post("/api/v1/feedback", json=BODY, headers=headers)
        assert r.status_code == 401
    assert client.get("/api/v1/feedback", headers=ADMIN_HEADERS).json() == []


@pytest.mark.parametrize("outcome", ["maybe", "", None, 1, "SUCCESS"])
def test_outcome_must_be_success_or_error(client: TestClient, outcome: object) -> None:
    r = client.post("/api/v1/feedback", json={**BODY, "outcome": outcome}, headers=ADMIN_HEADERS)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "outcome"


def test_unknown_tool_is_404_and_records_nothing(client: TestClient) -> None:
    r = client.post(
        "/api/v1/feedback", json={**BODY, "tool_id": "nope::missing"}, headers=ADMIN_HEADERS
    )
    assert r.status_code == 404
    assert client.get("/api/v1/feedback", headers=ADMIN_HEADERS).json() == []


def test_recorded_call_is_listed_learned_from_and_cleared(client: TestClient) -> None:
    def top3() -> list[str]:
        found = client.get("/api/v1/search", params={"query": BODY["query"], "limit": 3})
        return [t["id"] for t in found.json()["tools"]]

    assert BODY["tool_id"] not in top3()
    for _ in range(3):
        r = client.post("/api/v1/feedback", json=BODY, headers=ADMIN_HEADERS)
        assert r.status_code == 201 and r.json()["recorded"] is True
    assert BODY["tool_id"] in top3()
    rows = client.get("/api/v1/feedback", headers=ADMIN_HEADERS).json()
    assert len(rows) == 3 and rows[0]["source"] == "api" and rows[0]["query"] == BODY["query"]
    learned = client.get("/api/v1/feedback/learned", headers=ADMIN_HEADERS).json()
    assert learned[0]["tool_id"] == BODY["tool_id"] and learned[0]["success"] == 3
    cleared = client.delete("/api/v1/feedback", headers=ADMIN_HEADERS)
    assert cleared.json() == {"deleted": 3}
    assert BODY["tool_id"] not in top3()
