"""MCP server definitions from the configuration files people already have.

Read shapes:

* Claude Desktop ``claude_desktop_config.json`` and Claude Code / project ``.mcp.json``:
  ``{"mcpServers": {name: {...}}}``.
* VS Code ``.vscode/mcp.json`` (``{"servers": {...}}``) and user ``settings.json``
  (``{"mcp": {"servers": {...}}}``).
* ``Settings.mcp_servers`` (the toolscout configuration file).

Each entry is either a launch command (``command`` + ``args`` + ``env`` + ``cwd``, spoken to over
stdio) or a ``url`` (streamable HTTP, or SSE when ``type`` says ``sse`` or the path ends in
``/sse``); ``"protocol": "legacy"`` (a toolscout key) skips the 2026 protocol probe.
``${VAR}``, ``${VAR:-default}`` and VS Code's ``${env:VAR}`` are expanded from the environment;
a variable that is unset and has no default makes that server a problem rather than launching
it with a literal ``${...}``. A malformed entry becomes a :class:`Problem` naming the
file, server and field; the other servers are still read. toolscout's own MCP entry (what
``toolscout install`` writes into a client's file) is left out: indexing or proxying it
would only find, and call, toolscout itself.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolscout.errors import IngestError
from toolscout.models import Problem

Transport = Literal["stdio", "http", "sse"]
Protocol = Literal["auto", "legacy"]
DEFAULT_TIMEOUT = 30.0
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TYPES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one MCP server. ``origin`` says where the definition was read."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    origin: str = "settings"
    #: ``auto`` probes for the 2026-07-28 protocol and falls back to the initialize handshake;
    #: ``legacy`` goes straight to the handshake, for servers that mishandle the probe.
    protocol: Protocol = "auto"


@dataclass
class ServerConfigs:
    """The servers a set of configuration files defines, and the entries that were skipped."""

    servers: list[ServerSpec] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


class _EntryError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _expand(value: str, key: str, environ: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise _EntryError(key, f"uses ${{{name}}}, which is not set; export it or give a default")

    return _VAR.sub(replace, value)


def _strings(raw: Any, key: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str | int | float) for v in raw):
        raise _EntryError(key, "must be a list of strings")
    return tuple(_expand(str(v), key, environ) for v in raw)


def _mapping(raw: Any, key: str, environ: Mapping[str, str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _EntryError(key, "must be an object of string values")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(value, str | int | float | bool):
            raise _EntryError(f"{key}.{name}", "must be a string")
        out[str(name)] = _expand(str(value), f"{key}.{name}", environ)
    return out


def _transport(entry: Mapping[str, Any], url: str | None) -> Transport:
    declared = entry.get("type", entry.get("transport"))
    if declared is not None:
        kind = _TYPES.get(str(declared).lower())
        if kind is None:
            raise _EntryError("type", f"must be one of stdio, http, sse; got {declared!r}")
        return kind
    if url is not None:
        return "sse" if url.rstrip("/").endswith("/sse") else "http"
    return "stdio"


def _parse(
    name: str, entry: Any, origin: str, timeout: float, env_source: Mapping[str, str]
) -> ServerSpec:
    if not isinstance(entry, dict):
        raise _EntryError("(entry)", f"must be an object, got {type(entry).__name__}")
    url = entry.get("url", entry.get("serverUrl"))
    if url is not None and not isinstance(url, str):
        raise _EntryError("url", "must be a string")
    url = _expand(url, "url", env_source) if url else None
    kind = _transport(entry, url)
    command = entry.get("command")
    if kind == "stdio":
        if not isinstance(command, str) or not command.strip():
            raise _EntryError("command", "is required for a stdio server; or give a url")
        command = _expand(command, "command", env_source)
    elif not url:
        raise _EntryError("url", f"is required for a {kind} server")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _EntryError("cwd", "must be a string")
    protocol = entry.get("protocol", "auto")
    if protocol not in ("auto", "legacy"):
        raise _EntryError("protocol", f"must be auto or legacy; got {protocol!r}")
    per_server = entry.get("timeout")
    if per_server is not None and (not isinstance(per_server, int | float) or per_server <= 0):
        raise _EntryError("timeout", "must be a positive number of seconds")
    return ServerSpec(
        name=name,
        transport=kind,
        command=command if kind == "stdio" else None,
        args=_strings(entry.get("args"), "args", env_source),
        env=_mapping(entry.get("env"), "env", env_source),
        cwd=_expand(cwd, "cwd", env_source) if cwd else None,
        url=url if kind != "stdio" else None,
        headers=_mapping(entry.get("headers"), "headers", env_source),
        timeout=float(per_server) if per_server is not None else timeout,
        origin=origin,
        protocol="legacy" if protocol == "legacy" else "auto",
    )


def _server_table(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise IngestError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    for holder, key in ((doc, "mcpServers"), (doc, "servers"), (doc.get("mcp"), "servers")):
        if isinstance(holder, dict) and key in holder:
            table = holder[key]
            if not isinstance(table, dict):
                raise IngestError(f"{where}: {key} must be an object mapping names to servers")
            return table
    raise IngestError(
        f"{where}: no MCP servers found; expected a 'mcpServers' (Claude Desktop, .mcp.json) "
        f"or 'servers' (VS Code mcp.json) object"
    )


def is_toolscout_entry(entry: Any) -> bool:
    """Whether a server entry launches toolscout's own MCP server (``toolscout mcp ...``,
    ``python -m toolscout mcp ...``, ``uvx toolscout mcp ...``)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    raw = entry.get("args")
    args: list[Any] = raw if isinstance(raw, list) else []
    words = [Path(entry["command"]).name.removesuffix(".exe"), *map(str, args)]
    names = [i for i, w in enumerate(words) if Path(w).name.removesuffix(".exe") == "toolscout"]
    return bool(names) and "mcp" in words[names[0] + 1 :]


def read_mcp_config(path: str | Path, *, timeout: float = DEFAULT_TIMEOUT) -> ServerConfigs:
    """Read every server of one configuration file; malformed entries become problems.

    Disabled entries (``"disabled": true``) and toolscout's own entry are left out.

    Raises:
        IngestError: the file cannot be read, is not JSON, or holds no server table.
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{where}: not UTF-8 text") from exc
    except OSError as exc:
        raise IngestError(f"{where}: cannot read: {exc.strerror or exc}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    out = ServerConfigs()
    for name, entry in _server_table(doc, where).items():
        if isinstance(entry, dict) and entry.get("disabled") is True:
            continue
        if is_toolscout_entry(entry):
            continue
        try:
            out.servers.append(_parse(str(name), entry, where, timeout, os.environ))
        except _EntryError as exc:
            out.problems.append(Problem(f"{where}: server {name!r}", exc.field, str(exc)))
    return out


def servers_from_settings(
    table: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT
) -> ServerConfigs:
    """Servers from ``Settings.mcp_servers`` (pydantic models or plain dicts).

    Raises:
        Nothing: malformed entries become problems.
    """
    out = ServerConfigs()
    for name, entry in table.items():
        raw = entry.model_dump(exclude_none=True) if hasattr(entry, "model_dump") else entry
        try:
            out.servers.append(_parse(name, raw, "settings", timeout, os.environ))
        except _EntryError as exc:
            out.problems.append(Problem(f"settings: server {name!r}", exc.field, str(exc)))
    return out
