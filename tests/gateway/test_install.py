"""``toolscout install``: the client's file gains the gateway entry (absolute paths), keeps a
backup, and can move its servers behind the gateway."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from upstreams import BIN

from toolscout.gateway.clients import config_path


def test_install_writes_the_entry_keeps_a_backup_and_moves_servers(tmp_path: Path) -> None:
    client = tmp_path / "claude_desktop_config.json"
    before = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}, "x": 1}
    client.write_text(json.dumps(before), encoding="utf-8")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PATH": "/usr/bin"}
    done = subprocess.run(
        [str(BIN / "toolscout"), "install", "claude-desktop", "--config", str(client),
         "--db", "rel/index.db", "--move-servers"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
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
