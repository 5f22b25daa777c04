"""Hierarchical search and the skill catalog through the real app (the starter skills)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from toolscout.engine import Engine
from toolscout.models import SearchRequest, Strategy

EMAIL_QUERY = "send an email to a colleague"


def _error(response: Any) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


def test_hierarchical_search_answers_the_contract(client: TestClient, api_engine: Engine) -> None:
    r = client.post(
        "/api/v1/search",
        json={"query": EMAIL_QUERY, "include_schemas": True, "strategy": "hierarchical"},
    )
    assert r.status_code == 200
    body = r.json()
    expected = api_engine.find(
        SearchRequest(EMAIL_QUERY, include_schemas=True, strategy=Strategy.HIERARCHICAL)
    )
    assert [t["id"] for t in body["tools"]] == [h.tool.id for h in expected.tools]
    assert [s["id"] for s in body["matched_skills"]] == [
        m.skill.id for m in expected.matched_skills
    ]
    top = body["tools"][0]
    assert {
        "id",
        "db_id",
        "type",
        "name",
        "description",
        "score",
        "skill_ids",
        "primary_skill_id",
        "input_schema",
    } <= set(top)
    assert top["input_schema"]["type"] == "object"
    meta = body["metadata"]
    assert meta["strategy_used"] == "hierarchical"
    for key in (
        "skill_ids_used", "stage1_skill_count", "stage2_candidate_count", "final_count",
        "query_embedding_time_ms", "skill_search_time_ms", "tool_search_time_ms",
        "schema_load_time_ms", "total_time_ms",
    ):  # fmt: skip
        assert key in meta


def test_schemas_are_left_out_unless_asked(client: TestClient) -> None:
    body = client.post("/api/v1/search", json={"query": EMAIL_QUERY}).json()
    assert body["tools"]
    assert all(t["input_schema"] is None for t in body["tools"])


def test_direct_strategy_matches_no_skills(client: TestClient) -> None:
    body = client.post("/api/v1/search", json={"query": EMAIL_QUERY, "strategy": "direct"}).json()
    assert body["matched_skills"] == []
    assert body["metadata"]["strategy_used"] == "direct"


def test_search_stage_timings_reach_the_metrics(client: TestClient) -> None:
    client.post("/api/v1/search", json={"query": EMAIL_QUERY})
    text = client.get("/metrics").text
    assert 'toolscout_search_stage_duration_seconds_count{stage="total"} 1.0' in text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x", "skill_threshold": 1.5}, "skill_threshold"),
        ({"query": "x", "tool_threshold": -0.1}, "tool_threshold"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "x", "strategy": "shotgun"}, "strategy"),
        ({"query": "x", "item_type": "gadget"}, "item_type"),
        ({"query": "x", "colour": "red"}, "colour"),
        ({"limit": 3}, "query"),
    ],
)
def test_invalid_search_request_is_422_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    r = client.post("/api/v1/search", json=body)
    assert r.status_code == 422
    assert _error(r)["field"] == field


def test_empty_hierarchical_query_is_400(client: TestClient) -> None:
    r = client.post("/api/v1/search", json={"query": "  "})
    assert r.status_code == 400
    assert _error(r)["field"] == "query"


@pytest.mark.parametrize(
    ("path", "params", "status", "field"),
    [
        ("/api/v1/search/skills", {"query": ""}, 400, "query"),
        ("/api/v1/search/skills", {"query": "x", "threshold": 2}, 422, "threshold"),
        ("/api/v1/search/skills", {"query": "x", "limit": 99}, 422, "limit"),
        ("/api/v1/search/tools", {"query": "x", "threshold": -1}, 422, "threshold"),
        ("/api/v1/search/tools", {"query": "x", "item_type": "gadget"}, 422, "item_type"),
        ("/api/v1/search/tools", {"query": "x" * 1001}, 422, "query"),
    ],
)
def test_stage_routes_validate_like_the_search(
    client: TestClient, path: str, params: dict[str, Any], status: int, field: str
) -> None:
    r = client.get(path, params=params)
    assert r.status_code == status
    assert _error(r)["field"] == field


def test_skill_stage_lists_matching_skills_with_tool_counts(client: TestClient) -> None:
    skills = client.get("/api/v1/search/skills", params={"query": EMAIL_QUERY}).json()
    assert skills[0]["id"] == "email"
    assert skills[0]["tool_count"] >= 1
    assert 0.0 <= skills[0]["score"] <= 1.0


def test_tool_stage_keeps_to_the_given_skills(client: TestClient) -> None:
    r = client.get(
        "/api/v1/search/tools", params={"query": EMAIL_QUERY, "skill_ids": "email,calendar"}
    )
    tools = r.json()
    assert tools
    assert all({"email", "calendar"} & set(t["skill_ids"]) for t in tools)


def test_skill_lifecycle_create_read_update_deactivate_reactivate(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    new = {"id": "astronomy", "name": "Astronomy", "description": "Stars and telescopes."}
    created = client.post("/api/v1/skills", json=new, headers=admin_headers)
    assert created.status_code == 201
    assert created.json()["tool_count"] == 0
    again = client.post("/api/v1/skills", json=new, headers=admin_headers)
    assert again.status_code == 409
    assert _error(again)["code"] == "skill_exists"
    updated = client.put(
        "/api/v1/skills/astronomy", json={"keywords": ["telescope"]}, headers=admin_headers
    )
    assert updated.json()["keywords"] == ["telescope"]
    assert updated.json()["description"] == "Stars and telescopes."
    off = client.post("/api/v1/skills/astronomy/deactivate", headers=admin_headers)
    assert off.json()["is_active"] is False
    assert client.get("/api/v1/skills/astronomy").json()["is_active"] is False
    on = client.post("/api/v1/skills/astronomy/reactivate", headers=admin_headers)
    assert on.json()["is_active"] is True


def test_deactivated_skill_is_left_out_of_skill_matching(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    client.post("/api/v1/skills/email/deactivate", headers=admin_headers)
    skills = client.get(
        "/api/v1/search/skills", params={"query": EMAIL_QUERY, "threshold": 0}
    ).json()
    assert "email" not in [s["id"] for s in skills]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"id": "Bad-Id", "name": "x"}, "id"),
        ({"id": "ok_id", "name": ""}, "name"),
        ({"id": "ok_id"}, "name"),
        ({"id": "ok_id", "name": "x", "extra": 1}, "extra"),
    ],
)
def test_invalid_skill_is_422_naming_the_field(
    client: TestClient, admin_headers: dict[str, str], body: dict[str, Any], field: str
) -> None:
    r = client.post("/api/v1/skills", json=body, headers=admin_headers)
    assert r.status_code == 422
    assert _error(r)["field"] == field


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        ("GET", "/api/v1/skills/nope", "skill_not_found"),
        ("PUT", "/api/v1/skills/nope", "skill_not_found"),
        ("POST", "/api/v1/skills/nope/deactivate", "skill_not_found"),
        ("POST", "/api/v1/suggestions/999/approve", "suggestion_not_found"),
        ("GET", "/api/v1/skills/classify/nope", "job_not_found"),
    ],
)
def test_unknown_ids_are_404(
    client: TestClient, admin_headers: dict[str, str], method: str, path: str, code: str
) -> None:
    body = {"name": "x"} if method == "PUT" else None
    r = client.request(method, path, json=body, headers=admin_headers)
    assert r.status_code == 404
    assert _error(r)["code"] == code


def test_suggestion_id_beyond_64_bits_is_422_not_500(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    # Found by the schemathesis run: SQLite cannot bind such an integer.
    r = client.post(f"/api/v1/suggestions/{2**64}/approve", headers=admin_headers)
    assert r.status_code == 422
    assert _error(r)["field"] == "suggestion_id"


def test_no_pending_suggestions_without_an_llm(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    r = client.get("/api/v1/suggestions", headers=admin_headers)
    assert r.json() == {"suggestions": []}


def test_classification_job_reports_progress_until_done(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    started = client.post("/api/v1/skills/classify", json={"all": True}, headers=admin_headers)
    assert started.status_code == 202
    job_id = started.json()["id"]
    client.app.state.jobs.wait(job_id, timeout=120)  # type: ignore[attr-defined]
    job = client.get(f"/api/v1/skills/classify/{job_id}", headers=admin_headers).json()
    assert job["status"] == "done"
    assert job["processed"] == job["total"] >= 100
    assert job["errors"] == 0
    assert job["finished_at"] is not None
