"""A query of separators alone is blank to the engine and to the OpenAPI document alike."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

BLANK = ["\u001c", " \u0085 ", "\ufeff", "\t\u3000"]


@pytest.mark.parametrize("query", BLANK)
def test_a_query_of_separators_is_refused_and_the_schema_calls_it_invalid(
    client: TestClient, query: str
) -> None:
    answer = client.post("/api/v1/search", json={"query": query})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "empty_query"
    schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]
    assert not re.search(schema["properties"]["query"]["pattern"], query)


def test_a_query_with_a_visible_character_is_searched(client: TestClient) -> None:
    assert client.post("/api/v1/search", json={"query": "\u001cweather"}).status_code == 200
