"""The SQLite store's vector leg: exact cosine search over an in-process mirror of ``tools_vec``.

Vectors are stored durably in a sqlite-vec ``vec0`` table. Exact cosine search is answered
from an in-process float32 matrix mirrored from that table: a numpy mat-vec over 10k x 384
takes ~1 ms where vec0's brute-force scan takes ~5 ms (docs/BENCHMARKS.md). The mirror is
keyed on the store's data version (the one the search read), so other processes' writes are
seen on the next query.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import sqlean
from numpy.typing import NDArray

from toolscout.errors import StoreError
from toolscout.models import Filters, Scored
from toolscout.store.sql.dialect import SQLITE, where
from toolscout.store.sqlite.database import SQLiteDatabase


class VectorMirror:
    """``nearest_many`` and ``vectors`` of the SQLite store."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db
        #: The index dimension, None before an embedder is bound.
        self.dim: int | None = None
        self._key: Hashable | None = None
        self._ids: list[str] = []
        self._rowids: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._matrix: NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)

    def _refresh(self, at: Hashable | None) -> None:
        key = at if at is not None else self.db.version()
        if key == self._key:
            return
        rows = self.db.conn.execute(
            "SELECT t.rowid, t.id, v.embedding FROM tools t JOIN tools_vec v ON v.rowid = t.rowid "
            "ORDER BY t.rowid"
        ).fetchall()
        dim = self.dim or 0
        self._rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._ids = [r[1] for r in rows]
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        self._matrix = matrix.reshape(len(rows), dim) if rows else np.zeros((0, dim), np.float32)
        self._key = key

    def drop(self) -> None:
        """Free the mirror (another leg answers); the next exact search reloads it."""
        with self.db.lock:
            self._key = None
            self._ids = []
            self._rowids = np.zeros(0, dtype=np.int64)
            self._matrix = np.zeros((0, 0), dtype=np.float32)

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        at: Hashable | None = None,
    ) -> list[list[Scored]]:
        """One matrix product for all rows; the filter's SQL runs once, as a mask. ``at``: the
        data version the search read (None: read it here); the mirror reloads when it moved.

        Raises: StoreError."""
        queries = np.asarray(vectors, dtype=np.float32)
        if self.dim is None:
            return [[] for _ in queries]
        with self.db.lock:
            try:
                self._refresh(at)
            except sqlean.Error as exc:
                raise StoreError(f"cannot read vectors from {self.db.path}: {exc}") from exc
            matrix, ids, rowids = self._matrix, self._ids, self._rowids
        if len(ids) == 0:
            return [[] for _ in queries]
        scores = queries @ matrix.T
        if filters is not None and not filters.is_empty():
            cond, params = where(filters, SQLITE)
            allowed = np.array(
                [r[0] for r in self.db.query(f"SELECT t.rowid FROM tools t WHERE {cond}", params)],
                dtype=np.int64,
            )
            mask = np.isin(rowids, allowed)
            scores = np.where(mask[None, :], scores, -np.inf)
            limit = min(limit, int(mask.sum()))
        if limit <= 0:
            return [[] for _ in queries]
        k = min(limit, len(ids))
        out: list[list[Scored]] = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
            ranked = sorted(((float(row[i]), ids[i]) for i in top), key=lambda p: (-p[0], p[1]))
            out.append([Scored(i, s) for s, i in ranked if s != -np.inf])
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors by tool id. Raises: StoreError."""
        out: dict[str, NDArray[np.float32]] = {}
        if self.dim is None:
            return out
        for batch in SQLITE.batches(ids):
            marks = ",".join("?" * len(batch))
            rows = self.db.query(
                f"SELECT t.id, v.embedding FROM tools t JOIN tools_vec v ON v.rowid=t.rowid "
                f"WHERE t.id IN ({marks})",
                batch,
            )
            out.update((r[0], np.frombuffer(r[1], dtype=np.float32).copy()) for r in rows)
        return out
