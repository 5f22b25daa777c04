"""Every door that renders provider shapes carries each tool's own input schema: REST
``?format=`` (GET and POST, with and without ``include_schemas``), the CLI ``--format``, and
``SearchResult.to_anthropic()`` / ``.to_openai()`` (which load schemas a search left out)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from toolscout.config import Settings
from toolscout.engine import Engine

QUERY = "what time is it in Tokyo"
FORMATS = ("anthropic", "openai", "openai-responses")


def _schemas(shaped: dict[str, Any]) -> dict[str, Any]:
    """``{toolscout id: emitted schema}`` from a rendered ``format`` answer."""
    out: dict[str, Any] = {}
    tools = list(shaped["tools"])
    while tools:
        tool = tools.pop()
        if tool.get("type") == "namespace":
            tools.extend(tool["tools"])
            continue
        name = tool.get("name") or tool["function"]["name"]
        schema = (
            tool.get("input_schema") or tool.get("parameters") or tool["function"]["parameters"]
        )
        out[shaped["names"][name]] = schema
    return out


def _assert_own_schemas(engine: Engine, emitted: dict[str, Any]) -> None:
    with_parameters = 0
    for tool_id, schema in emitted.items():
        stored = engine.get_tool(tool_id).input_schema
        if stored and stored.get("properties"):
            with_parameters += 1
            assert schema == stored, tool_id
    assert with_parameters, "the query should find tools that take parameters"


@pytest.mark.parametrize("include_schemas", [False, True])
def test_search_result_shapes_carry_the_stored_schemas(
    gw_engine: Engine, include_schemas: bool
) -> None:
    # Without include_schemas the hits hold no schema: the shapes must load them.
    result = gw_engine.search(QUERY, limit=4, include_schemas=include_schemas)
    assert all((h.schema is None) is not include_schemas for h in result.hits)
    anthropic = result.to_anthropic()
    _assert_own_schemas(
        gw_engine,
        {anthropic.tool_id(t["name"]): t["input_schema"] for t in anthropic.tools},
    )
    chat = result.to_openai()
    _assert_own_schemas(
        gw_engine,
        {chat.tool_id(t["function"]["name"]): t["function"]["parameters"] for t in chat.tools},
    )
    responses = result.to_openai(api="responses", by_server=True)
    nested = [t for space in responses.tools for t in space["tools"]]
    _assert_own_schemas(gw_engine, {responses.tool_id(t["name"]): t["parameters"] for t in nested})


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("include_schemas", [False, True])
def test_rest_format_carries_the_stored_schemas(
    gw_engine: Engine, gateway_settings: Settings, fmt: str, include_schemas: bool
) -> None:
    from toolscout.api.http import create_app

    app = create_app(gw_engine, gateway_settings)
    params: dict[str, Any] = {"query": QUERY, "limit": 4, "include_schemas": include_schemas}
    with TestClient(app, client=("127.0.0.1", 5000), base_url="http://localhost") as c:
        got = c.get("/api/v1/search", params=params | {"format": fmt})
        posted = c.post(f"/api/v1/search?format={fmt}", json=params | {"strategy": "direct"})
    assert got.status_code == 200 and posted.status_code == 200, posted.text
    _assert_own_schemas(gw_engine, _schemas(got.json()))
    _assert_own_schemas(gw_engine, _schemas(posted.json()))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("schemas", [[], ["--schemas"]])
def test_cli_format_carries_the_stored_schemas(
    gateway_settings: Settings, monkeypatch: pytest.MonkeyPatch, fmt: str, schemas: list[str]
) -> None:
    from toolscout.cli import _register, app

    _register()
    monkeypatch.setenv("TOOLSCOUT_CACHE_DIR", gateway_settings.cache_dir)
    args = ["search", QUERY, "--db", gateway_settings.db, "--limit", "4", "--format", fmt]
    out = CliRunner().invoke(app, [*args, *schemas])
    assert out.exit_code == 0, out.output
    engine = Engine.open(gateway_settings)
    try:
        _assert_own_schemas(engine, _schemas(json.loads(out.stdout)))
    finally:
        engine.close()
