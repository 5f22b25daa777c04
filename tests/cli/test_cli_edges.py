"""Edges a user hits first: a port out of range is refused, ``info`` on a missing index creates
nothing, ``remove`` lists only real sources, and each failure kind has its own exit code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscout.cli import EXIT_CODES, _register, app, exit_code
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import EmptyIndex, GatewayError, QueryError, UpstreamError
from toolscout.models import Loaded, Tool

README = Path(__file__).parents[2] / "README.md"


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register()
    return CliRunner()


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
def test_a_port_out_of_range_is_refused_before_serving(cli: CliRunner, command: list[str]) -> None:
    result = cli.invoke(app, [*command, "--port", "99999"])
    assert result.exit_code == 2
    assert "--port" in result.output and "65535" in result.output


def test_a_port_out_of_range_in_the_settings_is_a_config_error() -> None:
    from toolscout.config import load_settings
    from toolscout.errors import ConfigError

    with pytest.raises(ConfigError, match="port"):
        load_settings(port=99999)


def test_info_on_a_missing_index_creates_no_folder_and_no_file(
    cli: CliRunner, tmp_path: Path
) -> None:
    db = tmp_path / "not" / "there" / "index.db"
    result = cli.invoke(app, ["info", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "not").exists()
    assert '"exists": false' in result.stdout and '"tools": 0' in result.stdout


def test_remove_lists_only_named_sources_and_servers(cli: CliRunner, settings: Settings) -> None:
    engine = Engine.open(settings)
    try:
        # A tool of no server (a catalog entry without one).
        ping = Tool(id="loose::ping", name="ping", source="loose.json")
        engine.index([Loaded("loose.json", [ping])])
    finally:
        engine.close()
    result = cli.invoke(app, ["remove", "elsewhere", "--db", settings.db])
    assert isinstance(result.exception, QueryError)
    message = str(result.exception)
    assert "indexed: loose.json" in message and "None" not in message


def test_an_empty_index_and_a_gateway_failure_exit_differently() -> None:
    empty = exit_code(EmptyIndex("x.db"))
    gateway = exit_code(UpstreamError("time", "down"))
    assert empty == 10 and gateway == 11 == exit_code(GatewayError("x"))
    codes = [code for _, code in EXIT_CODES]
    assert len(codes) == len(set(codes))


def test_the_readme_documents_every_exit_code() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Exit codes") :]
    documented = {int(c) for c in re.findall(r"^\| `(\d+)` \|", section, flags=re.M)}
    assert {code for _, code in EXIT_CODES} | {0, 2} <= documented
