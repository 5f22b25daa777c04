"""Real MCP servers for the ingest tests, written to disk and run as subprocesses.

The server is the official SDK's low-level ``Server``. It reads its tools, prompts and resources
from a JSON file on every list request (so a test changes the server by rewriting the file),
pages two items at a time, and publishes a tools-changed event when the file changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from toolscout.ingest.mcpconfig import ServerSpec

SERVER_SCRIPT = r"""
import json, os, socket, sys
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

CATALOG = sys.argv[1]
TRANSPORT = sys.argv[2] if len(sys.argv) > 2 else "stdio"
#: "session": announce changes on the session (2025-era connections) instead of the bus.
NOTIFY = sys.argv[3] if len(sys.argv) > 3 else "bus"
PAGE = 2
bus = InMemorySubscriptionBus()
sessions = []


def load():
    with open(CATALOG, encoding="utf-8") as f:
        return json.load(f)


def page(key, params):
    items = load().get(key, [])
    start = int(params.cursor) if params is not None and params.cursor else 0
    nxt = str(start + PAGE) if start + PAGE < len(items) else None
    return items[start:start + PAGE], nxt


async def list_tools(ctx, params):
    if NOTIFY == "session" and ctx.session not in sessions:
        sessions.append(ctx.session)
    items, nxt = page("tools", params)
    return types.ListToolsResult(tools=[types.Tool(**t) for t in items], next_cursor=nxt)


async def list_prompts(ctx, params):
    items, nxt = page("prompts", params)
    return types.ListPromptsResult(prompts=[types.Prompt(**p) for p in items], next_cursor=nxt)


async def list_resources(ctx, params):
    items, nxt = page("resources", params)
    return types.ListResourcesResult(
        resources=[types.Resource(**r) for r in items], next_cursor=nxt
    )


@asynccontextmanager
async def lifespan(server):
    async def publish_changes():
        last = os.stat(CATALOG).st_mtime_ns
        while True:
            await anyio.sleep(0.02)
            now = os.stat(CATALOG).st_mtime_ns
            if now != last:
                last = now
                if NOTIFY == "session":
                    for session in sessions:
                        await session.send_tool_list_changed()
                else:
                    await bus.publish(ToolsListChanged())

    async with anyio.create_task_group() as tg:
        tg.start_soon(publish_changes)
        yield {}
        tg.cancel_scope.cancel()


server = Server(
    "test-server",
    lifespan=lifespan,
    on_list_tools=list_tools,
    on_list_prompts=list_prompts,
    on_list_resources=list_resources,
    on_subscriptions_listen=ListenHandler(bus),
)


async def main_stdio():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def sse_app():
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport("/messages/")

    async def handle(request):
        async with sse.connect_sse(request.scope, request.receive, request._send) as (r, w):
            await server.run(r, w, server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[
            Route("/sse", endpoint=handle, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
        ]
    )


def main_http(app):
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # listen before announcing the port: early connects queue instead of failing
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if TRANSPORT == "http":
    main_http(server.streamable_http_app())
elif TRANSPORT == "sse":
    main_http(sse_app())
else:
    anyio.run(main_stdio)
"""

CRASH_SCRIPT = "import sys\nprint('fatal: TOKEN is not set', file=sys.stderr)\nsys.exit(3)\n"
HANG_SCRIPT = "import sys\nsys.stdin.read()\n"


def tool(name: str, description: str = "", **props: str) -> dict[str, Any]:
    """An MCP tool definition with string parameters."""
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in props.items()},
        },
    }


class Catalog:
    """The JSON file a test server lists from; rewriting it changes the server."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(
        self,
        tools: list[dict[str, Any]],
        prompts: list[dict[str, Any]] | None = None,
        resources: list[dict[str, Any]] | None = None,
    ) -> None:
        payload = {"tools": tools, "prompts": prompts or [], "resources": resources or []}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        tmp.replace(self.path)  # atomic: the server never reads half a file


def script_spec(tmp_path: Path, name: str, script: str, timeout: float) -> ServerSpec:
    path = tmp_path / f"{name}.py"
    path.write_text(script, encoding="utf-8")
    return ServerSpec(
        name=name, transport="stdio", command=sys.executable, args=(str(path),), timeout=timeout
    )
