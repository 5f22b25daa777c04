"""Gateway mode of ``toolscout mcp``: the MCP server plus calls into the upstream servers."""

from __future__ import annotations

from pathlib import Path

import anyio

from toolscout.cli import err_console
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.mcpconfig import ServerSpec


def gateway_servers(
    settings: Settings, mcp_config: list[Path] | None, flag: bool | None
) -> list[ServerSpec] | None:
    """The upstream servers when gateway mode is on, else ``None``.

    Raises:
        IngestError: a configuration file cannot be read at all.
    """
    from toolscout.gateway.factory import gateway_enabled, upstream_servers

    if flag is False:
        return None
    servers, problems = upstream_servers(settings, mcp_config or [])
    if not gateway_enabled(settings, servers, flag):
        return None
    for problem in problems:
        err_console.print(f"gateway: config {problem}", highlight=False, markup=False)
    return servers


def serve_gateway(
    engine: Engine,
    settings: Settings,
    servers: list[ServerSpec],
    *,
    name: str,
    http: bool,
    host: str,
    port: int,
    log_level: str,
) -> None:
    """Serve the gateway over stdio or streamable HTTP until stopped.

    Raises:
        ConfigError: an invalid policy or audit log setting.
    """
    from toolscout.api.gate import SearchGate
    from toolscout.gateway.factory import build_gateway
    from toolscout.gateway.server import GatewayLifespan, create_gateway_server

    gateway = build_gateway(engine, settings, servers)
    gate = SearchGate.for_settings(engine, settings)
    server = create_gateway_server(engine, gateway, name=name, gate=gate)
    if not http:

        async def run() -> None:
            async with gateway:
                await server.run_stdio_async()

        anyio.run(run)
        return
    from toolscout.cli.serve import run_mcp_http

    run_mcp_http(
        server,
        settings,
        host=host,
        port=port,
        log_level=log_level,
        wrap=lambda asgi: GatewayLifespan(asgi, gateway),
    )
