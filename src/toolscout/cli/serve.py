"""Serving commands: ``toolscout serve`` (REST API plus MCP at /mcp) and ``toolscout mcp``
(MCP server alone, stdio or HTTP).

Both bind 127.0.0.1 unless told otherwise. Each uvicorn worker opens its own engine through
``toolscout.api.http:app_from_env``, which reads the same settings this command resolved
(passed down as ``TOOLSCOUT_*`` environment variables, the only channel into a worker).

``serve --watch`` keeps the index in sync like ``toolscout watch``: the watcher runs in a thread of
this process only (the serving process with one worker, the supervisor with several), with an
engine of its own on the same store; the workers see its writes through the store.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from toolscout.api.guard import is_public_bind, serving_limits
from toolscout.cli import app, err_console
from toolscout.cli.options import DbOption, open_engine, settings
from toolscout.cli.sync import (
    CatalogArg,
    McpConfigOption,
    ToolsDirOption,
    _sources,
    _summary_line,
    tool_dir_list,
)
from toolscout.config import Settings
from toolscout.ingest.mcpconfig import DEFAULT_TIMEOUT
from toolscout.sync.sync import SourceSummary

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp

HostOption = Annotated[
    str | None,
    typer.Option(help="Interface to bind. Default 127.0.0.1 (settings.host); 0.0.0.0 exposes it."),
]
# Bounded here: an out-of-range port would otherwise wrap or bind a random one.
PortOption = Annotated[
    int | None, typer.Option(min=0, max=65535, help="TCP port (0: any free port).")
]
Loop = Literal["auto", "asyncio", "uvloop"]


def warn_public_bind(bind: str, s: Settings) -> None:
    """Say loudly what a bind to a non-loopback address exposes, before serving starts."""
    if not is_public_bind(bind):
        return
    lines = [f"WARNING: serving on {bind}, reachable from other machines."]
    if not s.read_key:
        lines.append(
            "  No read key is set: remote clients are refused (403) and only loopback clients "
            "can search. Set TOOLSCOUT_READ_KEY to serve remote clients with a key."
        )
    if not s.allowed_hosts:
        lines.append(
            "  Only loopback Host names (and the bind address itself) are accepted; list the "
            "names clients use in TOOLSCOUT_ALLOWED_HOSTS (JSON list)."
        )
    lines.append("  Keys travel in clear text over plain HTTP: put TLS in front of it.")
    err_console.print(
        "\n".join(lines), style="bold red", markup=False, highlight=False, soft_wrap=True
    )


def run_mcp_http(
    server: MCPServer,
    s: Settings,
    *,
    host: str,
    port: int,
    log_level: str,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
    on_force: Callable[[], object] | None = None,
) -> None:
    """Serve ``server`` over streamable HTTP at ``/mcp`` behind the key policy and the guard,
    with the settings' slow-client limits, until stopped; ``wrap`` adds a lifespan around it,
    ``on_force`` runs on a second stop signal (which stops at once)."""
    from toolscout.api.auth import KeyPolicy
    from toolscout.api.mcp import create_mcp_http_app
    from toolscout.api.serving import run_server

    asgi = create_mcp_http_app(
        server,
        KeyPolicy(s.api_key, s.read_key),
        host=host,
        allowed_hosts=s.allowed_hosts,
        max_body_bytes=s.max_body_bytes,
    )
    run_server(
        asgi if wrap is None else wrap(asgi),
        on_force=on_force,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        **serving_limits(s),
    )


@app.command()
def serve(
    host: HostOption = None,
    port: PortOption = None,
    db: DbOption = None,
    workers: Annotated[int, typer.Option(min=1, max=32, help="Worker processes.")] = 1,
    loop: Annotated[str, typer.Option(help="Event loop: auto, asyncio or uvloop.")] = "auto",
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Keep the index in sync while serving, as `toolscout watch` (sources from the "
            "options below, else the configuration).",
        ),
    ] = False,
    catalogs: CatalogArg = None,
    mcp_config: McpConfigOption = None,
    tools_dir: ToolsDirOption = None,
) -> None:
    """Serve the REST API (OpenAPI at /docs) and MCP over streamable HTTP at /mcp, on one
    port. Writes need TOOLSCOUT_API_KEY."""
    import uvicorn

    if not watch and (catalogs or mcp_config or tools_dir):
        raise typer.BadParameter("source options need --watch", param_hint="--watch")

    s = settings(db)
    if loop not in ("auto", "asyncio", "uvloop"):
        raise typer.BadParameter("must be auto, asyncio or uvloop", param_hint="--loop")
    bind = host or s.host
    # Workers are separate processes: they get the resolved store location (and the bind
    # address, which the Host allow-list accepts) through the env.
    os.environ["TOOLSCOUT_DB"] = s.db
    os.environ["TOOLSCOUT_HOST"] = bind
    if workers > 1 and s.embed_threads is None:
        # Each worker runs its own model: split the cores instead of oversubscribing them.
        os.environ["TOOLSCOUT_EMBED_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    # Fail here with one clear message (e.g. an index built with another model or analyzer)
    # rather than in workers the supervisor keeps restarting. One worker runs in this process
    # and reuses the loaded model; with several, the supervisor keeps a copy it does not use.
    open_engine(s.db).close()
    warn_public_bind(bind, s)
    stop_watch = _start_watch(s.db, catalogs, mcp_config, tools_dir) if watch else None
    try:
        uvicorn.run(
            "toolscout.api.http:app_from_env",
            factory=True,
            host=bind,
            port=s.port if port is None else port,
            workers=workers,
            loop=loop,
            log_level=log_level,
            access_log=False,
            **serving_limits(s),
        )
    finally:
        if stop_watch is not None:
            stop_watch()


def _start_watch(
    db: str,
    catalogs: list[str] | None,
    mcp_config: list[Path] | None,
    tools_dir: list[Path] | None,
) -> Callable[[], None]:
    """Start the watcher thread in this process; returns what stops it and closes its engine.

    Raises:
        IngestError: no sources, or a tool folder that does not exist.
        ConfigError, StoreError, EmbedError: as for ``open_engine``.
    """
    from toolscout.sync.watch import Watcher

    found = _sources(db, mcp_config, tool_dir_list(tools_dir), catalogs, DEFAULT_TIMEOUT)
    for problem in found.problems:
        err_console.print(f"config {problem}", highlight=False, markup=False)
    engine = open_engine(db)

    def show(summary: SourceSummary) -> None:
        if summary.error or summary.added or summary.updated or summary.deleted:
            err_console.print("watch: " + _summary_line(summary), highlight=False)

    try:
        stop_thread = Watcher(engine, found, on_sync=show).start_in_thread()
    except BaseException:
        engine.close()
        raise

    def stop() -> None:
        if stop_thread(10.0):
            engine.close()
        else:  # edge: a sync still running; the daemon thread ends with the process
            err_console.print("watch: did not stop within 10 s", highlight=False, markup=False)

    return stop


@app.command()
def mcp(
    http: Annotated[
        bool, typer.Option("--http", help="Streamable HTTP at /mcp, not stdio.")
    ] = False,
    freeact: Annotated[
        bool, typer.Option(help="Name the server 'pytools' to replace freeact's tool search.")
    ] = False,
    gateway: Annotated[
        bool | None,
        typer.Option(
            "--gateway/--no-gateway",
            help="Also describe and call the upstream servers' tools (get_tool_schemas, "
            "call_tool). Default: on when MCP servers are configured.",
            show_default=False,
        ),
    ] = None,
    mcp_config: McpConfigOption = None,
    host: HostOption = None,
    port: PortOption = None,
    db: DbOption = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level (--http).")] = "info",
) -> None:
    """Serve MCP tools search_tools, get_tool_schema, list_skills, search_skills; in gateway
    mode also get_tool_schemas and call_tool."""
    from toolscout.api.gate import SearchGate
    from toolscout.api.http import limit_blas_threads
    from toolscout.api.mcp import create_mcp_server
    from toolscout.cli.gateway import gateway_servers, serve_gateway

    limit_blas_threads()
    s = settings(db)
    servers = gateway_servers(s, mcp_config, gateway)
    engine = open_engine(db, must_exist=True)
    try:
        name = "pytools" if freeact else "toolscout"
        bind = host or s.host
        bound_port = s.port if port is None else port
        if http:
            warn_public_bind(bind, s)
        if servers is not None:
            serve_gateway(
                engine,
                s,
                servers,
                name=name,
                http=http,
                host=bind,
                port=bound_port,
                log_level=log_level,
            )
            return
        server = create_mcp_server(engine, name=name, gate=SearchGate.for_settings(engine, s))
        if not http:
            server.run("stdio")
            return
        run_mcp_http(server, s, host=bind, port=bound_port, log_level=log_level)
    finally:
        engine.close()
