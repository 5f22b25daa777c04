"""PostgreSQL side of the enrichment cache (``EnrichStore``): table ``enrichments``.

A mixin of :class:`~toolscout.store.postgres.PostgresStore`, mirroring
``toolscout.store.sqlite_enrich`` statement for statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from toolscout.store.base import EnrichmentRecord

_COLUMNS = "kind, key, enricher, input_hash, payload, status, error, created_at, tokens"


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


class PostgresEnrichments:
    """``EnrichStore`` methods for :class:`~toolscout.store.postgres.PostgresStore`."""

    def transaction(self) -> AbstractContextManager[Any]:  # provided by the store
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[Any]:
        raise NotImplementedError  # provided by the store

    def get_enrichments(
        self, kind: str, keys: Sequence[str], enricher: str
    ) -> dict[str, EnrichmentRecord]:
        """Raises: StoreError."""
        if not keys:
            return {}
        rows = self._query(
            f"SELECT {_COLUMNS} FROM enrichments "
            f"WHERE kind = %s AND enricher = %s AND key = ANY(%s)",
            [kind, enricher, list(keys)],
        )
        return {str(r[1]): _row(r) for r in rows}

    def put_enrichments(self, records: Sequence[EnrichmentRecord]) -> None:
        """Raises: StoreError."""
        if not records:
            return
        with self.transaction() as conn:
            conn.cursor().executemany(
                f"INSERT INTO enrichments({_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (kind, key, enricher) DO UPDATE SET "
                "input_hash = EXCLUDED.input_hash, payload = EXCLUDED.payload, "
                "status = EXCLUDED.status, error = EXCLUDED.error, "
                "created_at = EXCLUDED.created_at, tokens = EXCLUDED.tokens",
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
        if not keys:
            return 0
        with self.transaction() as conn:
            cur = conn.execute(
                "DELETE FROM enrichments WHERE kind = %s AND key = ANY(%s)", (kind, list(keys))
            )
            return max(0, int(cur.rowcount))

    def enrichment_summary(self) -> list[tuple[str, str, str, int, int]]:
        """Raises: StoreError."""
        rows = self._query(
            "SELECT enricher, kind, status, count(*), coalesce(sum(tokens), 0) FROM enrichments "
            "GROUP BY enricher, kind, status ORDER BY enricher, kind, status"
        )
        return [(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]
