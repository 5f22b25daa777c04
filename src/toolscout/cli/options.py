"""Options shared by every command, and the engine they open."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from toolscout.config import Settings, load_settings
from toolscout.engine import Engine
from toolscout.errors import EmptyIndex
from toolscout.store.base import normalise_url

SQLITE = "sqlite:///"

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


def missing_file(db: str | None) -> str | None:
    """The SQLite file ``db`` names when it does not exist (None: it exists, or a server URL).

    Raises:
        ConfigError: the settings are invalid.
    """
    url = normalise_url(settings(db).db)
    if url.startswith(SQLITE) and not Path(_file(url)).exists():
        return _file(url)
    return None


def _file(url: str) -> str:
    """The file of a SQLite URL, without its options (``?mode=ro``, ``?ann_min_tools=N``)."""
    return url.removeprefix(SQLITE).split("?", 1)[0]


def open_engine(db: str | None, *, must_exist: bool = False, **overrides: Any) -> Engine:
    """The engine over ``db``; with ``must_exist``, a SQLite file that is not there is an
    error rather than a new empty index (a search there could only ever answer nothing).

    Raises:
        EmptyIndex: ``must_exist`` and the SQLite file does not exist.
        ConfigError, StoreError, EmbedError.
    """
    s = settings(db, **overrides)
    if must_exist:
        url = normalise_url(s.db)
        if url.startswith(SQLITE) and not Path(_file(url)).exists():
            raise EmptyIndex(_file(url))
    return Engine.open(s)
