"""Enrichment routes through the real app over the indexed starter catalog (offline enricher)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from toolscout.engine import Engine

SERVER = "gmail"


def _poll(client: TestClient, job_id: str, headers: dict[str, str]) -> dict[str, Any]:
    """The job's state once it has finished (bounded: about 60 s)."""
    body: dict[str, Any] = {}
    for _ in range(600):
        r = client.get(f"/api/v1/enrichment/jobs/{job_id}", headers=headers)
        assert r.status_code == 200, r.text
        body = r.json()
        if body["status"] != "running":
            return body
        time.sleep(0.1)
    pytest.fail(f"sync job still running: {body}")


def test_status_is_readable_without_a_key(client: TestClient, api_engine: Engine) -> None:
    r = client.get(f"/api/v1/enrichment/server/{SERVER}/status")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body == api_engine.enrichment_service.enrichment_status(SERVER)
    assert body["server"] == SERVER
    assert body["tools"] > 0
    assert set(body["tool_states"]) == {"fresh", "stale", "failed", "missing"}


def test_stats_are_readable_without_a_key(client: TestClient) -> None:
    r = client.get("/api/v1/enrichment/stats")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["enricher"] is not None
    assert "stored" in body


@pytest.mark.parametrize(
    "path", [f"/api/v1/enrichment/server/{SERVER}/profile", "/api/v1/enrichment/sync"]
)
def test_writes_are_refused_without_the_admin_key(client: TestClient, path: str) -> None:
    r = client.post(path)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


def test_profile_regeneration_with_the_admin_key(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    r = client.post(f"/api/v1/enrichment/server/{SERVER}/profile", headers=admin_headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["server"] == SERVER
    assert body["profiles"]["made"] == 1
    assert body["tools"]["made"] > 0
    assert "reindexed" in body
    status = client.get(f"/api/v1/enrichment/server/{SERVER}/status").json()
    assert status["profile"]["state"] == "fresh"


def test_unknown_server_is_named_in_the_error(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    r = client.post("/api/v1/enrichment/server/no-such-server/profile", headers=admin_headers)
    assert r.status_code == 404  # the path names it, as for an unknown tool or skill
    error = r.json()["error"]
    assert error["code"] == "server_not_found"
    assert error["field"] == "server"
    assert "no-such-server" in error["message"]


def test_sync_job_runs_to_completion(client: TestClient, admin_headers: dict[str, str]) -> None:
    r = client.post("/api/v1/enrichment/sync", headers=admin_headers)
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["status"] in ("running", "done")
    done = _poll(client, job["id"], admin_headers)
    assert done["status"] == "done", done
    assert done["processed"] == done["total"]
    assert done["errors"] == 0
    assert done["finished_at"] is not None


def test_unknown_sync_job_is_404(client: TestClient, admin_headers: dict[str, str]) -> None:
    r = client.get("/api/v1/enrichment/jobs/nope", headers=admin_headers)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "job_not_found"
