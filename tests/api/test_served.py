"""End to end: the real ``toolscout serve`` on a free port, and the parity of the three
surfaces (CLI, REST, MCP) on the same index."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

from conftest import ADMIN, TOOLSCOUT, Launched, server_env
from toolscout.api.mcp import create_mcp_server
from toolscout.engine import Engine

QUERIES = [
    "send an email to a colleague",
    "open a new issue in a repository",
    "what will the weather be tomorrow",
    "convert an amount between currencies",
]


def test_served_api_answers_reads_and_guards_writes(launch: Callable[..., Launched]) -> None:
    server = launch("serve", "--port", "0", TOOLSCOUT_API_KEY=ADMIN)
    assert server.url.startswith("http://127.0.0.1:")  # loopback unless told otherwise
    with httpx.Client(base_url=server.url, timeout=60) as http:
        health = http.get("/health").json()
        assert health["status"] == "ok" and health["tools"] >= 100
        found = http.post("/api/v1/search", json={"query": QUERIES[0], "limit": 3})
        assert found.status_code == 200 and len(found.json()["tools"]) >= 1
        assert http.post("/api/v1/search", json={"query": ""}).status_code == 400
        assert http.post("/api/v1/search", json={"query": "x", "limit": 99}).status_code == 422
        new = {"id": "astronomy", "name": "Astronomy"}
        assert http.post("/api/v1/skills", json=new).status_code == 401
        created = http.post(
            "/api/v1/skills", json=new, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert created.status_code == 201
        assert "toolscout_http_requests_total" in http.get("/metrics").text


def _cli_ids(db: Path, cache: Path, query: str) -> list[str]:
    out = subprocess.run(
        [TOOLSCOUT, "search", query, "--json", "--limit", "5"],
        env=server_env(db, cache),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [h["id"] for h in json.loads(out.stdout)["hits"]]


def _mcp_ids(engine: Engine, queries: list[str]) -> list[list[str]]:
    async def main() -> list[list[str]]:
        out: list[list[str]] = []
        async with Client(create_mcp_server(engine)) as client:
            for query in queries:
                result = await client.call_tool("search_tools", {"query": query, "limit": 5})
                content: Any = result.structured_content
                out.append([h["id"] for h in content["result"]])
        return out

    return anyio.run(main)


def test_cli_rest_and_mcp_return_the_same_tools(
    launch: Callable[..., Launched], served_db: Path, vector_cache: Path, api_engine: Engine
) -> None:
    server = launch("serve", "--port", "0")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        rest = [
            [h["id"] for h in http.get("/api/v1/search", params={"query": q}).json()["hits"]]
            for q in QUERIES
        ]
    cli = [_cli_ids(served_db, vector_cache, q) for q in QUERIES]
    mcp = _mcp_ids(api_engine, QUERIES)
    assert all(len(ids) == 5 for ids in rest)
    assert rest == cli == mcp
