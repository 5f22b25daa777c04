"""Upstream MCP servers for the gateway tests: the project's own (``upstream_server.py``) and
the published ``mcp-server-time`` and ``mcp-server-git`` (installed from requirements-dev.lock)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from toolscout.ingest.mcpconfig import ServerSpec

HERE = Path(__file__).parent
UPSTREAM = HERE / "upstream_server.py"
BIN = Path(sys.executable).parent


def upstream_spec(
    name: str = "up", timeout: float = 20.0, marker: Path | None = None
) -> ServerSpec:
    args = [str(UPSTREAM), "stdio"] + ([str(marker)] if marker else [])
    return ServerSpec(
        name=name, transport="stdio", command=sys.executable, args=tuple(args), timeout=timeout
    )


def time_spec() -> ServerSpec:
    return ServerSpec(
        name="time",
        transport="stdio",
        command=str(BIN / "mcp-server-time"),
        args=("--local-timezone", "UTC"),
        timeout=30.0,
    )


def git_spec(repo: Path) -> ServerSpec:
    return ServerSpec(
        name="git",
        transport="stdio",
        command=str(BIN / "mcp-server-git"),
        args=("--repository", str(repo)),
        timeout=30.0,
    )


def make_repo(path: Path) -> Path:
    """A real git repository with one commit and one uncommitted file."""
    path.mkdir(parents=True, exist_ok=True)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "HOME": str(path),
    }

    def run(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)

    run("init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n", encoding="utf-8")
    run("add", "README.md")
    run("commit", "-q", "-m", "first commit")
    (path / "notes.txt").write_text("draft\n", encoding="utf-8")
    return path
