"""The last sync of each source, kept in the index: its records and how they are read.

A sync pass (``toolscout sync``, ``watch``, ``serve --watch``) records one entry per source in
the store's metadata (key ``sync_log``, written by :mod:`toolscout.sync.synclog`), so any
process reading the index - the web console, a status check - can tell how fresh each source is
and which definitions were skipped or which servers could not be reached. The reading side
lives here, below the engine, because the engine's inventory serves it; the writing side sits
with the sync orchestration above the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from toolscout.store.base import Store

KEY = "sync_log"
#: Problems kept per source (a broken catalog can list thousands).
MAX_PROBLEMS = 50
#: Sources kept (the most recently synced).
MAX_SOURCES = 1000


@dataclass(frozen=True)
class SourceRecord:
    """One source's last sync. ``synced_at`` is the last pass that listed it (None: never)."""

    source: str
    checked_at: str
    synced_at: str | None
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    problems: tuple[str, ...] = ()
    problem_count: int = 0
    error: str | None = None


def now() -> str:
    """The current UTC time as the log writes it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_log(store: Store) -> dict[str, SourceRecord]:
    """Every recorded source's last sync (an unreadable record reads as empty).

    Raises:
        StoreError: the store cannot be read.
    """
    raw = store.get_meta(KEY)
    if not raw:
        return {}
    try:
        rows: list[dict[str, Any]] = json.loads(raw)
        return {
            r["source"]: SourceRecord(**{**r, "problems": tuple(r.get("problems", ()))})
            for r in rows
        }
    except (ValueError, TypeError, KeyError):
        return {}


@dataclass(frozen=True)
class Inventory:
    """What the index holds per server and per source, and each source's last sync."""

    servers: dict[str, int]
    sources: dict[str, int]
    sync: dict[str, SourceRecord]


def inventory(store: Store) -> Inventory:
    """Tool counts per server and source (``""``: none given) with the sync log.

    Raises:
        StoreError: the store cannot be read.
    """
    return Inventory(
        servers=_named(store.tools.counts_by("server")),
        sources=_named(store.tools.counts_by("source")),
        sync=read_log(store),
    )


def _named(counts: dict[str, int]) -> dict[str, int]:
    # Stores render a missing value as "None"; the console shows both as "(none)".
    out: dict[str, int] = {}
    for key, n in counts.items():
        name = "" if key in ("None", "") else key
        out[name] = out.get(name, 0) + n
    return dict(sorted(out.items()))
