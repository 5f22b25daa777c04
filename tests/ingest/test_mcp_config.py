"""MCP client configuration files: Claude Desktop, Claude Code .mcp.json, VS Code mcp.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.config.sections import McpServerConfig
from toolscout.errors import IngestError
from toolscout.ingest.mcpconfig import read_mcp_config
from toolscout.sync.sync import resolve_sources


def write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_claude_desktop_config_gives_stdio_and_http_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN_FOR_TEST", "s3cret")
    path = write(
        tmp_path / "claude_desktop_config.json",
        {
            "mcpServers": {
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_TOKEN": "${GH_TOKEN_FOR_TEST}"},
                },
                "remote": {"url": "https://example.test/mcp", "headers": {"X-Key": "k"}},
                "legacy": {"url": "https://example.test/sse"},
                "off": {"command": "x", "disabled": True},
            }
        },
    )
    found = read_mcp_config(path, timeout=7)
    assert found.problems == []
    by_name = {s.name: s for s in found.servers}
    assert set(by_name) == {"github", "remote", "legacy"}
    github = by_name["github"]
    assert (github.transport, github.command, github.args) == (
        "stdio",
        "npx",
        ("-y", "@modelcontextprotocol/server-github"),
    )
    assert github.env == {"GITHUB_TOKEN": "s3cret"}
    assert github.timeout == 7 and github.origin == str(path)
    assert (by_name["remote"].transport, by_name["remote"].headers) == ("http", {"X-Key": "k"})
    assert by_name["legacy"].transport == "sse"


def test_vscode_mcp_json_uses_servers_and_type(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mcp.json",
        {
            "inputs": [],
            "servers": {
                "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
                "api": {"type": "http", "url": "http://localhost:9000/mcp"},
            },
        },
    )
    found = read_mcp_config(path)
    assert [(s.name, s.transport) for s in found.servers] == [("fetch", "stdio"), ("api", "http")]


def test_vscode_user_settings_nest_servers_under_mcp(tmp_path: Path) -> None:
    path = write(tmp_path / "settings.json", {"mcp": {"servers": {"a": {"command": "a"}}}})
    assert [s.name for s in read_mcp_config(path).servers] == ["a"]


def test_malformed_entries_are_problems_naming_server_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / ".mcp.json",
        {
            "mcpServers": {
                "ok": {"command": "ok"},
                "nocmd": {"args": ["x"]},
                "badtype": {"type": "carrier-pigeon", "url": "x"},
                "unset": {"command": "run", "env": {"KEY": "${SURELY_NOT_SET_VAR_H4}"}},
                "defaulted": {"command": "run", "args": ["${SURELY_NOT_SET_VAR_H4:-fallback}"]},
                "badargs": {"command": "run", "args": "not-a-list"},
            }
        },
    )
    found = read_mcp_config(path)
    assert sorted(s.name for s in found.servers) == ["defaulted", "ok"]
    assert next(s for s in found.servers if s.name == "defaulted").args == ("fallback",)
    fields = {p.location.rsplit(" ", 1)[-1].strip("'"): p.field for p in found.problems}
    assert fields == {
        "nocmd": "command",
        "badtype": "type",
        "unset": "env.KEY",
        "badargs": "args",
    }


def test_unreadable_or_serverless_config_is_an_ingest_error(tmp_path: Path) -> None:
    bad_json = tmp_path / "broken.json"
    bad_json.write_text('{"mcpServers": {', encoding="utf-8")
    with pytest.raises(IngestError, match="invalid JSON at line 1"):
        read_mcp_config(bad_json)
    with pytest.raises(IngestError, match="no MCP servers found"):
        read_mcp_config(write(tmp_path / "other.json", {"tools": []}))
    with pytest.raises(IngestError, match="cannot read"):
        read_mcp_config(tmp_path / "missing.json")


def test_settings_supply_sources_when_no_arguments_are_given(tmp_path: Path) -> None:
    cfg = write(tmp_path / ".mcp.json", {"mcpServers": {"files": {"command": "files-server"}}})
    settings = Settings(
        db=str(tmp_path / "x.db"),
        mcp_configs=[str(cfg)],
        mcp_servers={
            "web": McpServerConfig(url="http://127.0.0.1:1/mcp"),
            "files": McpServerConfig(command="dup"),
        },
        tools_dirs=[str(tmp_path)],
        catalogs=[str(tmp_path / "c.json")],
    )
    found = resolve_sources(settings)
    # Settings' own table comes first; the same name again in a config file is reported.
    assert [(s.name, s.origin) for s in found.servers] == [
        ("web", "settings"),
        ("files", "settings"),
    ]
    assert [p.field for p in found.problems] == ["files"]
    assert found.tool_dirs == (tmp_path,)
    assert found.catalogs == (tmp_path / "c.json",)
    # Arguments replace the configured sources entirely.
    only = resolve_sources(settings, tools_dirs=[tmp_path / "t"])
    assert (only.servers, only.catalogs, only.tool_dirs) == ((), (), (tmp_path / "t",))
