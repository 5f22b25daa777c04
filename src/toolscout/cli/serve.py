"""Serving commands: ``toolscout serve`` (REST API) and ``toolscout mcp`` (MCP server).

Both bind 127.0.0.1 unless told otherwise. Each uvicorn worker opens its own engine through
``toolscout.api.http:app_from_env``, which reads the same settings this command resolved
(passed down as ``TOOLSCOUT_*`` environment variables, the only channel into a worker).
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

import typer

from toolscout.cli import app
from toolscout.cli.options import DbOption, open_engine, settings

HostOption = Annotated[
    str | None,
    typer.Option(help="Interface to bind. Default 127.0.0.1 (settings.host); 0.0.0.0 exposes it."),
]
PortOption = Annotated[int | None, typer.Option(help="TCP port (0: any free port).")]
Loop = Literal["auto", "asyncio", "uvloop"]


@app.command()
def serve(
    host: HostOption = None,
    port: PortOption = None,
    db: DbOption = None,
    workers: Annotated[int, typer.Option(min=1, max=32, help="Worker processes.")] = 1,
    loop: Annotated[str, typer.Option(help="Event loop: auto, asyncio or uvloop.")] = "auto",
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the REST API (OpenAPI at /docs). Writes need TOOLSCOUT_API_KEY."""
    import uvicorn

    s = settings(db)
    if loop not in ("auto", "asyncio", "uvloop"):
        raise typer.BadParameter("must be auto, asyncio or uvloop", param_hint="--loop")
    # Workers are separate processes: they get the resolved store location through the env.
    os.environ["TOOLSCOUT_DB"] = s.db
    # Fail here with one clear message (e.g. an index built with another model or analyzer)
    # rather than in workers the supervisor keeps restarting. One worker runs in this process
    # and reuses the loaded model; with several, the supervisor keeps a copy it does not use.
    open_engine(s.db).close()
    uvicorn.run(
        "toolscout.api.http:app_from_env",
        factory=True,
        host=host or s.host,
        port=s.port if port is None else port,
        workers=workers,
        loop=loop,
        log_level=log_level,
        access_log=False,
    )


@app.command()
def mcp(
    http: Annotated[
        bool, typer.Option("--http", help="Streamable HTTP at /mcp, not stdio.")
    ] = False,
    freeact: Annotated[
        bool, typer.Option(help="Name the server 'pytools' to replace freeact's tool search.")
    ] = False,
    host: HostOption = None,
    port: PortOption = None,
    db: DbOption = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level (--http).")] = "info",
) -> None:
    """Serve MCP tools search_tools, get_tool_schema, list_skills, search_skills."""
    from toolscout.api.auth import KeyPolicy
    from toolscout.api.http import limit_blas_threads
    from toolscout.api.mcp import create_mcp_http_app, create_mcp_server

    limit_blas_threads()
    s = settings(db)
    engine = open_engine(db)
    try:
        server = create_mcp_server(engine, name="pytools" if freeact else "toolscout")
        if not http:
            server.run("stdio")
            return
        import uvicorn

        bind = host or s.host
        asgi = create_mcp_http_app(server, KeyPolicy(s.api_key, s.read_key), host=bind)
        uvicorn.run(
            asgi,
            host=bind,
            port=s.port if port is None else port,
            log_level=log_level,
            access_log=False,
        )
    finally:
        engine.close()
