"""Recording each sync pass in the index's sync log (read by :mod:`toolscout.store.synclog`).

A source that failed to list keeps the time of its last good sync beside the error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from toolscout.store.base import Store
from toolscout.store.synclog import KEY, MAX_PROBLEMS, MAX_SOURCES, SourceRecord, now, read_log

if TYPE_CHECKING:
    from toolscout.sync.sync import SourceSummary


def record_sync(store: Store, summaries: Sequence[SourceSummary]) -> None:
    """Merge one pass's per-source summaries into the log.

    Raises:
        StoreError: the store cannot be written.
    """
    if not summaries:
        return
    log = read_log(store)
    at = now()
    for s in summaries:
        old = log.get(s.source)
        problems = [str(p) for p in s.problems]
        log[s.source] = SourceRecord(
            source=s.source,
            checked_at=at,
            synced_at=(old.synced_at if old else None) if s.error else at,
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
