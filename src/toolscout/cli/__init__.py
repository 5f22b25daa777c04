"""The ``toolscout`` command: arguments -> Settings -> Engine -> rendering.

Each command module registers itself on :data:`app`; this module maps errors to exit codes in
one table so no command prints a traceback for anything a user did.
"""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from toolscout.errors import (
    ConfigError,
    EmbedError,
    EmptyIndex,
    EnrichError,
    GatewayError,
    IngestError,
    QueryError,
    SkillError,
    StoreError,
    ToolNotFound,
    ToolscoutError,
)

app = typer.Typer(
    name="toolscout",
    help="Find the right tools for an AI agent: index tool catalogs, search them.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: `[a-z]` and `^...$` must show as written
)
console = Console()
err_console = Console(stderr=True)


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


def _print_version() -> None:
    from importlib.metadata import version

    console.print(f"toolscout {version('toolscout')}", highlight=False)


def _version(value: bool) -> None:
    if value:
        _print_version()
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        int,
        typer.Option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug)."),
    ] = 0,
    log_level: Annotated[
        LogLevel | None,
        typer.Option(
            "--log-level",
            case_sensitive=False,
            help="Log level on stderr (default: warning).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Find the right tools for an AI agent: index tool catalogs, search them."""
    level = log_level.value if log_level else ("debug", "info", "warning")[max(0, 2 - verbose)]
    logging.getLogger().setLevel(level.upper())


#: One table: error class -> process exit code (first match wins, most specific first).
EXIT_CODES: tuple[tuple[type[ToolscoutError], int], ...] = (
    (EmptyIndex, 10),
    (ToolNotFound, 4),
    (QueryError, 2),
    (ConfigError, 3),
    (IngestError, 5),
    (StoreError, 6),
    (EmbedError, 7),
    (EnrichError, 8),
    (SkillError, 9),
    (GatewayError, 11),
    (ToolscoutError, 1),
)


def exit_code(exc: ToolscoutError) -> int:
    return next(code for cls, code in EXIT_CODES if isinstance(exc, cls))


def _register() -> None:
    # Importing a command module adds its commands to ``app``.
    from toolscout.cli import core  # noqa: F401

    optional_commands = ("skills", "serve", "sync", "enrich", "db", "install", "config")
    for optional in (*optional_commands, "feedback", "model"):
        try:
            __import__(f"toolscout.cli.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"toolscout.cli.{optional}":
                raise


def main() -> None:
    """Entry point: run the app, turning toolscout errors into a message and an exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if sys.argv[1:] == ["--version"]:  # answer before importing every command's dependencies
        _print_version()
        return
    _register()
    try:
        app()  # click's standalone mode handles usage errors and exit codes
    except ToolscoutError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        sys.exit(exit_code(exc))
    except KeyboardInterrupt:
        sys.exit(130)
