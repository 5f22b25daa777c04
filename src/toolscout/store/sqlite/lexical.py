"""The SQLite store's lexical leg (FTS5 BM25) and its counts.

BM25 is FTS5's own ``bm25()`` with one weight per field. Only the ``limit`` best rows need a
tool id, so the FTS5 query runs alone (no join with ``tools`` for each of the often thousands
of matching rows: measured at 10k tools, 1.8 ms -> 0.9 ms per short query) and ids are looked
up for the rows it keeps. Ties keep the store-wide order (score, then id): the query fetches a
margin past ``limit``, and when a tie could straddle that margin the exhaustive query runs.

Counts are asked several times per search (the evidence normaliser, candidate counts); they are
kept per filter until the data version changes.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence

from toolscout.models import Filters, Scored
from toolscout.store.base import LEXICAL_FIELDS
from toolscout.store.sql.dialect import SQLITE, where
from toolscout.store.sqlite.database import SQLiteDatabase

#: Rows fetched past ``limit`` so that ties at the cut can be ordered by id.
TIE_MARGIN = 32


class FTS5Lexical:
    """``lexical`` and ``count`` of the SQLite store, over its database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db
        self._query = db.query
        self._counts: dict[Filters | None, int] = {}
        self._counts_version: Hashable | None = None
        self._counts_lock = threading.Lock()

    def count(self, filters: Filters | None = None, *, at: Hashable | None = None) -> int:
        """Raises: StoreError."""
        version = at if at is not None else self.db.version()
        with self._counts_lock:
            if version != self._counts_version:
                self._counts.clear()
                self._counts_version = version
            cached = self._counts.get(filters)
        if cached is not None:
            return cached
        cond, params = where(filters, SQLITE)
        value = int(self._query(f"SELECT count(*) FROM tools t WHERE {cond}", params)[0][0])
        with self._counts_lock:
            if version == self._counts_version and len(self._counts) < 256:
                self._counts[filters] = value
        return value

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
    ) -> list[Scored]:
        tokens = [t for t in tokens if t]
        if not tokens:
            return []
        # Tokens are analyser output (letters/digits only); quoting makes each a literal term.
        match = " OR ".join('"' + t.replace('"', "") + '"' for t in tokens)
        w = list(weights) if weights is not None else [1.0] * len(LEXICAL_FIELDS)
        if len(w) != len(LEXICAL_FIELDS):
            raise ValueError(f"weights must have {len(LEXICAL_FIELDS)} entries")
        wsql = ", ".join(repr(float(x)) for x in w)
        cond, params = where(filters, SQLITE)
        restrict = (
            "" if cond == "true" else f" AND f.rowid IN (SELECT t.rowid FROM tools t WHERE {cond})"
        )
        fetch = limit + TIE_MARGIN
        rows = self._query(
            f"SELECT f.rowid, -bm25(tools_fts, {wsql}) AS s FROM tools_fts f "
            f"WHERE tools_fts MATCH ?{restrict} ORDER BY s DESC LIMIT ?",
            [match, *params, fetch],
        )
        if len(rows) == fetch and rows[-1][1] >= rows[limit - 1][1]:
            # A tie reaches past the margin: only the exhaustive order is exact.
            full = self._query(
                f"SELECT t.id, -bm25(tools_fts, {wsql}) AS s FROM tools_fts f "
                f"JOIN tools t ON t.rowid = f.rowid "
                f"WHERE tools_fts MATCH ? AND {cond} ORDER BY s DESC, t.id LIMIT ?",
                [match, *params, limit],
            )
            return [Scored(r[0], float(r[1])) for r in full]
        ids = self._ids_of([r[0] for r in rows])
        ranked = sorted(((float(s), ids[rowid]) for rowid, s in rows), key=lambda p: (-p[0], p[1]))
        return [Scored(i, s) for s, i in ranked[:limit]]

    def _ids_of(self, rowids: list[int]) -> dict[int, str]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        return {
            r[0]: r[1]
            for r in self._query(f"SELECT rowid, id FROM tools WHERE rowid IN ({marks})", rowids)
        }
