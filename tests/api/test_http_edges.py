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


def test_provider_formats_define_tools_not_prompts_or_resources(client: TestClient) -> None:
    query = "draft a follow-up message for a thread with no answer"
    plain = client.get("/api/v1/search", params={"query": query, "limit": 10}).json()
    assert "prompt" in {t["type"] for t in plain["tools"]}  # the prompt ranks for it
    for fmt in ("anthropic", "openai"):
        got = client.get("/api/v1/search", params={"query": query, "limit": 10, "format": fmt})
        posted = client.post(f"/api/v1/search?format={fmt}", json={"query": query, "limit": 10})
        for answer in (got.json(), posted.json()):
            assert answer["names"] and "gmail::draft_follow_up" not in answer["names"].values()
