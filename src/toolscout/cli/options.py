"""Options shared by every command, and the engine they open."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from toolscout.config import Settings, load_settings
from toolscout.engine import Engine

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Index: a SQLite path or store URL (postgresql://...). Env TOOLSCOUT_DB; "
        "default: a file in the user's data directory.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def settings(db: str | None, **overrides: Any) -> Settings:
    """Raises: ConfigError."""
    return load_settings(db=db, **overrides)


def open_engine(db: str | None, **overrides: Any) -> Engine:
    """Raises: ConfigError, StoreError, EmbedError."""
    return Engine.open(settings(db, **overrides))
