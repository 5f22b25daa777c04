"""A :class:`~toolscout.gateway.service.Gateway` from the settings (``[gateway]`` and the MCP
servers toolscout syncs from), and whether gateway mode is on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.http import DEFAULT_HTTP_TIMEOUT, HttpApi
from toolscout.gateway.policy import Policy
from toolscout.gateway.service import Gateway
from toolscout.gateway.sessions import Limits
from toolscout.ingest.mcpconfig import DEFAULT_TIMEOUT, ServerSpec
from toolscout.models import Problem
from toolscout.sync.sync import resolve_sources


def upstream_servers(
    settings: Settings, mcp_configs: Sequence[str | Path] = (), *, timeout: float = DEFAULT_TIMEOUT
) -> tuple[list[ServerSpec], list[Problem]]:
    """The servers the gateway forwards to: those of ``mcp_configs``, else the settings' own
    (``mcp_configs`` and ``mcp_servers``), exactly as ``sync`` reads them.

    Raises:
        IngestError: a configuration file cannot be read at all.
    """
    found = resolve_sources(settings, mcp_configs=mcp_configs, timeout=timeout)
    return list(found.servers), list(found.problems)


def gateway_enabled(settings: Settings, servers: Sequence[ServerSpec], flag: bool | None) -> bool:
    """``--gateway`` / ``--no-gateway`` first, then ``gateway.enabled``, else: whether any
    upstream server or REST API (``[apis.NAME]``) is configured."""
    if flag is not None:
        return flag
    if settings.gateway.enabled is not None:
        return settings.gateway.enabled
    return bool(servers) or bool(settings.apis)


def http_apis(settings: Settings) -> list[HttpApi]:
    """The REST APIs of ``[apis.NAME]``, with their credentials read from the environment and
    the secrets file now, and the gateway's limits (``[gateway.servers.NAME]`` applies to an
    API of that name). A credential that is not set fails that API's calls, naming its key.

    Raises:
        ConfigError: the secrets file cannot be read (see
            :func:`toolscout.config.sections.read_secrets`).
    """
    g = settings.gateway
    secrets = settings.secrets() if settings.apis else {}
    apis: list[HttpApi] = []
    for name, api in sorted(settings.apis.items()):
        headers, missing = api.credentials(name, secrets)
        limits = g.servers.get(name)
        apis.append(
            HttpApi(
                name,
                base_url=api.base_url,
                headers=headers,
                missing=tuple(missing),
                timeout=(limits.timeout if limits else None) or api.timeout or DEFAULT_HTTP_TIMEOUT,
                max_result_bytes=g.max_result_bytes,
                max_concurrency=(limits.max_concurrency if limits else None) or g.max_concurrency,
            )
        )
    return apis


def build_gateway(engine: Engine, settings: Settings, servers: Sequence[ServerSpec]) -> Gateway:
    """The gateway the settings describe over ``servers``.

    Raises:
        ConfigError: an invalid policy pattern, or an audit log that cannot be opened.
    """
    g = settings.gateway
    policy = Policy(
        allow=tuple(g.allow),
        deny=tuple(g.deny),
        allow_destructive=tuple(g.allow_destructive),
        read_only=g.read_only,
    )
    limits = {
        spec.name: Limits(
            timeout=(g.servers[spec.name].timeout if spec.name in g.servers else None)
            or spec.timeout,
            max_concurrency=(
                g.servers[spec.name].max_concurrency if spec.name in g.servers else None
            )
            or g.max_concurrency,
            max_result_bytes=g.max_result_bytes,
        )
        for spec in servers
    }
    audit = AuditLog(g.audit_log, values=g.audit_values) if g.audit_log else None
    return Gateway(
        engine,
        servers,
        policy=policy,
        audit=audit,
        expose=g.expose,
        expose_tokens=g.expose_tokens,
        limits=limits,
        max_concurrency=g.max_concurrency,
        apis=http_apis(settings),
    )
