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

from support.served import ADMIN, TOOLSCOUT, Launched, server_env
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
    return [h["id"] for h in json.loads(out.stdout)["tools"]]


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
            [h["id"] for h in http.get("/api/v1/search", params={"query": q}).json()["tools"]]
            for q in QUERIES
        ]
    cli = [_cli_ids(served_db, vector_cache, q) for q in QUERIES]
    mcp = _mcp_ids(api_engine, QUERIES)
    assert all(len(ids) == 5 for ids in rest)
    assert rest == cli == mcp


REQUESTS: list[dict[str, Any]] = [
    {"query": QUERIES[0], "strategy": "hierarchical", "limit": 5},
    {"query": QUERIES[1], "strategy": "direct", "limit": 5, "min_score": 0.0},
    {"query": QUERIES[2], "strategy": "hybrid", "limit": 4, "item_type": "tool"},
]


def _python_answer(engine: Engine, req: dict[str, Any]) -> list[tuple[str, float]]:
    result = engine.search(**req)
    return [(h.tool.id, round(h.score, 6)) for h in result.tools]


def _cli_answer(db: Path, cache: Path, req: dict[str, Any]) -> list[tuple[str, float]]:
    args = [TOOLSCOUT, "search", req["query"], "--json", "--limit", str(req["limit"])]
    args += ["--strategy", req["strategy"], "--min-score", str(req.get("min_score", 0.0))]
    if "item_type" in req:
        args += ["--item-type", req["item_type"]]
    out = subprocess.run(
        args, env=server_env(db, cache), capture_output=True, text=True, timeout=120, check=True
    )
    return [(h["id"], h["score"]) for h in json.loads(out.stdout)["tools"]]


def test_every_door_gives_the_same_answer_to_the_same_request(
    launch: Callable[..., Launched], served_db: Path, vector_cache: Path, api_engine: Engine
) -> None:
    # min_score at the second tool's calibrated score: some tools pass it, some do not.
    second = engine_scores = _python_answer(api_engine, {**REQUESTS[1], "min_score": 0.0})
    REQUESTS[1]["min_score"] = second[1][1]
    server = launch("serve", "--port", "0")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        # REST's POST defaults to the contract's stage-2 threshold; the other doors to none.
        rest = [
            [
                (h["id"], h["score"])
                for h in http.post("/api/v1/search", json={**req, "tool_threshold": 0.0}).json()[
                    "tools"
                ]
            ]
            for req in REQUESTS
        ]

    async def over_mcp() -> list[list[tuple[str, float]]]:
        out: list[list[tuple[str, float]]] = []
        with anyio.fail_after(120):
            async with Client(f"{server.url}/mcp") as client:  # the same port as REST
                for req in REQUESTS:
                    result = await client.call_tool("search_tools", req)
                    content: Any = result.structured_content
                    out.append([(h["id"], h["score"]) for h in content["result"]])
        return out

    mcp = anyio.run(over_mcp)
    cli = [_cli_answer(served_db, vector_cache, req) for req in REQUESTS]
    python = [_python_answer(api_engine, req) for req in REQUESTS]
    cut = REQUESTS[1]["min_score"]
    assert all(python) and python[1] and all(s >= cut for _, s in python[1])
    assert len(python[1]) < len(engine_scores)
    assert python == rest == mcp == cli
