"""The SQLite store's lexical leg (FTS5 BM25) and its filter SQL.

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
from typing import Any

from toolscout.models import Filters, Scored
from toolscout.store.base import LEXICAL_FIELDS

#: Rows fetched past ``limit`` so that ties at the cut can be ordered by id.
TIE_MARGIN = 32


def where_clause(filters: Filters | None, alias: str = "t") -> tuple[str, list[Any]]:
    """SQL condition (``?`` placeholders) restricting tools to ``filters``; '1' when empty."""
    if filters is None or filters.is_empty():
        return "1", []
    parts: list[str] = []
    params: list[Any] = []

    def _in(column: str, values: Sequence[str]) -> None:
        if not values:
            parts.append("0")
            return
        parts.append(f"{alias}.{column} IN ({','.join('?' * len(values))})")
        params.extend(values)

    if filters.servers is not None:
        _in("server", filters.servers)
    if filters.sources is not None:
        _in("source", filters.sources)
    if filters.item_types is not None:
        _in("item_type", [t.value for t in filters.item_types])
    if filters.tool_ids is not None:
        _in("id", filters.tool_ids)
    if filters.skill_ids is not None:
        if not filters.skill_ids:
            parts.append("0")
        else:
            marks = ",".join("?" * len(filters.skill_ids))
            parts.append(
                f"{alias}.id IN (SELECT tool_id FROM tool_skills WHERE skill_id IN ({marks}))"
            )
            params.extend(filters.skill_ids)
    return " AND ".join(parts), params


class SQLiteLexical:
    """Mixed into SQLiteStore: ``lexical`` and ``count``."""

    _counts: dict[Filters | None, int]
    _counts_version: Hashable | None
    _counts_lock: threading.Lock

    # Provided by SQLiteStore.
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def data_version(self) -> Hashable | None:
        raise NotImplementedError

    def count(self, filters: Filters | None = None) -> int:
        version = self.data_version()
        with self._counts_lock:
            if version != self._counts_version:
                self._counts.clear()
                self._counts_version = version
            cached = self._counts.get(filters)
        if cached is not None:
            return cached
        cond, params = where_clause(filters)
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
        cond, params = where_clause(filters)
        restrict = (
            "" if cond == "1" else f" AND f.rowid IN (SELECT t.rowid FROM tools t WHERE {cond})"
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
