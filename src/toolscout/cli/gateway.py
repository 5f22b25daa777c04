"""Gateway mode of ``toolscout mcp``: the MCP server plus calls into the upstream servers."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from toolscout.cli import err_console
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.mcpconfig import ServerSpec

if TYPE_CHECKING:
    from toolscout.gateway.service import Gateway


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
    from toolscout.api.mcp_gateway import GatewayLifespan, create_gateway_server
    from toolscout.gateway.factory import build_gateway

    gateway = build_gateway(engine, settings, servers)
    gate = SearchGate.for_settings(engine, settings)
    server = create_gateway_server(engine, gateway, name=name, gate=gate)
    if not http:

        async def run() -> None:
            async with gateway, anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signal, gateway, tg.cancel_scope)
                await server.run_stdio_async()
                tg.cancel_scope.cancel()

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
        on_force=gateway.pool.kill,
    )


async def _stop_on_signal(gateway: Gateway, serving: anyio.CancelScope) -> None:
    """On SIGTERM or SIGINT: stop serving, close every upstream session (end of input, then
    SIGTERM, then SIGKILL), then end the process as the signal would have.

    By default SIGTERM ends Python at once, and each stdio server runs in its own process
    group, where a terminal's SIGINT never reaches it: both left servers running. The process
    ends by the signal itself because serving cannot always be cancelled: the SDK reads stdin
    in a worker thread that waits for the next line.
    """
    if sys.platform == "win32":  # no signal handlers in the event loop there
        return
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            serving.cancel()
            with anyio.CancelScope(shield=True):
                await gateway.pool.shutdown()
                if gateway.audit is not None:
                    gateway.audit.close()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
