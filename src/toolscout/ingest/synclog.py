"""The last sync of each source, kept in the index: when it ran, what it changed, what failed.

A sync pass (``toolscout sync``, ``watch``, ``serve --watch``) records one entry per source in
the store's metadata (key ``sync_log``), so any process reading the index - the web console, a
status check - can tell how fresh each source is and which definitions were skipped or which
servers could not be reached. A source that failed to list keeps the time of its last good
sync beside the error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolscout.store.base import Store

if TYPE_CHECKING:
    from toolscout.ingest.sync import SourceSummary

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


def _now() -> str:
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


def record_sync(store: Store, summaries: Sequence[SourceSummary]) -> None:
    """Merge one pass's per-source summaries into the log.

    Raises:
        StoreError: the store cannot be written.
    """
    if not summaries:
        return
    log = read_log(store)
    now = _now()
    for s in summaries:
        old = log.get(s.source)
        problems = [str(p) for p in s.problems]
        log[s.source] = SourceRecord(
            source=s.source,
            checked_at=now,
            synced_at=(old.synced_at if old else None) if s.error else now,
            added=s.added,
            updated=s.updated,
            deleted=s.deleted,
            unchanged=s.unchanged,
            problems=tuple(problems[:MAX_PROBLEMS]),
            problem_count=len(problems),
            error=s.error,
        )
    kept = sorted(log.values(), key=lambda r: r.checked_at, reverse=True)[:MAX_SOURCES]
    store.set_meta(KEY, json.dumps([asdict(r) for r in kept], ensure_ascii=False))


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
        servers=_named(store.counts_by("server")),
        sources=_named(store.counts_by("source")),
        sync=read_log(store),
    )


def _named(counts: dict[str, int]) -> dict[str, int]:
    # Stores render a missing value as "None"; the console shows both as "(none)".
    out: dict[str, int] = {}
    for key, n in counts.items():
        name = "" if key in ("None", "") else key
        out[name] = out.get(name, 0) + n
    return dict(sorted(out.items()))
