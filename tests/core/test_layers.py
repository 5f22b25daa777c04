"""House rules the folder tree promises: layers without circles, environment read in one place."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "toolscout"
ROOT = SRC.parents[1]


def test_every_room_imports_only_the_rooms_below_it() -> None:
    """import-linter's contract in pyproject.toml (``[tool.importlinter]``)."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 1 kept, 0 broken" in done.stdout


def _reads_environment(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("environ", "getenv")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and isinstance(node.ctx, ast.Load)
        ):
            lines.append(node.lineno)
    return lines


#: Modules that hand the environment on rather than configure from it: ``${VAR}`` references
#: in an MCP client's server entries expand against the environment the servers will run in;
#: the desktop client's own folder on Windows is ``%APPDATA%``; ``serve`` passes its settings
#: to its worker processes through their environment.
PASS_THROUGH = {"ingest/mcpconfig.py", "gateway/clients.py", "cli/serve.py"}


def test_settings_come_from_the_environment_only_in_config() -> None:
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("config/") or rel in PASS_THROUGH:
            continue
        lines = _reads_environment(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            offenders[rel] = lines
    assert offenders == {}
