"""REST details a client relies on: health under the API prefix too, and ``metadata.cached``
always a boolean."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_health_answers_under_the_api_prefix_too(client: TestClient) -> None:
    root = client.get("/health")
    prefixed = client.get("/api/v1/health")
    assert root.status_code == prefixed.status_code == 200
    assert prefixed.json()["status"] == root.json()["status"] == "ok"


def test_metadata_cached_is_false_then_true(client: TestClient) -> None:
    body = {"query": "send an email to a colleague", "limit": 3}
    first = client.post("/api/v1/search", json=body).json()["metadata"]
    again = client.post("/api/v1/search", json=body).json()["metadata"]
    assert first["cached"] is False
    assert again["cached"] is True
