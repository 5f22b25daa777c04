"""Install toolscout into an MCP client's configuration.

Clients and where their configuration lives (user scope):

* ``claude-desktop``: ``~/Library/Application Support/Claude/claude_desktop_config.json``
  (macOS), ``%APPDATA%\\Claude\\claude_desktop_config.json`` (Windows),
  ``~/.config/Claude/claude_desktop_config.json`` (Linux);
* ``claude-code``: ``~/.claude.json`` (``project=True``: ``./.mcp.json``);
* ``cursor``: ``~/.cursor/mcp.json`` (``project=True``: ``./.cursor/mcp.json``).

The entry launches this installation's ``toolscout`` by absolute path with an absolute index
path. With ``move_servers`` the servers already configured there move into a file of
toolscout's own, which the entry names with ``--mcp-config``, so the client loads one server
(the gateway) instead of all of them; without it the entry names the client's own file, whose
servers the gateway then calls (reading it skips toolscout's own entry). The old file is kept
as ``NAME.bak-TIMESTAMP`` and the new one replaces it atomically. :func:`check_entry` starts
the written entry as the client would and lists its tools.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import platformdirs

from toolscout.errors import ConfigError
from toolscout.ingest.mcpconfig import is_toolscout_entry

CLIENTS = ("claude-desktop", "claude-code", "cursor")
ENTRY = "toolscout"


def config_path(client: str, *, project: bool = False, home: Path | None = None) -> Path:
    """Where ``client`` keeps its MCP servers on this OS.

    Raises:
        ConfigError: an unknown client.
    """
    home = home or Path.home()
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Claude/claude_desktop_config.json"
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Claude/claude_desktop_config.json"
        return home / ".config/Claude/claude_desktop_config.json"
    if client == "claude-code":
        return Path.cwd() / ".mcp.json" if project else home / ".claude.json"
    if client == "cursor":
        return Path.cwd() / ".cursor/mcp.json" if project else home / ".cursor/mcp.json"
    raise ConfigError(f"client: must be one of {', '.join(CLIENTS)}; got {client!r}")


def toolscout_command() -> list[str]:
    """This installation's toolscout, by absolute path."""
    script = Path(sys.executable).with_name("toolscout")
    if script.exists():
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "toolscout"]


@dataclass
class InstallPlan:
    """What an install writes: the client's file, its new content, and the moved servers."""

    path: Path
    document: dict[str, Any]
    moved: dict[str, Any] = field(default_factory=dict)
    upstream_path: Path | None = None

    @property
    def entry(self) -> dict[str, Any]:
        """The toolscout entry as written."""
        entry: dict[str, Any] = self.document["mcpServers"][ENTRY]
        return entry

    @property
    def servers_file(self) -> Path:
        """The file whose servers the gateway calls (and ``sync`` indexes)."""
        return self.upstream_path if self.upstream_path is not None else self.path.absolute()


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return doc


def plan_install(
    path: Path, *, db: str, move_servers: bool = False, upstream_dir: Path | None = None
) -> InstallPlan:
    """The client's configuration with the toolscout entry added (and its servers moved).

    Raises:
        ConfigError: the file is not a JSON object or its ``mcpServers`` is not one.
    """
    doc = _read(path)
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers must be an object")
    command = toolscout_command()
    args = [*command[1:], "mcp", "--gateway"]
    plan = InstallPlan(path=path, document=doc)
    if move_servers:
        plan.moved = {k: v for k, v in servers.items() if k != ENTRY and not is_toolscout_entry(v)}
        folder = upstream_dir or Path(platformdirs.user_config_dir("toolscout"))
        plan.upstream_path = (folder / f"upstream-{path.stem}.json").absolute()
        for name in plan.moved:
            del servers[name]
    args += ["--mcp-config", str(plan.servers_file)]
    servers[ENTRY] = {
        "command": command[0],
        "args": args,
        "env": {"TOOLSCOUT_DB": db if "://" in db else str(Path(db).expanduser().absolute())},
    }
    return plan


async def check_entry(entry: dict[str, Any], *, timeout: float = 120.0) -> list[str]:
    """Start the server ``entry`` describes over stdio, as a client would, and list its tools.

    Raises:
        ConfigError: it did not start, or did not answer ``tools/list`` within ``timeout``.
    """
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=entry["command"],
        args=list(entry.get("args", [])),
        env={**os.environ, **entry.get("env", {})},
    )
    try:
        with anyio.fail_after(timeout):
            async with Client(params) as client:
                listed = await client.list_tools()
    except TimeoutError:
        raise ConfigError(
            f"the toolscout entry did not list its tools within {timeout:g} s"
        ) from None
    except Exception as exc:  # edge: any launch failure is reported, with its text
        raise ConfigError(f"the toolscout entry did not start: {exc}") from exc
    return [tool.name for tool in listed.tools]


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def apply_install(plan: InstallPlan) -> Path | None:
    """Write the plan: backup first, then the upstream file, then the client's file.

    Returns the backup's path (``None`` when there was no file).
    """
    backup = None
    if plan.path.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        backup = plan.path.with_name(f"{plan.path.name}.bak-{stamp}")
        shutil.copy2(plan.path, backup)
    if plan.upstream_path is not None:
        existing = _read(plan.upstream_path).get("mcpServers", {})
        _write_json(plan.upstream_path, {"mcpServers": {**existing, **plan.moved}})
    _write_json(plan.path, plan.document)
    return backup
