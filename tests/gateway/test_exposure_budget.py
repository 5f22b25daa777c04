"""The gateway's tools list within a token budget: three tools at start-up with no output
schemas (under 700 tokens as full JSON), found tools added only while the whole list stays
within ``expose_tokens`` and below what listing the servers directly costs; a tool that left
the list is still called by its name. Tokens are counted with cl100k_base, as the benchmark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from support.tokens import cl100k
from support.upstreams import git_spec, time_spec, upstream_spec
from toolscout.api.mcp_gateway import create_gateway_server
from toolscout.engine import Engine
from toolscout.gateway import Gateway
from toolscout.gateway.budget import direct_entry, listed_entry, tokens

SEARCHES = [
    "what time is it in Tokyo",
    "show the git log",
    "convert 3pm London time to New York",
    "create a git branch",
    "add two integers",
]


@pytest.fixture(scope="module")
def encoding(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return cl100k(tmp_path_factory.mktemp("tiktoken"))


def _full(tools: list[types.Tool]) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]


def _lists(gateway: Gateway, engine: Engine) -> tuple[list[dict[str, Any]], ...]:
    async def main() -> tuple[list[dict[str, Any]], ...]:
        async with gateway, Client(create_gateway_server(engine, gateway), mode="legacy") as c:
            start = _full((await c.list_tools()).tools)
            for query in SEARCHES:
                await c.call_tool("search_tools", {"query": query, "limit": 5})
            after = _full((await c.list_tools()).tools)
            return start, after

    return anyio.run(main)


def test_the_list_stays_within_its_budget_and_below_the_direct_lists(
    gw_engine: Engine, repo: Path, encoding: Any
) -> None:
    specs = [upstream_spec(), time_spec(), git_spec(repo)]
    gateway = Gateway(gw_engine, specs)
    start, after = _lists(gateway, gw_engine)

    def count(value: object) -> int:
        return len(encoding.encode(json.dumps(value)))

    assert [t["name"] for t in start] == ["search_tools", "get_tool_schemas", "call_tool"]
    assert not any("outputSchema" in t for t in start)
    assert count(start) <= 700

    tools, _ = gw_engine.list_tools(servers=[s.name for s in specs], item_types=["tool"])
    direct = count([direct_entry(t) for t in tools])
    exposed = after[len(start) :]
    assert len(exposed) >= 3
    assert count(after) <= 1500 and count(after) < direct


def test_token_estimates_err_on_the_high_side(gw_engine: Engine, encoding: Any) -> None:
    tools, _ = gw_engine.list_tools(limit=500)
    for tool in tools:
        entry = listed_entry(tool.id, tool)
        assert tokens(entry) >= len(encoding.encode(json.dumps(entry, ensure_ascii=False)))


def test_a_tool_that_left_the_list_is_still_called_by_its_name(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()], expose_tokens=100)

    async def main() -> tuple[set[str], types.CallToolResult]:
        async with gateway, Client(create_gateway_server(gw_engine, gateway)) as client:
            await client.call_tool("search_tools", {"query": "add two integers", "limit": 3})
            listed = {t.name for t in (await client.list_tools()).tools}
            return listed, await client.call_tool("up__add", {"a": 40, "b": 2})

    listed, native = anyio.run(main)
    assert listed == {"search_tools", "get_tool_schemas", "call_tool"}  # no room for more
    assert native.structured_content == {"sum": 42}
