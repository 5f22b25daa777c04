"""The gateway records what it relays: a call after ``search_tools`` becomes feedback for that
search's request, with its outcome; calls it did not relay, or with no search before them,
teach nothing."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from support.upstreams import upstream_spec
from toolscout.api.mcp_gateway import create_gateway_server
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.gateway import Gateway

QUERY = "add two integers"
ADD = {"id": "up::add", "arguments": {"a": 1, "b": 2}}


def _rows(engine: Engine) -> list[tuple[Any, ...]]:
    return [(r.query, r.tool_id, r.outcome, r.source) for r in reversed(engine.feedback.log())]


def test_relayed_calls_are_recorded_for_the_sessions_last_search(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])

    async def main() -> None:
        async with gateway:
            server = create_gateway_server(gw_engine, gateway)
            async with Client(server, mode="legacy") as client:
                await client.call_tool("search_tools", {"query": QUERY, "limit": 3})
                assert not (await client.call_tool("call_tool", ADD)).is_error
                failed = await client.call_tool(
                    "call_tool", {"id": "up::fail", "arguments": {"reason": "no"}}
                )
                assert failed.is_error
                # Refused before the server: not a label of relevance.
                await client.call_tool("call_tool", {"id": "up::add", "arguments": {"a": "x"}})
            async with Client(server, mode="legacy") as other:  # a session that never searched
                await other.call_tool("call_tool", ADD)

    anyio.run(main)
    assert _rows(gw_engine) == [
        (QUERY, "up::add", "success", "gateway"),
        (QUERY, "up::fail", "error", "gateway"),
    ]
    assert "up::add" in gw_engine.feedback.log()[-1].shown


def test_stateless_calls_are_matched_with_the_search_that_listed_the_tool(
    gw_engine: Engine,
) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])

    async def main() -> None:
        async with gateway, Client(create_gateway_server(gw_engine, gateway)) as client:
            await client.call_tool("search_tools", {"query": QUERY, "limit": 3})
            await client.call_tool("call_tool", ADD)
            # Not among that search's hits: no request to credit it to.
            await client.call_tool("call_tool", {"id": "up::fail", "arguments": {"reason": "x"}})

    anyio.run(main)
    assert _rows(gw_engine) == [(QUERY, "up::add", "success", "gateway")]


def test_a_gateway_with_feedback_off_records_nothing(gateway_settings: Settings) -> None:
    engine = Engine.open(gateway_settings.model_copy(update={"feedback": False}))
    gateway = Gateway(engine, [upstream_spec()])

    async def main() -> None:
        async with gateway, Client(create_gateway_server(engine, gateway)) as client:
            await client.call_tool("search_tools", {"query": QUERY, "limit": 3})
            await client.call_tool("call_tool", ADD)

    try:
        anyio.run(main)
        assert engine.feedback.summary()["rows"] == 0
    finally:
        engine.close()
