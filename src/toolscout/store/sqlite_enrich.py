"""SQLite side of the enrichment cache (``EnrichStore``): table ``enrichments`` (migration 2).

A mixin so the main store module stays small; it needs the store's ``transaction`` and
``_query`` plumbing and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from toolscout.store.base import EnrichmentRecord

_COLUMNS = "kind, key, enricher, input_hash, payload, status, error, created_at, tokens"
_CHUNK = 500  # stays under SQLite's bound-parameter limit


def _row(r: Sequence[Any]) -> EnrichmentRecord:
    return EnrichmentRecord(
        kind=str(r[0]),
        key=str(r[1]),
        enricher=str(r[2]),
        input_hash=str(r[3]),
        payload=str(r[4]),
        status=str(r[5]),
        error=str(r[6] or ""),
        created_at=float(r[7]),
        tokens=int(r[8]),
    )


def _chunks(keys: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(keys), _CHUNK):
        yield list(keys[start : start + _CHUNK])


class SQLiteEnrichments:
    """``EnrichStore`` methods for :class:`~toolscout.store.sqlite.SQLiteStore`."""

    def transaction(self) -> AbstractContextManager[Any]:  # provided by the store
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:  # provided by the store
        raise NotImplementedError

    def get_enrichments(
        self, kind: str, keys: Sequence[str], enricher: str
    ) -> dict[str, EnrichmentRecord]:
        """Raises: StoreError."""
        out: dict[str, EnrichmentRecord] = {}
        for chunk in _chunks(keys):
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT {_COLUMNS} FROM enrichments "
                f"WHERE kind=? AND enricher=? AND key IN ({marks})",
                [kind, enricher, *chunk],
            )
            out.update((str(r[1]), _row(r)) for r in rows)
        return out

    def put_enrichments(self, records: Sequence[EnrichmentRecord]) -> None:
        """Raises: StoreError."""
        if not records:
            return
        with self.transaction() as conn:
            conn.executemany(
                f"INSERT OR REPLACE INTO enrichments({_COLUMNS}) VALUES(?,?,?,?,?,?,?,?,?)",
                [
                    (
                        r.kind,
                        r.key,
                        r.enricher,
                        r.input_hash,
                        r.payload,
                        r.status,
                        r.error,
                        r.created_at,
                        r.tokens,
                    )
                    for r in records
                ],
            )

    def delete_enrichments(self, kind: str, keys: Sequence[str]) -> int:
        """Raises: StoreError."""
        removed = 0
        with self.transaction() as conn:
            for chunk in _chunks(keys):
                marks = ",".join("?" * len(chunk))
                cur = conn.execute(
                    f"DELETE FROM enrichments WHERE kind=? AND key IN ({marks})", [kind, *chunk]
                )
                removed += max(0, int(cur.rowcount))
        return removed

    def enrichment_summary(self) -> list[tuple[str, str, str, int, int]]:
        """Raises: StoreError."""
        rows = self._query(
            "SELECT enricher, kind, status, count(*), coalesce(sum(tokens), 0) FROM enrichments "
            "GROUP BY enricher, kind, status ORDER BY enricher, kind, status"
        )
        return [(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]
