"""The feedback log (:class:`~toolscout.store.roles.FeedbackStore`, table ``feedback``), written
once for both SQL stores. Plain appends, reads and deletes: what the rows mean for ranking
lives in :mod:`toolscout.feedback`."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from toolscout.store.roles import FeedbackRecord
from toolscout.store.sql.dialect import Database

log = logging.getLogger("toolscout.feedback")

_COLUMNS = "created_at, query, tool_id, outcome, shown, source, embedder"
#: What a recorded call ended in (``toolscout.feedback.service.OUTCOMES``, a layer above).
OUTCOMES = ("success", "error")


def _row(r: Sequence[Any], with_vector: bool) -> FeedbackRecord:
    """Raises: ValueError or TypeError for a row that is not a feedback record (a damaged or
    hand-edited table: SQLite keeps whatever was written into a column)."""
    vector = None
    if with_vector and r[8] is not None:
        if not isinstance(r[8], bytes | bytearray | memoryview):
            raise TypeError(f"vector is {type(r[8]).__name__}, not bytes")
        vector = np.frombuffer(bytes(r[8]), dtype=np.float32).copy()
    shown = json.loads(r[5])
    if not isinstance(shown, list) or not all(isinstance(s, str) for s in shown):
        raise ValueError("shown is not a list of tool ids")
    if not isinstance(r[2], str) or not isinstance(r[3], str) or r[4] not in OUTCOMES:
        raise ValueError("query, tool_id or outcome is not what a call records")
    return FeedbackRecord(
        id=int(r[0]),
        created_at=float(r[1]),
        query=r[2],
        tool_id=r[3],
        outcome=r[4],
        shown=tuple(shown),
        source=str(r[6]),
        embedder=str(r[7]),
        vector=vector,
    )


def _readable(rows: Sequence[Sequence[Any]], with_vector: bool) -> list[FeedbackRecord]:
    """The rows that are feedback records; the others are skipped with one warning: a damaged
    row never fails a search or a listing."""
    records: list[FeedbackRecord] = []
    bad: list[str] = []
    for r in rows:
        try:
            records.append(_row(r, with_vector))
        except (ValueError, TypeError, IndexError) as exc:
            bad.append(f"{r[0]!r} ({exc})")
    if bad:
        log.warning(
            "feedback: skipped %d unreadable row(s) of the feedback table: %s",
            len(bad),
            "; ".join(bad[:5]) + (" ..." if len(bad) > 5 else ""),
        )
    return records


def _values(r: FeedbackRecord) -> tuple[Any, ...]:
    blob = None if r.vector is None else np.asarray(r.vector, dtype=np.float32).tobytes()
    shown = json.dumps(list(r.shown), ensure_ascii=False)
    return (r.created_at, r.query, r.tool_id, r.outcome, shown, r.source, r.embedder, blob)


class FeedbackTables:
    """``FeedbackStore`` over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.d = db.dialect

    def add_feedback(self, records: Sequence[FeedbackRecord], *, keep: int) -> list[int]:
        """Raises: StoreError."""
        ids: list[int] = []
        with self.db.transaction() as conn:
            for record in records:
                row = conn.execute(
                    self.d.sql(
                        f"INSERT INTO feedback({_COLUMNS}, vector) VALUES (?,?,?,?,?,?,?,?) "
                        "RETURNING id"
                    ),
                    _values(record),
                ).fetchone()
                ids.append(int(row[0]))
            # Retention: the newest ``keep`` rows stay, so the log (and the memory built from
            # it) never outgrows what was configured.
            conn.execute(
                self.d.sql(
                    "DELETE FROM feedback WHERE id <= "
                    "(SELECT id FROM feedback ORDER BY id DESC LIMIT 1 OFFSET ?)"
                ),
                (max(0, keep),),
            )
        return ids

    def list_feedback(
        self, *, tool_id: str | None = None, limit: int = 100, vectors: bool = False
    ) -> list[FeedbackRecord]:
        """Raises: StoreError."""
        cond, params = ("tool_id = ?", [tool_id]) if tool_id is not None else ("true", [])
        vector = "vector" if vectors else "NULL"
        rows = self.db.query(
            self.d.sql(
                f"SELECT id, {_COLUMNS}, {vector} FROM feedback WHERE {cond} "
                "ORDER BY id DESC LIMIT ?"
            ),
            [*params, limit],
        )
        return _readable(rows, vectors)

    def clear_feedback(self, tool_id: str | None = None) -> int:
        """Raises: StoreError."""
        cond, params = ("tool_id = ?", [tool_id]) if tool_id is not None else ("true", [])
        with self.db.transaction() as conn:
            cur = conn.execute(self.d.sql(f"DELETE FROM feedback WHERE {cond}"), params)
            return max(0, int(cur.rowcount))

    def feedback_summary(self) -> dict[str, int]:
        """Raises: StoreError."""
        row = self.db.query(
            "SELECT count(*), "
            "coalesce(sum(CASE WHEN outcome = 'success' THEN 1 ELSE 0 END), 0), "
            "coalesce(sum(CASE WHEN outcome = 'error' THEN 1 ELSE 0 END), 0), "
            "count(DISTINCT tool_id), coalesce(max(id), 0) FROM feedback"
        )[0]
        keys = ("rows", "success", "error", "tools", "last_id")
        return {k: int(v) for k, v in zip(keys, row, strict=True)}
