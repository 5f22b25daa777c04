"""In gateway mode search offers what call_tool can run (tools of configured servers that the
policy allows; prompts and resources only when asked), and call_tool resolves the names an
agent sends: the id, the exposed provider name, a unique bare name; a miss suggests ids."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from support.upstreams import time_spec, upstream_spec
from toolscout.api.mcp_gateway import create_gateway_server
from toolscout.engine import Engine
from toolscout.gateway import Gateway, Policy
from toolscout.gateway.catalog import UnknownTool
from toolscout.models import ItemType, Loaded, Tool


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _ids(client: Client, query: str, **extra: Any) -> list[str]:
    found = await client.call_tool("search_tools", {"query": query, "limit": 10, **extra})
    assert not found.is_error, found.content
    return [h["id"] for h in (found.structured_content or {})["result"]]


def test_gateway_search_offers_only_callable_tools_unless_prompts_are_asked(
    gw_engine: Engine,
) -> None:
    # The index holds git (not configured here), a prompt, a destructive and a denied tool.
    prompt = Tool(
        id="up::prompt:fetch_page",
        name="fetch_page",
        description="Fetch a web page and summarise it.",
        item_type=ItemType.PROMPT,
        server="up",
        source="mcp:up",
    )
    gw_engine.index([Loaded("mcp:up-prompts", [prompt])])
    policy = Policy(deny=("time::convert_time",))
    gateway = Gateway(gw_engine, [upstream_spec(), time_spec()], policy=policy)

    async def main() -> tuple[list[str], ...]:
        async with gateway, Client(create_gateway_server(gw_engine, gateway)) as client:
            git = await _ids(client, "show the git status of my repository")
            times = await _ids(client, "convert a time from one timezone to another")
            fetch = await _ids(client, "fetch the page example.com and summarise it")
            wipe = await _ids(client, "wipe a path")
            prompts = await _ids(client, "fetch the page example.com", item_type="prompt")
            return git, times, fetch, wipe, prompts

    git, times, fetch, wipe, prompts = anyio.run(main)
    offered = set(git + times + fetch + wipe)
    assert offered and offered <= set(gateway.tools.ids())
    assert not any(i.startswith("git::") for i in offered)
    assert "time::convert_time" not in offered and "up::wipe" not in offered
    assert prompt.id not in offered
    assert prompts == [prompt.id]
    assert times[0] == "time::get_current_time"


def test_call_tool_accepts_provider_and_bare_names_and_suggests_on_a_miss(
    gw_engine: Engine,
) -> None:
    gateway = Gateway(gw_engine, [upstream_spec(), time_spec()])
    args = {"timezone": "Asia/Tokyo"}

    async def main() -> tuple[types.CallToolResult, ...]:
        async with gateway, Client(create_gateway_server(gw_engine, gateway)) as client:
            calls = [
                await client.call_tool("call_tool", {"id": name, "arguments": args})
                for name in ("time__get_current_time", "get_current_time", "get_curent_time")
            ]
            return tuple(calls)

    provider, bare, typo = anyio.run(main)
    assert not provider.is_error and "Asia/Tokyo" in _text(provider)
    assert not bare.is_error and "Asia/Tokyo" in _text(bare)
    assert typo.is_error and _text(typo).startswith("tool_not_found: ")
    assert "did you mean time::get_current_time" in _text(typo)


def test_an_ambiguous_bare_name_lists_the_tools_that_have_it(gw_engine: Engine) -> None:
    twin = Tool(id="time2::get_current_time", name="get_current_time", server="time2")
    gw_engine.index([Loaded("mcp:time2", [twin])])
    spec = time_spec()
    twin_spec = type(spec)(**{**spec.__dict__, "name": "time2"})
    gateway = Gateway(gw_engine, [spec, twin_spec])
    with pytest.raises(UnknownTool) as caught:
        gateway.tools.resolve("get_current_time")
    assert caught.value.suggestions == ("time2::get_current_time", "time::get_current_time")
