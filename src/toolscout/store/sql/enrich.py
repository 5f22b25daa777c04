"""The enrichment cache (:class:`~toolscout.store.roles.EnrichStore`, table ``enrichments``),
written once for both SQL stores. Plain reads and upserts: freshness rules live in
``toolscout.enrich.cache``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolscout.store.roles import EnrichmentRecord
from toolscout.store.sql.dialect import Database

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


class EnrichmentTables:
    """``EnrichStore`` over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.d = db.dialect

    def get_enrichments(
        self, kind: str, keys: Sequence[str], enricher: str
    ) -> dict[str, EnrichmentRecord]:
        """Raises: StoreError."""
        out: dict[str, EnrichmentRecord] = {}
        for batch in self.d.batches(keys):
            cond, params = self.d.any_of("key", batch)
            rows = self.db.query(
                self.d.sql(
                    f"SELECT {_COLUMNS} FROM enrichments WHERE kind = ? AND enricher = ? AND {cond}"
                ),
                [kind, enricher, *params],
            )
            out.update((str(r[1]), _row(r)) for r in rows)
        return out

    def put_enrichments(self, records: Sequence[EnrichmentRecord]) -> None:
        """Raises: StoreError."""
        if not records:
            return
        with self.db.transaction() as conn:
            conn.cursor().executemany(
                self.d.sql(
                    f"INSERT INTO enrichments({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?) "
                    "ON CONFLICT (kind, key, enricher) DO UPDATE SET "
                    "input_hash = EXCLUDED.input_hash, payload = EXCLUDED.payload, "
                    "status = EXCLUDED.status, error = EXCLUDED.error, "
                    "created_at = EXCLUDED.created_at, tokens = EXCLUDED.tokens"
                ),
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
        with self.db.transaction() as conn:
            for batch in self.d.batches(keys):
                cond, params = self.d.any_of("key", batch)
                cur = conn.execute(
                    self.d.sql(f"DELETE FROM enrichments WHERE kind = ? AND {cond}"),
                    [kind, *params],
                )
                removed += max(0, int(cur.rowcount))
        return removed

    def enrichment_summary(self) -> list[tuple[str, str, str, int, int]]:
        """Raises: StoreError."""
        rows = self.db.query(
            "SELECT enricher, kind, status, count(*), coalesce(sum(tokens), 0) FROM enrichments "
            "GROUP BY enricher, kind, status ORDER BY enricher, kind, status"
        )
        return [(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]
