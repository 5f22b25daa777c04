"""A real MCP server the gateway tests call through (run as a subprocess, stdio or HTTP).

Built on the SDK's ``MCPServer``. Its tools cover what a gateway must pass on: plain and
structured results, an ``isError`` result, progress, a slow tool, one that hangs, one that
kills the process, and a destructive one. ``python upstream_server.py [stdio|http] [MARKER]``:
``MARKER`` is a file the ``crash`` tool's process appends its pid to, so a test can tell a
restart happened. With ``UPSTREAM_STUBBORN=1`` in its environment it ignores SIGTERM and keeps
running after its input ends (only SIGKILL stops it); ``UPSTREAM_PIDS`` names a file it appends
``PID PARENT_PID`` to, ``UPSTREAM_CALLS`` one it appends ``hang`` to when that call arrives,
``UPSTREAM_EOF`` one it appends ``eof`` to when its input ends (stdio).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

TRANSPORT = sys.argv[1] if len(sys.argv) > 1 else "stdio"
MARKER = sys.argv[2] if len(sys.argv) > 2 else None

server = MCPServer("upstream", log_level="WARNING")
READ_ONLY = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)


@server.tool(annotations=READ_ONLY)
def echo(text: str, times: int = 1) -> str:
    """Repeat the text."""
    return " ".join([text] * times)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers; the sum comes back as structured content."""
    return {"sum": a + b}


@server.tool(annotations=READ_ONLY)
def fail(reason: str) -> types.CallToolResult:
    """Answer with an error result carrying the reason."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"failed: {reason}")], is_error=True
    )


@server.tool(annotations=READ_ONLY)
async def count(ctx: Context, steps: int) -> str:
    """Count to steps, reporting progress after each."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted to {steps}"


@server.tool(annotations=READ_ONLY)
async def sleep(seconds: float) -> str:
    """Wait, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=READ_ONLY)
async def hang() -> str:
    """Never answer."""
    if os.environ.get("UPSTREAM_CALLS"):  # tells a test the call has arrived
        with open(os.environ["UPSTREAM_CALLS"], "a", encoding="utf-8") as fh:
            fh.write("hang\n")
    await anyio.sleep_forever()
    return "unreachable"


@server.tool(annotations=READ_ONLY)
def blob(size: int) -> str:
    """Answer with size characters of text."""
    return "x" * size


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """This process's id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Exit the process without answering (not annotated read-only)."""
    os._exit(3)


@server.tool(annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True))
def wipe(path: str) -> str:
    """Delete everything under a path (pretends to)."""
    return f"wiped {path}"


if MARKER:
    with open(MARKER, "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
if os.environ.get("UPSTREAM_PIDS"):
    with open(os.environ["UPSTREAM_PIDS"], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()} {os.getppid()}\n")
STUBBORN = os.environ.get("UPSTREAM_STUBBORN") == "1"
if STUBBORN:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

if TRANSPORT == "http":
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
else:
    try:
        server.run("stdio")
    finally:
        if os.environ.get("UPSTREAM_EOF"):
            with open(os.environ["UPSTREAM_EOF"], "a", encoding="utf-8") as fh:
                fh.write("eof\n")
        while STUBBORN:  # input ended (or its output broke): a well-behaved server exits here
            time.sleep(60)
