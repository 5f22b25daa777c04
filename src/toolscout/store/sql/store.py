"""SQLStore: the part of a SQL store that both backends share, composed of the shared tables.

A backend (:mod:`toolscout.store.sqlite`, :mod:`toolscout.store.postgres`) builds its
:class:`~toolscout.store.sql.dialect.Database` and passes it here; this class builds the role
objects over it (tool reads, skill, enrichment and feedback tables), which the store hands out
whole as ``tools``, ``skills``, ``enrichments`` and ``feedback``, and answers the meta rows and
the identity. The backend adds what really differs: writes of tools, the two retrieval legs,
counts, identity binding and the data version.
"""

from __future__ import annotations

import json

from toolscout.store.base import IndexIdentity
from toolscout.store.sql.dialect import Database
from toolscout.store.sql.enrich import EnrichmentTables
from toolscout.store.sql.feedback import FeedbackTables
from toolscout.store.sql.skills import SkillTables
from toolscout.store.sql.tools import ToolRows


class SQLStore:
    """Meta and identity over one database, and its role objects."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.tools = ToolRows(db)
        self.skills = SkillTables(db)
        self.enrichments = EnrichmentTables(db)
        self.feedback = FeedbackTables(db)

    # -- meta and identity ------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """Raises: StoreError."""
        rows = self.db.query(self.db.dialect.sql("SELECT value FROM meta WHERE key = ?"), (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Raises: StoreError."""
        with self.db.transaction() as conn:
            conn.execute(
                self.db.dialect.sql(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
                ),
                (key, value),
            )

    def identity(self) -> IndexIdentity | None:
        """The recorded identity, or None before the first bind. Raises: StoreError."""
        raw = self.get_meta("identity")
        if raw is None:
            return None
        data = json.loads(raw)
        return IndexIdentity(data["embedder"], int(data["dim"]), data["analyzer"])
