"""Every door searches the same way when a caller gives only a query: one strategy, one limit.

The one documented difference is ``toolscout find``, the CLI's skills-first command: searching
skills first is what it is for, so it defaults to ``hierarchical``."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
from fastapi.testclient import TestClient

from toolscout.api.mcp import create_mcp_server
from toolscout.api.schemas import SearchRequest as RestRequest
from toolscout.cli.core import search as cli_search
from toolscout.engine import Engine
from toolscout.models import SearchRequest


def _default(fn: Any, name: str) -> Any:
    return inspect.signature(fn).parameters[name].default


def _mcp_defaults(engine: Engine) -> dict[str, Any]:
    server = create_mcp_server(engine)

    async def listed() -> dict[str, Any]:
        tools = await server.list_tools()
        schema = next(t.input_schema for t in tools if t.name == "search_tools")
        return {k: v.get("default") for k, v in schema["properties"].items()}

    return anyio.run(listed)


def test_every_door_defaults_to_the_same_strategy_and_limit(
    api_engine: Engine, client: TestClient
) -> None:
    core = SearchRequest("x")
    rest_post = RestRequest(query="x")
    mcp = _mcp_defaults(api_engine)
    get_schema = client.get("/openapi.json").json()["paths"]["/api/v1/search"]["get"]
    rest_get = {p["name"]: p["schema"].get("default") for p in get_schema["parameters"]}
    strategies = {
        "core": str(core.strategy),
        "rest post": rest_post.strategy,
        "rest get": rest_get["strategy"],
        "mcp": mcp["strategy"],
        "cli": str(_default(cli_search, "strategy").value),
        "engine.search": str(_default(Engine.search, "strategy")),
        "engine.explain": _default(Engine.explain, "strategy"),
    }
    limits = {
        "core": core.limit,
        "rest post": rest_post.limit,
        "rest get": rest_get["limit"],
        "mcp": mcp["limit"],
        "cli": _default(cli_search, "limit"),
        "engine.search": _default(Engine.search, "limit"),
        "engine.explain": _default(Engine.explain, "limit"),
    }
    assert set(strategies.values()) == {"direct"}, strategies
    assert set(limits.values()) == {5}, limits


def test_the_skills_first_doors_share_the_core_skill_defaults() -> None:
    from toolscout.cli.skills import find as cli_find

    core = SearchRequest("x")
    rest = RestRequest(query="x")
    for name in ("skill_limit", "skill_threshold", "skill_coverage"):
        assert getattr(rest, name) == getattr(core, name) == _default(cli_find, name), name
