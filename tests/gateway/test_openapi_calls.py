"""Calls through the gateway to a real REST API (a FastAPI app) indexed from its own
/openapi.json: path, query, header and body arguments, credentials from the environment, error
statuses, timeouts, size limits and the policy for methods that change things."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from support.gateway_runs import failure, run, text
from support.rest_app import TOKEN
from toolscout.config import Settings
from toolscout.config.sections import ApiConfig, GatewaySettings
from toolscout.engine import Engine
from toolscout.errors import CallDenied, InvalidArguments, UpstreamError
from toolscout.gateway import Gateway, HttpApi, Policy
from toolscout.gateway.factory import build_gateway
from toolscout.models import SearchRequest


def test_a_found_get_operation_is_called_with_path_and_query(shop_engine: Engine) -> None:
    hit = shop_engine.find(SearchRequest(query="look up the profile of customer 42", limit=1))
    tool_id = hit.hits[0].tool.id
    assert tool_id == "shop::get_user"
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop")])
    result = run(gateway, lambda g: g.call(tool_id, {"user_id": 42, "verbose": True}))
    assert not result.is_error
    assert json.loads(text(result)) == {"id": 42, "name": "user42", "verbose": True}
    assert result.structured_content == {"status": 200, "body": json.loads(text(result))}


def test_a_post_sends_its_json_body_with_the_credential_from_the_environment(
    shop_engine: Engine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_KEY", TOKEN)
    configured = settings.model_copy(
        update={
            "apis": {"shop": ApiConfig(spec="unused", headers_from_env={"X-API-Key": "SHOP_KEY"})},
            "gateway": GatewaySettings(allow_destructive=["shop::create_order"]),
        }
    )
    gateway = build_gateway(shop_engine, configured, [])
    result = run(
        gateway, lambda g: g.call("shop::create_order", {"body": {"item": "book", "quantity": 2}})
    )
    assert not result.is_error, text(result)
    assert json.loads(text(result)) == {"order": 1, "item": "book", "quantity": 2}
    stored = b"".join(p.read_bytes() for p in Path(settings.db).parent.glob("index.db*"))
    assert TOKEN.encode() not in stored


def test_a_missing_credential_is_the_api_s_error_status(shop_engine: Engine) -> None:
    gateway = Gateway(
        shop_engine, [], apis=[HttpApi("shop")], policy=Policy(allow_destructive=("shop",))
    )
    result = run(gateway, lambda g: g.call("shop::create_order", {"body": {"item": "book"}}))
    assert result.is_error
    assert text(result).startswith("HTTP 401") and "X-API-Key" in text(result)


def test_an_error_status_is_a_tool_error_with_the_status(shop_engine: Engine) -> None:
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop")])
    result = run(gateway, lambda g: g.call("shop::get_user", {"user_id": 404}))
    assert result.is_error and text(result).startswith("HTTP 404 Not Found")
    assert result.structured_content == {"status": 404, "body": {"detail": "no such user"}}


def test_arguments_are_validated_before_any_request(shop_engine: Engine) -> None:
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop")])
    error = failure(gateway, "shop::get_user", {"user_id": "forty-two"})
    assert isinstance(error, InvalidArguments) and "user_id" in str(error)


def test_methods_that_change_things_need_allow_destructive(shop_engine: Engine) -> None:
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop")])
    error = failure(gateway, "shop::cancel_order", {"order_id": 1})
    assert isinstance(error, CallDenied) and "allow_destructive" in str(error)
    assert not gateway.callable(shop_engine.get_tool("shop::create_order"))
    assert gateway.callable(shop_engine.get_tool("shop::get_weather"))
    allowed = Gateway(
        shop_engine, [], apis=[HttpApi("shop")], policy=Policy(allow_destructive=("shop",))
    )
    result = run(allowed, lambda g: g.call("shop::cancel_order", {"order_id": 7}))
    assert json.loads(text(result)) == {"cancelled": 7}


def test_a_slow_api_times_out(shop_engine: Engine) -> None:
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop", timeout=0.5)])
    started = time.monotonic()
    error = failure(gateway, "shop::slow_slow_get", {"seconds": 5})
    assert isinstance(error, UpstreamError) and "no answer within 0.5 s" in str(error)
    assert time.monotonic() - started < 3


def test_a_large_answer_is_cut_to_the_result_limit(shop_engine: Engine) -> None:
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop", max_result_bytes=5_000)])
    result = run(gateway, lambda g: g.call("shop::big_big_get", {"size": 200_000}))
    assert len(json.dumps(result.model_dump(by_alias=True))) < 6_000
    assert result.structured_content is None


def test_an_unreachable_api_is_an_upstream_error(shop_engine: Engine) -> None:
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop", base_url="http://127.0.0.1:9")])
    error = failure(gateway, "shop::get_weather", {"city": "Paris"})
    assert isinstance(error, UpstreamError) and "request failed" in str(error)


def test_sync_indexes_a_configured_api(shop: str, settings: Settings, tmp_path: Path) -> None:
    from toolscout.sync.sync import resolve_sources, sync

    configured = settings.model_copy(
        update={"apis": {"store": ApiConfig(spec=f"{shop}/openapi.json")}}
    )
    found = resolve_sources(configured)
    engine = Engine.open(configured)
    try:
        report = sync(engine, found.all_sources())
        assert report.ok and report.total("added") >= 6
        assert engine.get_tool("store::get_weather").server == "store"
    finally:
        engine.close()


def test_an_agent_finds_and_calls_an_operation_in_one_mcp_connection(shop_engine: Engine) -> None:
    from mcp import Client

    from toolscout.api.mcp_gateway import create_gateway_server

    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop")])

    async def main() -> tuple[str, types.CallToolResult]:
        async with gateway, Client(create_gateway_server(shop_engine, gateway)) as client:
            found = await client.call_tool(
                "search_tools", {"query": "weather forecast for Paris", "limit": 3}
            )
            called = await client.call_tool(
                "call_tool", {"id": "shop::get_weather", "arguments": {"city": "Paris"}}
            )
            return text(found), called

    found, called = anyio.run(main)
    assert "shop::get_weather" in found
    assert not called.is_error
    assert '"forecast"' in text(called) and "sunny" in text(called)


def test_toolscout_index_url_then_mcp_gateway_finds_and_calls_it(
    shop: str, settings: Settings, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    config = tmp_path / "toolscout.toml"
    config.write_text(
        f'[apis.shop]\nspec = "{shop}/openapi.json"\n'
        'headers_from_env = { "X-API-Key" = "SHOP_KEY" }\n'
        '[gateway]\nallow_destructive = ["shop::create_order"]\n',
        encoding="utf-8",
    )
    env = {
        "TOOLSCOUT_DB": settings.db,
        "TOOLSCOUT_CACHE_DIR": settings.cache_dir,
        "TOOLSCOUT_CONFIG": str(config),
        "TOOLSCOUT_EMBED_THREADS": "1",
        "SHOP_KEY": TOKEN,
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    index = [sys.executable, "-m", "toolscout", "index", f"{shop}/openapi.json", "--server", "shop"]
    done = subprocess.run(index, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolscout", "mcp", "--gateway"], env=env
    )

    async def main() -> tuple[list[str], types.CallToolResult]:
        async with Client(stdio_client(params), read_timeout_seconds=120) as client:
            found = await client.call_tool(
                "search_tools", {"query": "place an order for two books", "limit": 3}
            )
            ids = [h["id"] for h in (found.structured_content or {})["result"]]
            called = await client.call_tool(
                "call_tool", {"id": ids[0], "arguments": {"body": {"item": "book", "quantity": 2}}}
            )
            return ids, called

    ids, called = anyio.run(main)
    assert ids[0] == "shop::create_order"
    assert not called.is_error, text(called)
    assert json.loads(text(called))["item"] == "book"


def test_waiting_for_a_call_slot_counts_against_the_timeout(shop_engine: Engine) -> None:
    # One slot: the first call takes 1.4 s of its 2 s, the second waits those 1.4 s for the slot
    # and has 0.6 s left for its own 1.4 s. The margins (0.6 s, 0.8 s) hold on a busy machine.
    gateway = Gateway(shop_engine, [], apis=[HttpApi("shop", timeout=2.0, max_concurrency=1)])

    async def body(g: Gateway) -> list[str]:
        outcomes: list[str] = []

        async def one() -> None:
            try:
                await g.call("shop::slow_slow_get", {"seconds": 1.4})
                outcomes.append("ok")
            except UpstreamError:
                outcomes.append("timeout")

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
        return outcomes

    assert sorted(run(gateway, body)) == ["ok", "timeout"]
