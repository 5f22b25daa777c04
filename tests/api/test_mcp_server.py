"""The MCP server spoken to with the SDK's client: in process, over real stdio (``toolscout
mcp``) and over real streamable HTTP (``toolscout mcp --http``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from support.served import TOOLSCOUT, Launched, server_env
from toolscout.api.mcp import create_mcp_server
from toolscout.config import Settings
from toolscout.engine import Engine

QUERY = "send an email to a colleague"
EXPECTED_TOOLS = {"search_tools", "get_tool_schema", "list_skills", "search_skills"}


async def _call(client: Client, name: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content.get("result", result.structured_content)


async def _error_text(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


def test_search_tools_answers_the_freeact_contract_in_engine_order(api_engine: Engine) -> None:
    async def main() -> list[dict[str, Any]]:
        async with Client(create_mcp_server(api_engine)) as client:
            hits: list[dict[str, Any]] = await _call(
                client, "search_tools", {"query": QUERY, "limit": 4}
            )
            return hits

    hits = anyio.run(main)
    expected = api_engine.search(QUERY, limit=4).hits
    assert [h["id"] for h in hits] == [h.tool.id for h in expected]
    assert {"name", "category", "source", "description", "score", "id"} <= set(hits[0])
    assert {"type", "skill_ids", "primary_skill_id"} <= set(hits[0])
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_scope_narrows_search_to_a_source_or_to_a_server_name_results_show(
    api_engine: Engine,
) -> None:
    async def main() -> tuple[list[Any], list[Any], str]:
        async with Client(create_mcp_server(api_engine)) as client:
            inside = await _call(client, "search_tools", {"query": QUERY, "scope": "builtin"})
            server = await _call(client, "search_tools", {"query": QUERY, "scope": "gmail"})
            unknown = await _error_text(
                client, "search_tools", {"query": QUERY, "scope": "elsewhere"}
            )
            return inside, server, unknown

    inside, server, unknown = anyio.run(main)
    assert inside and all(h["source"] == "builtin" for h in inside)
    assert server and all(h["category"] == "gmail" for h in server)
    assert "scope" in unknown and "'elsewhere'" in unknown
    assert "valid: all, " in unknown and "gmail" in unknown and "builtin" in unknown


def test_an_empty_index_says_so_in_instructions_and_search_errors(
    tmp_path: Path, vector_cache: Path
) -> None:
    engine = Engine.open(Settings(db=str(tmp_path / "empty.db"), cache_dir=str(vector_cache)))
    try:
        server = create_mcp_server(engine)

        async def main() -> tuple[str | None, str]:
            async with Client(server) as client:
                return (
                    client.instructions,
                    await _error_text(client, "search_tools", {"query": "weather"}),
                )

        instructions, error = anyio.run(main)
    finally:
        engine.close()
    assert instructions is not None and "run `toolscout sync`" in instructions
    assert "index is empty or missing: run `toolscout sync`" in error


def test_tool_errors_carry_the_code_and_field(api_engine: Engine) -> None:
    async def main() -> tuple[str, str, str]:
        async with Client(create_mcp_server(api_engine)) as client:
            return (
                await _error_text(client, "search_tools", {"query": "  "}),
                await _error_text(client, "get_tool_schema", {"tool_id": "no::such"}),
                await _error_text(client, "search_skills", {"query": "x", "threshold": 3}),
            )

    empty, missing, threshold = anyio.run(main)
    assert empty.startswith("empty_query: query:")
    assert missing.startswith("tool_not_found") and "no::such" in missing
    assert threshold == "invalid_parameter: threshold: must be between 0.0 and 1.0, got 3"


def test_an_out_of_range_limit_names_the_field_and_the_allowed_range(api_engine: Engine) -> None:
    async def main() -> tuple[str, str]:
        async with Client(create_mcp_server(api_engine)) as client:
            return (
                await _error_text(client, "search_tools", {"query": QUERY, "limit": 500}),
                await _error_text(client, "search_tools", {"limit": 5}),
            )

    limit, missing = anyio.run(main)
    assert limit == "invalid_parameter: limit: must be between 1 and 50, got 500"
    assert missing.startswith("invalid_parameter: query: ") and "Error executing" not in missing


def test_server_info_carries_the_package_version(api_engine: Engine) -> None:
    import toolscout

    async def main() -> str | None:
        async with Client(create_mcp_server(api_engine)) as client:
            return client.server_info.version if client.server_info else None

    assert anyio.run(main) == toolscout.__version__


def test_stdio_server_lists_and_answers_every_tool(served_db: Path, vector_cache: Path) -> None:
    params = StdioServerParameters(
        command=TOOLSCOUT, args=["mcp"], env=server_env(served_db, vector_cache)
    )

    async def main() -> dict[str, Any]:
        with anyio.fail_after(120):
            async with Client(params) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                hits = await _call(client, "search_tools", {"query": QUERY})
                schema = await _call(client, "get_tool_schema", {"tool_id": hits[0]["id"]})
                skills = await _call(client, "list_skills", {})
                matched = await _call(client, "search_skills", {"query": QUERY})
                name = client.server_info.name if client.server_info else None
                return {
                    "listed": listed,
                    "hits": hits,
                    "schema": schema,
                    "skills": skills,
                    "matched": matched,
                    "name": name,
                }

    out = anyio.run(main)
    assert out["listed"] == EXPECTED_TOOLS
    assert out["name"] == "toolscout"
    assert out["schema"]["id"] == out["hits"][0]["id"]
    assert out["schema"]["input_schema"]["type"] == "object"
    assert len(out["skills"]) >= 20 and all(s["tool_count"] >= 0 for s in out["skills"])
    assert out["matched"][0]["id"] == "email"


def test_http_server_answers_over_streamable_http(launch: Callable[..., Launched]) -> None:
    server = launch("mcp", "--http", "--freeact", "--port", "0")

    async def main() -> tuple[set[str], str | None, list[Any]]:
        with anyio.fail_after(60):
            async with Client(f"{server.url}/mcp") as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                name = client.server_info.name if client.server_info else None
                hits = await _call(client, "search_tools", {"query": QUERY, "limit": 3})
                return listed, name, hits

    listed, name, hits = anyio.run(main)
    assert listed == EXPECTED_TOOLS
    assert name == "pytools"
    assert len(hits) == 3


def test_http_server_with_a_read_key_refuses_requests_without_it(
    launch: Callable[..., Launched],
) -> None:
    server = launch("mcp", "--http", "--port", "0", TOOLSCOUT_READ_KEY="reader")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    refused = httpx.post(f"{server.url}/mcp", json=ping, timeout=30)
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    wrong = httpx.post(
        f"{server.url}/mcp", json=ping, headers={"Authorization": "Bearer nope"}, timeout=30
    )
    assert wrong.status_code == 401

    async def main() -> list[Any]:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(
                headers={"Authorization": "Bearer reader"}, timeout=30
            ) as http:
                transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
                async with Client(transport) as client:
                    hits: list[Any] = await _call(client, "search_tools", {"query": QUERY})
                    return hits

    assert anyio.run(main)


def test_tools_list_leaves_out_titles_derived_from_names_but_keeps_written_ones() -> None:
    from toolscout.api.mcp_server import _untitled

    schema = {
        "title": "search_toolsArguments",
        "type": "object",
        "properties": {
            "item_type": {"title": "Item Type", "type": "string"},
            "title": {"title": "Title", "type": "string"},
            "mode": {"title": "How to search", "enum": ["a", "b"]},
            "nested": {"anyOf": [{"title": "Point", "type": "object"}, {"type": "null"}]},
        },
    }
    assert _untitled(schema) == {
        "type": "object",
        "properties": {
            "item_type": {"type": "string"},
            "title": {"type": "string"},
            "mode": {"title": "How to search", "enum": ["a", "b"]},
            "nested": {"anyOf": [{"title": "Point", "type": "object"}, {"type": "null"}]},
        },
    }


def test_scope_also_names_a_tool_folder_category(engine: Engine, tmp_path: Path) -> None:
    from toolscout.ingest.pyfile import ToolDirectory

    for category, name, doc in [
        ("mail", "send_mail", "Send an email message to a colleague"),
        ("mail", "read_mail", "Read the newest email messages"),
        ("chat", "post_message", "Post a message to a colleague in a chat channel"),
    ]:
        path = tmp_path / "tools" / "mcptools" / category / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'def run(text: str):\n    """{doc}"""\n', encoding="utf-8")
    engine.index([ToolDirectory(tmp_path / "tools").read()])

    async def main() -> tuple[list[Any], list[Any]]:
        async with Client(create_mcp_server(engine)) as client:
            everywhere = await _call(client, "search_tools", {"query": QUERY, "limit": 3})
            chat = await _call(client, "search_tools", {"query": QUERY, "scope": "chat"})
            return everywhere, chat

    everywhere, chat = anyio.run(main)
    assert {h["category"] for h in everywhere} == {"mail", "chat"}
    assert [h["id"] for h in chat] == ["mcptools:chat:post_message"]
