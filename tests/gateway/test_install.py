"""``toolscout install``: the client's file gains the gateway entry (absolute paths), keeps a
backup, moves or refers to its servers, indexes them, and checks that the entry starts; and
syncing any client file skips toolscout's own entry."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from support.upstreams import BIN, time_spec
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.gateway.clients import check_entry, config_path
from toolscout.ingest.mcpconfig import is_toolscout_entry, read_mcp_config


def _env(**extra: str) -> dict[str, str]:
    # PYTHONPATH carries a source checkout to the installed console script, when set.
    keep = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    return {**keep, **extra}


def test_install_writes_the_entry_keeps_a_backup_and_moves_servers(tmp_path: Path) -> None:
    client = tmp_path / "claude_desktop_config.json"
    before = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}, "x": 1}
    client.write_text(json.dumps(before), encoding="utf-8")
    # A wide terminal: at 80 columns the fold lands inside the path on a long temporary folder.
    env = _env(
        HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"), PATH="/usr/bin", COLUMNS="1000"
    )
    done = subprocess.run(
        [str(BIN / "toolscout"), "install", "claude-desktop", "--config", str(client),
         "--db", "rel/index.db", "--move-servers", "--no-index", "--no-check"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())
    assert f"--db {tmp_path / 'rel' / 'index.db'}" in printed  # the index the entry uses
    after = json.loads(client.read_text(encoding="utf-8"))
    entry = after["mcpServers"]["toolscout"]
    assert list(after["mcpServers"]) == ["toolscout"] and after["x"] == 1
    assert Path(entry["command"]).is_absolute() and entry["args"][:2] == ["mcp", "--gateway"]
    upstream = Path(entry["args"][entry["args"].index("--mcp-config") + 1])
    assert upstream.is_absolute()
    assert json.loads(upstream.read_text())["mcpServers"] == before["mcpServers"]
    assert entry["env"]["TOOLSCOUT_DB"] == str(tmp_path / "rel" / "index.db")
    backups = list(tmp_path.glob("claude_desktop_config.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == before


def test_each_client_has_its_config_location(tmp_path: Path) -> None:
    assert config_path("claude-desktop", home=tmp_path).name == "claude_desktop_config.json"
    assert config_path("claude-code", home=tmp_path) == tmp_path / ".claude.json"
    assert config_path("cursor", home=tmp_path) == tmp_path / ".cursor" / "mcp.json"


def test_unknown_client_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "toolscout"), "install", "vim", "--dry-run"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3 and "must be one of claude-desktop" in done.stderr


def test_install_in_one_command_indexes_the_servers_and_checks_the_entry(
    tmp_path: Path, vector_cache: Path
) -> None:
    time = time_spec()
    stale = {"command": str(BIN / "toolscout"), "args": ["mcp", "--gateway"]}
    servers = {"time": {"command": time.command, "args": list(time.args)}, "old": stale}
    client = tmp_path / "claude_desktop_config.json"
    client.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    db = tmp_path / "idx" / "index.db"
    env = _env(
        HOME=str(tmp_path),
        PATH=str(BIN) + ":/usr/bin:/bin",
        TOOLSCOUT_CACHE_DIR=str(vector_cache),
        TOOLSCOUT_EMBED_THREADS="1",
    )
    done = subprocess.run(
        [str(BIN / "toolscout"), "install", "claude-desktop", "--config", str(client),
         "--db", str(db)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    printed = " ".join(done.stdout.split())
    assert "mcp:time: 2 tools" in printed
    assert "ok: it starts and lists" in printed and "call_tool" in printed
    entry = json.loads(client.read_text(encoding="utf-8"))["mcpServers"]["toolscout"]
    assert entry["args"] == ["mcp", "--gateway", "--mcp-config", str(client)]
    assert entry["env"]["TOOLSCOUT_DB"] == str(db)
    engine = Engine.open(Settings(db=str(db), cache_dir=str(vector_cache)))
    try:
        indexed = {t.server for t in engine.list_tools(limit=100)[0]}
    finally:
        engine.close()
    assert indexed == {"time"}  # toolscout's own entries were skipped


def test_reading_a_client_file_skips_toolscout_entries(tmp_path: Path) -> None:
    entries = {
        "ts": {"command": "/opt/bin/toolscout", "args": ["mcp", "--gateway"]},
        "module": {"command": "python3", "args": ["-m", "toolscout", "mcp"]},
        "uvx": {"command": "uvx", "args": ["--from", ".", "toolscout", "mcp"]},
        "cli": {"command": "toolscout", "args": ["search", "x"]},
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
    }
    assert [n for n, e in entries.items() if is_toolscout_entry(e)] == ["ts", "module", "uvx"]
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": entries}), encoding="utf-8")
    assert [s.name for s in read_mcp_config(path).servers] == ["cli", "time"]


def test_a_check_of_an_entry_that_cannot_start_says_so(tmp_path: Path) -> None:
    entry = {"command": str(tmp_path / "no-such-toolscout"), "args": ["mcp"], "env": {}}
    with pytest.raises(ConfigError, match="did not start"):
        anyio.run(lambda: check_entry(entry, timeout=30))
