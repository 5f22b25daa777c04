"""The gateway as an MCP server, spoken to with the SDK's client: in process, and as the real
``toolscout mcp --gateway`` process over stdio in front of the published mcp-server-time and
mcp-server-git and the project's own test server."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from support.upstreams import BIN, upstream_spec
from toolscout.api.mcp_gateway import create_gateway_server
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.gateway import Gateway, Policy

TOOLSCOUT = str(BIN / "toolscout")


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_search_exposes_found_tools_and_announces_the_change(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()], policy=Policy())
    changes: list[object] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(message)

    async def main() -> tuple[Any, ...]:
        async with gateway:
            server = create_gateway_server(gw_engine, gateway)
            async with Client(server, mode="legacy", message_handler=on_message) as client:
                listed_before = {t.name for t in (await client.list_tools()).tools}
                caps = client.server_capabilities.tools
                await client.call_tool("search_tools", {"query": "add two integers", "limit": 3})
                with anyio.fail_after(10):
                    while not changes:
                        await anyio.sleep(0.01)
                listed_after = {t.name for t in (await client.list_tools()).tools}
                native = await client.call_tool("up__add", {"a": 20, "b": 22})
                return listed_before, caps, listed_after, native

    before, caps, after, native = anyio.run(main)
    assert {"search_tools", "get_tool_schemas", "call_tool"} <= before
    assert caps is not None and caps.list_changed is True
    assert "up__add" in after - before
    assert "up__wipe" not in after  # a destructive tool without an allow is never exposed
    assert native.structured_content == {"sum": 42}


def test_exposure_is_bounded_least_recently_used_out(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()], expose=2)
    tools = [gw_engine.get_tool(i) for i in ("up::echo", "up::add", "up::pid")]
    gateway.exposure.add(tools[:2])
    assert gateway.exposure.get("up__echo") is not None  # echo is now the most recent
    gateway.exposure.add(tools[2:])
    assert [name for name, _ in gateway.exposure.tools()] == ["up__echo", "up__pid"]


def test_gateway_tools_answer_errors_as_readable_results(gw_engine: Engine) -> None:
    gateway = Gateway(gw_engine, [upstream_spec()])

    async def main() -> tuple[Any, ...]:
        async with gateway, Client(create_gateway_server(gw_engine, gateway)) as client:
            schemas = await client.call_tool("get_tool_schemas", {"ids": ["up::add", "x::y"]})
            bad = await client.call_tool(
                "call_tool", {"id": "up::add", "arguments": {"a": 1, "b": "two"}}
            )
            missing = await client.call_tool("call_tool", {"id": "nope::x", "arguments": {}})
            return schemas, bad, missing

    schemas, bad, missing = anyio.run(main)
    answer = schemas.structured_content
    assert answer is not None and answer["not_found"] == ["x::y"]
    assert answer["tools"][0]["input_schema"]["required"] == ["a", "b"]
    assert bad.is_error and _text(bad).startswith("invalid_arguments: b: ")
    assert missing.is_error and _text(missing).startswith("tool_not_found: ")


def test_toolscout_mcp_gateway_serves_published_servers_over_stdio(
    gateway_settings: Settings, mcp_config: Callable[..., Path], repo: Path, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "toolscout.toml"
    config.write_text(f'[gateway]\naudit_log = "{audit}"\n', encoding="utf-8")
    params = StdioServerParameters(
        command=TOOLSCOUT,
        args=["mcp", "--gateway", "--mcp-config", str(mcp_config())],
        env={
            "TOOLSCOUT_DB": gateway_settings.db,
            "TOOLSCOUT_CACHE_DIR": gateway_settings.cache_dir,
            "TOOLSCOUT_CONFIG": str(config),
            "TOOLSCOUT_EMBED_THREADS": "1",
            "PATH": str(BIN) + ":/usr/bin:/bin",
        },
    )

    async def main() -> dict[str, Any]:
        async with Client(stdio_client(params), read_timeout_seconds=120) as client:
            found = await client.call_tool(
                "search_tools", {"query": "current time in a timezone", "limit": 3}
            )
            ids = [h["id"] for h in (found.structured_content or {})["result"]]
            schemas = await client.call_tool("get_tool_schemas", {"ids": ids[:2]})
            now = await client.call_tool(
                "call_tool",
                {"id": "time::get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
            )
            status = await client.call_tool(
                "call_tool", {"id": "git::git_status", "arguments": {"repo_path": str(repo)}}
            )
            reset = await client.call_tool(
                "call_tool", {"id": "git::git_reset", "arguments": {"repo_path": str(repo)}}
            )
            return {"ids": ids, "schemas": schemas, "now": now, "status": status, "reset": reset}

    out = anyio.run(main)
    assert out["ids"][0] == "time::get_current_time"
    assert not out["now"].is_error and "Asia/Tokyo" in _text(out["now"])
    assert not out["status"].is_error and "notes.txt" in _text(out["status"])
    assert out["reset"].is_error and "call_denied: git::git_reset" in _text(out["reset"])
    tools = (out["schemas"].structured_content or {})["tools"]
    assert tools[0]["id"] == "time::get_current_time" and tools[0]["input_schema"]
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [line["outcome"] for line in lines] == ["ok", "ok", "denied"]
    assert str(repo) not in audit.read_text(encoding="utf-8")


def test_toolscout_mcp_gateway_serves_calls_over_streamable_http(
    gateway_settings: Settings, mcp_config: Callable[..., Path]
) -> None:
    env = {
        "TOOLSCOUT_DB": gateway_settings.db,
        "TOOLSCOUT_CACHE_DIR": gateway_settings.cache_dir,
        "TOOLSCOUT_EMBED_THREADS": "1",
        "PATH": str(BIN) + ":/usr/bin:/bin",
    }
    proc = subprocess.Popen(
        [TOOLSCOUT, "mcp", "--http", "--port", "0", "--mcp-config", str(mcp_config())],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = re.search(r"Uvicorn running on (http://\S+:\d+)", line)
            if match:
                found.put(match.group(1))

    threading.Thread(target=read, daemon=True).start()
    try:
        url = found.get(timeout=120) + "/mcp"

        async def main() -> types.CallToolResult:
            async with Client(url, read_timeout_seconds=120) as client:
                return await client.call_tool(
                    "call_tool", {"id": "up::add", "arguments": {"a": 40, "b": 2}}
                )

        result = anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    assert result.structured_content == {"sum": 42}
