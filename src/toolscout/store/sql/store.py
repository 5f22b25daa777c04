"""SQLStore: the part of a SQL store that both backends share, composed of the shared tables.

A backend (:mod:`toolscout.store.sqlite`, :mod:`toolscout.store.postgres`) builds its
:class:`~toolscout.store.sql.dialect.Database` and passes it here; this class builds the tool
reads, skill tables and enrichment tables over it and answers those parts of the
:class:`~toolscout.store.base.Store` protocol. The backend adds what really differs: writes of
tools, the two retrieval legs, counts, identity binding and the data version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from toolscout.models import JSON, Filters, Skill, SkillAssignment, Suggestion, Tool
from toolscout.store.base import Classified, EnrichmentRecord, FeedbackRecord, IndexIdentity
from toolscout.store.sql.dialect import Database
from toolscout.store.sql.enrich import EnrichmentTables
from toolscout.store.sql.feedback import FeedbackTables
from toolscout.store.sql.skills import SkillTables
from toolscout.store.sql.tools import ToolRows


class SQLStore:
    """Meta, identity, tool reads, skills, enrichments and feedback over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.tool_rows = ToolRows(db)
        self.skill_tables = SkillTables(db)
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

    # -- tool reads -------------------------------------------------------------------------
    def get(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound, StoreError."""
        return self.tool_rows.get(tool_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Tool]:
        """Raises: StoreError."""
        return self.tool_rows.get_many(ids)

    def get_light(self, ids: Sequence[str]) -> dict[str, Tool]:
        """Raises: StoreError."""
        return self.tool_rows.get_light(ids)

    def light_rows(self, ids: Sequence[str]) -> dict[str, tuple[Tool, int]]:
        """Raises: StoreError."""
        return self.tool_rows.light_rows(ids)

    def schemas(self, ids: Sequence[str]) -> dict[str, JSON | None]:
        """Raises: StoreError."""
        return self.tool_rows.schemas(ids)

    def hashes(self, filters: Filters | None = None) -> dict[str, tuple[str, str]]:
        """Raises: StoreError."""
        return self.tool_rows.hashes(filters)

    def list_tools(
        self, filters: Filters | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[Tool]:
        """Raises: StoreError."""
        return self.tool_rows.list_tools(filters, offset=offset, limit=limit)

    def counts_by(self, column: str) -> dict[str, int]:
        """Raises: ValueError, StoreError."""
        return self.tool_rows.counts_by(column)

    def ids_where(self, column: str, value: str) -> list[str]:
        """Raises: ValueError, StoreError."""
        return self.tool_rows.ids_where(column, value)

    # -- skills -----------------------------------------------------------------------------
    def insert_skill(self, skill: Skill) -> None:
        """Raises: SkillExists, StoreError."""
        self.skill_tables.insert_skill(skill)

    def update_skill(self, skill: Skill) -> None:
        """Raises: SkillNotFound, StoreError."""
        self.skill_tables.update_skill(skill)

    def get_skill(self, skill_id: str) -> Skill:
        """Raises: SkillNotFound, StoreError."""
        return self.skill_tables.get_skill(skill_id)

    def list_skills(self, *, include_inactive: bool = True) -> list[Skill]:
        """Raises: StoreError."""
        return self.skill_tables.list_skills(include_inactive=include_inactive)

    def skill_tool_counts(self) -> dict[str, int]:
        """Raises: StoreError."""
        return self.skill_tables.skill_tool_counts()

    def set_skill_vectors(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        """Raises: StoreError."""
        self.skill_tables.set_skill_vectors(vectors)

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        """Raises: StoreError."""
        return self.skill_tables.skill_vectors()

    def set_skill_profile(self, skill_id: str, vector: NDArray[np.float32], text_hash: str) -> None:
        """Raises: StoreError."""
        self.skill_tables.set_skill_profile(skill_id, vector, text_hash)

    def skill_profiles(self) -> dict[str, tuple[str, NDArray[np.float32]]]:
        """Raises: StoreError."""
        return self.skill_tables.skill_profiles()

    def replace_assignments(self, results: Sequence[Classified]) -> set[str]:
        """Raises: StoreError."""
        return self.skill_tables.replace_assignments(results)

    def mark_classify_failed(self, tool_id: str, content_hash: str, error: str) -> None:
        """Raises: StoreError."""
        self.skill_tables.mark_classify_failed(tool_id, content_hash, error)

    def classification_state(self) -> dict[str, tuple[str, str]]:
        """Raises: StoreError."""
        return self.skill_tables.classification_state()

    def assignments(self, tool_ids: Sequence[str]) -> dict[str, list[SkillAssignment]]:
        """Raises: StoreError."""
        return self.skill_tables.assignments(tool_ids)

    def skill_members(self, skill_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        """Raises: StoreError."""
        return self.skill_tables.skill_members(skill_ids)

    def add_suggestion(self, suggestion: Suggestion) -> int:
        """Raises: StoreError."""
        return self.skill_tables.add_suggestion(suggestion)

    def get_suggestion(self, suggestion_id: int) -> Suggestion | None:
        """Raises: StoreError."""
        return self.skill_tables.get_suggestion(suggestion_id)

    def list_suggestions(self, status: str | None = "pending") -> list[Suggestion]:
        """Raises: StoreError."""
        return self.skill_tables.list_suggestions(status)

    def set_suggestion_status(self, suggestion_id: int, status: str, reason: str | None) -> None:
        """Raises: SkillError, StoreError."""
        self.skill_tables.set_suggestion_status(suggestion_id, status, reason)

    # -- enrichments ------------------------------------------------------------------------
    def get_enrichments(
        self, kind: str, keys: Sequence[str], enricher: str
    ) -> dict[str, EnrichmentRecord]:
        """Raises: StoreError."""
        return self.enrichments.get_enrichments(kind, keys, enricher)

    def put_enrichments(self, records: Sequence[EnrichmentRecord]) -> None:
        """Raises: StoreError."""
        self.enrichments.put_enrichments(records)

    def delete_enrichments(self, kind: str, keys: Sequence[str]) -> int:
        """Raises: StoreError."""
        return self.enrichments.delete_enrichments(kind, keys)

    def enrichment_summary(self) -> list[tuple[str, str, str, int, int]]:
        """Raises: StoreError."""
        return self.enrichments.enrichment_summary()

    # -- feedback ---------------------------------------------------------------------------
    def add_feedback(self, records: Sequence[FeedbackRecord], *, keep: int) -> list[int]:
        """Raises: StoreError."""
        return self.feedback.add_feedback(records, keep=keep)

    def list_feedback(
        self, *, tool_id: str | None = None, limit: int = 100, vectors: bool = False
    ) -> list[FeedbackRecord]:
        """Raises: StoreError."""
        return self.feedback.list_feedback(tool_id=tool_id, limit=limit, vectors=vectors)

    def clear_feedback(self, tool_id: str | None = None) -> int:
        """Raises: StoreError."""
        return self.feedback.clear_feedback(tool_id)

    def feedback_summary(self) -> dict[str, int]:
        """Raises: StoreError."""
        return self.feedback.feedback_summary()
