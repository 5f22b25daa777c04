"""The REST API through the real ASGI app over a real engine and index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from support.served import LOOPBACK
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine


def _error(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    return error


def test_flat_search_returns_the_engines_ranking(client: TestClient, api_engine: Engine) -> None:
    r = client.get("/api/v1/search", params={"query": "open a new github issue", "limit": 3})
    assert r.status_code == 200
    hits = r.json()["tools"]
    expected = api_engine.search("open a new github issue", limit=3).hits
    assert [h["id"] for h in hits] == [h.tool.id for h in expected]
    assert len(hits) == 3
    assert all(0.0 <= h["score"] <= 1.0 for h in hits)


def test_get_tool_returns_its_schemas(client: TestClient) -> None:
    r = client.get("/api/v1/tools/github::create_issue")
    assert r.status_code == 200
    tool = r.json()
    assert tool["name"] == "create_issue"
    assert tool["input_schema"]["required"] == ["repo", "title"]


def test_unknown_tool_is_404_naming_the_id(client: TestClient) -> None:
    r = client.get("/api/v1/tools/nowhere::nothing")
    assert r.status_code == 404
    assert _error(r)["code"] == "tool_not_found"
    assert "nowhere::nothing" in _error(r)["message"]


def test_tool_listing_pages_and_filters_by_server(client: TestClient) -> None:
    first = client.get("/api/v1/tools", params={"server": "github", "limit": 2}).json()
    second = client.get(
        "/api/v1/tools", params={"server": "github", "limit": 2, "offset": 2}
    ).json()
    assert first["total"] == second["total"] > 4
    ids = [t["id"] for t in first["items"] + second["items"]]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert all(i.startswith("github::") for i in ids)
    assert "input_schema" not in first["items"][0] or first["items"][0]["input_schema"] is None


def test_tool_listing_filters_by_item_type(client: TestClient) -> None:
    page = client.get("/api/v1/tools", params={"item_type": "prompt"}).json()
    assert page["total"] >= 1
    assert {t["item_type"] for t in page["items"]} == {"prompt"}


@pytest.mark.parametrize("query", ["", "   "])
def test_empty_query_is_400(client: TestClient, query: str) -> None:
    r = client.get("/api/v1/search", params={"query": query})
    assert r.status_code == 400
    assert _error(r)["code"] == "empty_query"
    assert _error(r)["field"] == "query"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "item_type": "gadget"}, "item_type"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "x", "limit": "many"}, "limit"),
        ({}, "query"),
    ],
)
def test_invalid_flat_search_parameters_are_422_naming_the_field(
    client: TestClient, params: dict[str, Any], field: str
) -> None:
    r = client.get("/api/v1/search", params=params)
    assert r.status_code == 422
    assert _error(r)["code"] == "invalid_parameter"
    assert _error(r)["field"] == field


@pytest.mark.parametrize("offset", [-1, 2**63])
def test_invalid_listing_offset_is_422(client: TestClient, offset: int) -> None:
    r = client.get("/api/v1/tools", params={"offset": offset})
    assert r.status_code == 422
    assert _error(r)["field"] == "offset"


def test_unknown_route_answers_in_the_same_error_shape(client: TestClient) -> None:
    r = client.get("/api/v2/nothing")
    assert r.status_code == 404
    assert _error(r)["code"] == "not_found"


def test_malformed_json_body_is_422_not_500(client: TestClient) -> None:
    r = client.post(
        "/api/v1/search", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    assert _error(r)["code"] == "invalid_parameter"


def test_health_reports_store_model_and_counts(client: TestClient) -> None:
    r = client.get("/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["store_reachable"] is True
    assert body["model_loaded"] is True
    assert body["tools"] >= 100


def test_health_says_an_empty_index_is_empty_and_how_to_fill_it(
    tmp_path: Path, vector_cache: Path
) -> None:
    settings = Settings(db=str(tmp_path / "empty.db"), cache_dir=str(vector_cache))
    engine = Engine.open(settings)
    try:
        app = create_app(engine, settings)
        with TestClient(app, client=LOOPBACK, base_url="http://localhost") as c:
            body = c.get("/health").json()
    finally:
        engine.close()
    assert (body["status"], body["tools"]) == ("empty", 0)
    assert body["hint"] == "index is empty or missing: run `toolscout sync`"


def test_metrics_count_requests_per_route_template(client: TestClient) -> None:
    client.get("/api/v1/tools/github::create_issue")
    client.get("/api/v1/tools/slack::post_message")
    client.get("/api/v1/search", params={"query": "send a chat message"})
    text = client.get("/metrics").text
    line = next(
        ln
        for ln in text.splitlines()
        if ln.startswith("toolscout_http_requests_total{")
        and 'route="/api/v1/tools/{tool_id:path}"' in ln
        and 'status="200"' in ln
    )
    assert line.endswith(" 2.0")
    assert "toolscout_http_request_duration_seconds_bucket" in text
    assert 'toolscout_query_cache{kind="misses"}' in text


def test_repeated_query_is_served_from_the_result_cache(client: TestClient) -> None:
    params = {"query": "convert currency amounts"}
    first = client.get("/api/v1/search", params=params).json()
    before = client.get("/health").json()
    second = client.get("/api/v1/search", params=params).json()
    after = client.get("/health").json()
    assert [h["id"] for h in first["tools"]] == [h["id"] for h in second["tools"]]
    assert after["result_cache"]["hits"] == before["result_cache"]["hits"] + 1
    # Answered whole from the result cache: the model was not asked again.
    assert after["query_cache"] == before["query_cache"]
    assert 'toolscout_result_cache{kind="hits"}' in client.get("/metrics").text


def test_same_query_with_other_options_is_searched_again(client: TestClient) -> None:
    query = "convert currency amounts"
    client.get("/api/v1/search", params={"query": query})
    before = client.get("/health").json()["query_cache"]
    client.get("/api/v1/search", params={"query": query, "limit": 3})
    after = client.get("/health").json()["query_cache"]
    # A new search (not the cached answer), whose query vector comes from the query cache.
    assert after["hits"] == before["hits"] + 1


def test_openapi_document_lists_every_api_route(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/v1/search", "/api/v1/tools/{tool_id}", "/health", "/metrics"):
        assert path in paths


def test_openapi_documents_the_error_body_and_the_bearer_scheme(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    schemes = doc["components"]["securitySchemes"]
    assert any(s == {"type": "http", "scheme": "bearer"} | s for s in schemes.values())
    search = doc["paths"]["/api/v1/search"]["post"]
    assert search["security"]
    for code in ("400", "401", "403", "422"):
        ref = search["responses"][code]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/ErrorBody")
    assert "409" in doc["paths"]["/api/v1/skills"]["post"]["responses"]
    assert "404" in doc["paths"]["/api/v1/tools/{tool_id}"]["get"]["responses"]
    body = doc["components"]["schemas"]["ErrorInfo"]["properties"]
    assert {"code", "field", "message"} <= set(body)


def test_stage_routes_answer_bare_lists(client: TestClient) -> None:
    skills = client.get("/api/v1/search/skills", params={"query": "send an email"})
    tools = client.get("/api/v1/search/tools", params={"query": "send an email"})
    assert isinstance(skills.json(), list) and isinstance(tools.json(), list)
    assert {"id", "name", "description", "score", "tool_count"} <= set(skills.json()[0])
    top = tools.json()[0]
    assert top["primary_skill_id"] is None or top["primary_skill_id"] in top["skill_ids"]
