"""The gateway's three figures, against real MCP servers.

    python bench/gateway.py [--npm-dir DIR] [--calls 200]

Servers: the published ``mcp-server-time`` and ``mcp-server-git`` (PyPI, requirements-dev.lock)
and, from npm, ``@modelcontextprotocol/server-memory``, ``-filesystem``, ``-everything`` and
``-sequential-thinking`` (installed once with
``npm install --prefix DIR @modelcontextprotocol/server-memory ...``; the script does it when
``DIR/node_modules/.bin`` lacks them). All run over stdio, offline.

1. Context at session start: tiktoken ``cl100k_base`` tokens of the tools list a client gets
   when configured with every server directly (each server's ``tools/list``, as
   ``{name, description, inputSchema}`` compact JSON, as bench/context_size.py counts) versus
   with the toolscout gateway alone (its own ``tools/list``).
2. ``call_tool`` latency: ``get_current_time`` of mcp-server-time called directly over stdio
   versus through ``toolscout mcp --gateway`` over stdio, interleaved, ``--calls`` each.
3. An agent-style script (the SDK's client over stdio to the gateway process) does
   search_tools -> get_tool_schemas -> call_tool for 20 requests; errors are counted (a
   protocol error or an ``isError`` result).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from context_size import cl100k

NPM_PACKAGES = {
    "memory": "@modelcontextprotocol/server-memory",
    "filesystem": "@modelcontextprotocol/server-filesystem",
    "everything": "@modelcontextprotocol/server-everything",
    "thinking": "@modelcontextprotocol/server-sequential-thinking",
}
BIN = Path(sys.executable).parent


def servers(npm_dir: Path, work: Path) -> dict[str, dict[str, Any]]:
    bins = npm_dir / "node_modules" / ".bin"
    if not (bins / "mcp-server-memory").exists():
        subprocess.run(
            ["npm", "install", "--prefix", str(npm_dir), "--no-audit", "--no-fund",
             *NPM_PACKAGES.values()],
            check=True,
        )  # fmt: skip
    repo = work / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.org"}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / "notes.txt").write_text("draft\n", encoding="utf-8")
    files = work / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from the benchmark\n", encoding="utf-8")
    return {
        "time": {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(BIN / "mcp-server-git"), "args": ["--repository", str(repo)]},
        "memory": {"command": str(bins / "mcp-server-memory"), "args": [],
                   "env": {"MEMORY_FILE_PATH": str(work / "memory.jsonl")}},
        "filesystem": {"command": str(bins / "mcp-server-filesystem"), "args": [str(files)]},
        "everything": {"command": str(bins / "mcp-server-everything"), "args": ["stdio"]},
        "thinking": {"command": str(bins / "mcp-server-sequential-thinking"), "args": []},
    }  # fmt: skip


def tools_list_json(tools: list[Any]) -> str:
    return json.dumps(
        {
            "tools": [
                {"name": t.name, "description": t.description or "", "inputSchema": t.input_schema}
                for t in tools
            ]
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


async def direct_lists(specs: list[Any]) -> dict[str, list[Any]]:
    from toolscout.ingest.mcp import McpSource

    out = {}
    for spec in specs:
        async with McpSource(spec).connect() as client:
            out[spec.name] = (await client.list_tools()).tools
    return out


def gateway_params(db: str, config: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(
        command=str(BIN / "toolscout"),
        args=["mcp", "--gateway", "--mcp-config", str(config)],
        env={**os.environ, "TOOLSCOUT_DB": db, "TOOLSCOUT_EMBED_THREADS": "1"},
    )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def library_latency(engine: Any, spec: Any, calls: int) -> dict[str, Any]:
    """Gateway.call in process (no client-to-gateway hop) vs the same server called directly."""
    from toolscout.gateway import Gateway
    from toolscout.ingest.mcp import McpSource

    direct_ms: list[float] = []
    via_ms: list[float] = []
    args = {"timezone": "UTC"}
    async with Gateway(engine, [spec]) as gateway, McpSource(spec).connect() as direct:
        for _ in range(10):
            await direct.call_tool("get_current_time", args)
            await gateway.call("time::get_current_time", args)
        for _ in range(calls):
            t0 = time.perf_counter()
            await direct.call_tool("get_current_time", args)
            t1 = time.perf_counter()
            await gateway.call("time::get_current_time", args)
            t2 = time.perf_counter()
            direct_ms.append((t1 - t0) * 1000)
            via_ms.append((t2 - t1) * 1000)
    return {
        "direct_ms": {"p50": round(statistics.median(direct_ms), 2),
                      "p95": round(pct(direct_ms, 0.95), 2)},
        "gateway_ms": {"p50": round(statistics.median(via_ms), 2),
                       "p95": round(pct(via_ms, 0.95), 2)},
        "added_p95_ms": round(pct(via_ms, 0.95) - pct(direct_ms, 0.95), 2),
    }  # fmt: skip


async def latency(spec: Any, params: Any, calls: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import stdio_client

    from toolscout.ingest.mcp import McpSource

    direct_ms: list[float] = []
    via_ms: list[float] = []
    args = {"timezone": "UTC"}
    async with (
        McpSource(spec).connect() as direct,
        Client(stdio_client(params), read_timeout_seconds=120) as gateway,
    ):
        for _ in range(10):  # warm both paths (the gateway starts its upstream lazily)
            await direct.call_tool("get_current_time", args)
            await gateway.call_tool(
                "call_tool", {"id": "time::get_current_time", "arguments": args}
            )
        for _ in range(calls):
            t0 = time.perf_counter()
            r1 = await direct.call_tool("get_current_time", args)
            t1 = time.perf_counter()
            r2 = await gateway.call_tool(
                "call_tool", {"id": "time::get_current_time", "arguments": args}
            )
            t2 = time.perf_counter()
            assert not r1.is_error and not r2.is_error, (r1, r2)
            direct_ms.append((t1 - t0) * 1000)
            via_ms.append((t2 - t1) * 1000)

    def stats(v: list[float]) -> dict[str, float]:
        return {"p50": round(statistics.median(v), 2), "p95": round(pct(v, 0.95), 2)}

    return {
        "calls": calls,
        "direct_ms": stats(direct_ms),
        "gateway_ms": stats(via_ms),
        "added_p50_ms": round(statistics.median(via_ms) - statistics.median(direct_ms), 2),
        "added_p95_ms": round(pct(via_ms, 0.95) - pct(direct_ms, 0.95), 2),
    }


def agent_requests(work: Path) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """(request, arguments the agent would give each tool it may pick)."""
    repo, files = str(work / "repo"), str(work / "files")
    return [
        ("what time is it in Tokyo right now", {"get_current_time": {"timezone": "Asia/Tokyo"}}),
        ("current time in New York", {"get_current_time": {"timezone": "America/New_York"}}),
        ("convert 14:30 from London time to Berlin time",
         {"convert_time": {"source_timezone": "Europe/London", "time": "14:30",
                           "target_timezone": "Europe/Berlin"}}),
        ("show the working tree status of my git repository", {"git_status": {"repo_path": repo}}),
        ("list the recent commits in the repo", {"git_log": {"repo_path": repo}}),
        ("which branches does the repository have", {"git_branch": {"repo_path": repo,
                                                                     "branch_type": "local"}}),
        ("show unstaged changes in git", {"git_diff_unstaged": {"repo_path": repo}}),
        ("list the files in a directory", {"list_directory": {"path": files}}),
        ("read the contents of a text file", {"read_text_file": {"path": f"{files}/hello.txt"},
                                              "read_file": {"path": f"{files}/hello.txt"}}),
        ("get size and modification time of a file",
         {"get_file_info": {"path": f"{files}/hello.txt"}}),
        ("search for files matching a pattern", {"search_files": {"path": files,
                                                                  "pattern": "hello"}}),
        ("which directories am I allowed to access", {"list_allowed_directories": {}}),
        ("remember a new person entity in the knowledge graph",
         {"create_entities": {"entities": [{"name": "Ada", "entityType": "person",
                                            "observations": ["writes programs"]}]}}),
        ("read the whole knowledge graph", {"read_graph": {}}),
        ("find nodes in memory about Ada", {"search_nodes": {"query": "Ada"}}),
        ("echo a message back to me", {"echo": {"message": "hello"}}),
        ("add two numbers together", {"get-sum": {"a": 2, "b": 3}, "add": {"a": 2, "b": 3}}),
        ("think through a problem step by step",
         {"sequentialthinking": {"thought": "first step", "nextThoughtNeeded": False,
                                 "thoughtNumber": 1, "totalThoughts": 1}}),
        ("what is the date today in Paris", {"get_current_time": {"timezone": "Europe/Paris"}}),
        ("show the log of commits in git", {"git_log": {"repo_path": repo}}),
    ]  # fmt: skip


async def agent(params: Any, work: Path) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import stdio_client

    errors, top1, rows = 0, 0, []
    async with Client(stdio_client(params), read_timeout_seconds=120) as client:
        for query, known in agent_requests(work):
            found = await client.call_tool("search_tools", {"query": query, "limit": 5})
            hits = (found.structured_content or {}).get("result", [])
            pick = next((h for h in hits if h["name"] in known), None)
            if pick is None:
                errors += 1
                rows.append({"query": query, "error": "no usable tool in the top 5"})
                continue
            top1 += hits[0]["id"] == pick["id"]
            schemas = await client.call_tool("get_tool_schemas", {"ids": [pick["id"]]})
            result = await client.call_tool(
                "call_tool", {"id": pick["id"], "arguments": known[pick["name"]]}
            )
            failed = schemas.is_error or result.is_error
            errors += failed
            rows.append({"query": query, "tool": pick["id"], "error": failed})
    return {"requests": len(rows), "errors": errors, "picked_top1": top1, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--npm-dir", type=Path, default=Path(tempfile.gettempdir()) / "gw-npm")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()

    from mcp import Client

    from toolscout.api.mcp_gateway import create_gateway_server
    from toolscout.config import load_settings
    from toolscout.engine import Engine
    from toolscout.gateway import Gateway
    from toolscout.ingest.mcp import McpSource
    from toolscout.ingest.mcpconfig import read_mcp_config

    enc = cl100k()
    with tempfile.TemporaryDirectory(prefix="toolscout-gw-") as tmp:
        work = Path(tmp)
        config = work / "claude_desktop_config.json"
        config.write_text(json.dumps({"mcpServers": servers(args.npm_dir, work)}))
        specs = read_mcp_config(config, timeout=60).servers
        db = str(work / "index.db")
        engine = Engine.open(load_settings(db=db))
        try:
            engine.index([McpSource(s).read() for s in specs])
            listed = anyio.run(direct_lists, specs)

            async def own_list() -> list[Any]:
                gateway = Gateway(engine, specs)
                async with gateway, Client(create_gateway_server(engine, gateway)) as c:
                    return list((await c.list_tools()).tools)

            gateway_tools = anyio.run(own_list)
            time_spec = next(s for s in specs if s.name == "time")
            in_process = anyio.run(library_latency, engine, time_spec, args.calls)
        finally:
            engine.close()
        direct_tokens = {n: len(enc.encode(tools_list_json(t))) for n, t in listed.items()}
        direct_total = len(enc.encode(tools_list_json([t for v in listed.values() for t in v])))
        gateway_tokens = len(enc.encode(tools_list_json(gateway_tools)))
        params = gateway_params(db, config)
        lat = anyio.run(latency, time_spec, params, args.calls)
        run = anyio.run(agent, params, work)
    report = {
        "context": {
            "servers": len(listed),
            "tools": sum(len(v) for v in listed.values()),
            "direct_tokens": direct_total,
            "direct_tokens_by_server": direct_tokens,
            "gateway_tokens": gateway_tokens,
            "gateway_tools": [t.name for t in gateway_tools],
            "cut_pct": round(100 * (1 - gateway_tokens / direct_total), 1),
        },
        "call_latency": lat,
        "call_latency_in_process": in_process,
        "agent": run,
        "load_1min": os.getloadavg()[0],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
