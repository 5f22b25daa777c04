"""Skills, tool-skill assignments, classification state and the suggestion queue, written once
for both SQL stores (:class:`~toolscout.store.roles.SkillStore`).

Skill vectors are raw float32 bytes (``BLOB``/``bytea``): they are few and read whole, so no
vector index is needed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import SkillError, SkillExists, SkillNotFound
from toolscout.models import Skill, SkillAssignment, Suggestion
from toolscout.store.roles import Classified
from toolscout.store.sql.dialect import Database
from toolscout.store.sql.rows import now_iso

_SKILL_COLUMNS = (
    "id, name, description, keywords, examples, parent, is_active, created_at, updated_at"
)
_SUGGESTION_COLUMNS = (
    "id, skill_id, name, description, source_tool_id, status, reason, created_at, keywords"
)
_CLASSIFIED = (
    "INSERT INTO tool_classification(tool_id, content_hash, status, classifier, error, "
    "updated_at) VALUES (?,?,?,?,?,?) ON CONFLICT (tool_id) DO UPDATE SET "
    "content_hash = EXCLUDED.content_hash, status = EXCLUDED.status, "
    "classifier = EXCLUDED.classifier, error = EXCLUDED.error, updated_at = EXCLUDED.updated_at"
)


def _row_to_skill(row: Sequence[Any]) -> Skill:
    return Skill(
        id=row[0],
        name=row[1],
        description=row[2],
        keywords=tuple(json.loads(row[3])),
        examples=tuple(json.loads(row[4])),
        parent=row[5],
        is_active=bool(row[6]),
        created_at=row[7],
        updated_at=row[8],
    )


def _row_to_suggestion(row: Sequence[Any]) -> Suggestion:
    return Suggestion(
        id=int(row[0]),
        skill_id=row[1],
        name=row[2],
        description=row[3],
        source_tool_id=row[4],
        status=row[5],
        reason=row[6],
        created_at=row[7],
        keywords=tuple(json.loads(row[8])),
    )


def _blob(vector: NDArray[np.float32] | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def _floats(raw: bytes) -> NDArray[np.float32]:
    return np.frombuffer(bytes(raw), dtype=np.float32).copy()


def _skill_values(skill: Skill) -> tuple[Any, ...]:
    return (
        skill.name,
        skill.description,
        json.dumps(list(skill.keywords), ensure_ascii=False),
        json.dumps(list(skill.examples), ensure_ascii=False),
        skill.parent,
        bool(skill.is_active),
        skill.created_at,
        skill.updated_at,
    )


class VectorMirror(Protocol):
    """A vector leg outside the database (Qdrant) that follows the tools' skills and the skill
    centroids, and may hold the centroids itself."""

    def written(self, tool_ids: Sequence[str]) -> None: ...

    def skills_changed(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None: ...

    def skill_vectors(self) -> dict[str, NDArray[np.float32]] | None: ...


class SkillTables:
    """The :class:`~toolscout.store.roles.SkillStore` role of a SQL store, over one database.
    ``mirror``: a vector leg told of every change to assignments and centroids (set by the
    PostgreSQL store; None for the embedded one)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.sql = db.dialect.sql
        self.d = db.dialect
        self.mirror: VectorMirror | None = None

    def _query(self, text: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.db.query(self.sql(text), params)

    # -- skills -----------------------------------------------------------------------------
    def insert_skill(self, skill: Skill) -> None:
        """Raises: SkillExists, StoreError."""
        with self.db.transaction() as conn:
            cur = conn.execute(
                self.sql(
                    f"INSERT INTO skills({_SKILL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?) "
                    "ON CONFLICT (id) DO NOTHING"
                ),
                (skill.id, *_skill_values(skill)),
            )
            if cur.rowcount == 0:
                raise SkillExists(skill.id)

    def update_skill(self, skill: Skill) -> None:
        """Raises: SkillNotFound, StoreError."""
        with self.db.transaction() as conn:
            cur = conn.execute(
                self.sql(
                    "UPDATE skills SET name = ?, description = ?, keywords = ?, examples = ?, "
                    "parent = ?, is_active = ?, created_at = ?, updated_at = ? WHERE id = ?"
                ),
                (*_skill_values(skill), skill.id),
            )
            if cur.rowcount == 0:
                raise SkillNotFound(skill.id)

    def get_skill(self, skill_id: str) -> Skill:
        """Raises: SkillNotFound, StoreError."""
        rows = self._query(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE id = ?", (skill_id,))
        if not rows:
            raise SkillNotFound(skill_id)
        return _row_to_skill(rows[0])

    def list_skills(self, *, include_inactive: bool = True) -> list[Skill]:
        """Raises: StoreError."""
        cond = "true" if include_inactive else "is_active = ?"
        params = () if include_inactive else (True,)
        rows = self._query(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE {cond} ORDER BY id", params)
        return [_row_to_skill(r) for r in rows]

    def skill_tool_counts(self) -> dict[str, int]:
        """Raises: StoreError."""
        rows = self._query("SELECT skill_id, count(*) FROM tool_skills GROUP BY skill_id")
        return {str(r[0]): int(r[1]) for r in rows}

    def set_skill_vectors(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        """Raises: StoreError."""
        with self.db.transaction() as conn:
            conn.cursor().executemany(
                self.sql("UPDATE skills SET vector = ? WHERE id = ?"),
                [(_blob(v), skill_id) for skill_id, v in vectors.items()],
            )
        if self.mirror is not None:
            self.mirror.skills_changed(vectors)

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        """Stage 1's centroids: the mirror's when it holds them, else the database's.

        Raises: StoreError."""
        held = self.mirror.skill_vectors() if self.mirror is not None else None
        return held if held is not None else self.stored_vectors()

    def stored_vectors(self) -> dict[str, NDArray[np.float32]]:
        """The centroids the database holds. Raises: StoreError."""
        rows = self._query("SELECT id, vector FROM skills WHERE vector IS NOT NULL")
        return {r[0]: _floats(r[1]) for r in rows}

    def set_skill_profile(self, skill_id: str, vector: NDArray[np.float32], text_hash: str) -> None:
        """Raises: StoreError."""
        with self.db.transaction() as conn:
            conn.execute(
                self.sql("UPDATE skills SET profile_vector = ?, profile_hash = ? WHERE id = ?"),
                (_blob(vector), text_hash, skill_id),
            )

    def skill_profiles(self) -> dict[str, tuple[str, NDArray[np.float32]]]:
        """Raises: StoreError."""
        rows = self._query(
            "SELECT id, profile_hash, profile_vector FROM skills WHERE profile_vector IS NOT NULL"
        )
        return {r[0]: (r[1], _floats(r[2])) for r in rows}

    # -- assignments ------------------------------------------------------------------------
    def replace_assignments(self, results: Sequence[Classified]) -> set[str]:
        """Raises: StoreError."""
        changed: set[str] = set()
        stamp = now_iso()
        with self.db.transaction() as conn:
            cur = conn.cursor()
            for res in results:
                old = {
                    (r[0], round(float(r[1]), 6))
                    for r in conn.execute(
                        self.sql("SELECT skill_id, confidence FROM tool_skills WHERE tool_id = ?"),
                        (res.tool_id,),
                    ).fetchall()
                }
                new = {(a.skill_id, round(a.confidence, 6)) for a in res.assignments}
                changed.update(s for s, _ in old ^ new)
                conn.execute(self.sql("DELETE FROM tool_skills WHERE tool_id = ?"), (res.tool_id,))
                if res.assignments:
                    cur.executemany(
                        self.sql(
                            "INSERT INTO tool_skills(tool_id, skill_id, confidence, is_primary) "
                            "VALUES (?,?,?,?)"
                        ),
                        [
                            (res.tool_id, a.skill_id, float(a.confidence), bool(a.is_primary))
                            for a in res.assignments
                        ],
                    )
                conn.execute(
                    self.sql(_CLASSIFIED),
                    (res.tool_id, res.content_hash, "done", res.classifier, None, stamp),
                )
        if self.mirror is not None:  # an outside leg filters stage 2 by a skill_ids payload
            self.mirror.written([r.tool_id for r in results])
        return changed

    def mark_classify_failed(self, tool_id: str, content_hash: str, error: str) -> None:
        """Raises: StoreError."""
        with self.db.transaction() as conn:
            conn.execute(
                self.sql(_CLASSIFIED),
                (tool_id, content_hash, "failed", "", error[:2000], now_iso()),
            )

    def classification_state(self) -> dict[str, tuple[str, str]]:
        """Raises: StoreError."""
        rows = self._query("SELECT tool_id, content_hash, status FROM tool_classification")
        return {r[0]: (r[1], r[2]) for r in rows}

    def assignments(self, tool_ids: Sequence[str]) -> dict[str, list[SkillAssignment]]:
        """Raises: StoreError."""
        out: dict[str, list[SkillAssignment]] = {}
        for batch in self.d.batches(tool_ids):
            cond, params = self.d.any_of("tool_id", batch)
            rows = self._query(
                f"SELECT tool_id, skill_id, confidence, is_primary FROM tool_skills "
                f"WHERE {cond} ORDER BY tool_id, confidence DESC, skill_id",
                params,
            )
            for r in rows:
                out.setdefault(r[0], []).append(
                    SkillAssignment(r[0], r[1], float(r[2]), bool(r[3]))
                )
        return out

    def skill_members(self, skill_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        """Raises: StoreError."""
        out: dict[str, list[tuple[str, float]]] = {s: [] for s in skill_ids}
        for batch in self.d.batches(skill_ids):
            cond, params = self.d.any_of("skill_id", batch)
            rows = self._query(
                f"SELECT skill_id, tool_id, confidence FROM tool_skills "
                f"WHERE {cond} ORDER BY skill_id, tool_id",
                params,
            )
            for r in rows:
                out[r[0]].append((r[1], float(r[2])))
        return out

    # -- suggestions ------------------------------------------------------------------------
    def add_suggestion(self, suggestion: Suggestion) -> int:
        """Raises: StoreError."""
        with self.db.transaction() as conn:
            row = conn.execute(
                self.sql(
                    "INSERT INTO skill_suggestions(skill_id, name, description, keywords, "
                    "source_tool_id, status, reason, created_at) VALUES (?,?,?,?,?,?,?,?) "
                    "RETURNING id"
                ),
                (
                    suggestion.skill_id,
                    suggestion.name,
                    suggestion.description,
                    json.dumps(list(suggestion.keywords), ensure_ascii=False),
                    suggestion.source_tool_id,
                    suggestion.status,
                    suggestion.reason,
                    suggestion.created_at or now_iso(),
                ),
            ).fetchone()
            return int(row[0])

    def get_suggestion(self, suggestion_id: int) -> Suggestion | None:
        """Raises: StoreError."""
        rows = self._query(
            f"SELECT {_SUGGESTION_COLUMNS} FROM skill_suggestions WHERE id = ?", (suggestion_id,)
        )
        return _row_to_suggestion(rows[0]) if rows else None

    def list_suggestions(self, status: str | None = "pending") -> list[Suggestion]:
        """Raises: StoreError."""
        cond, params = ("status = ?", [status]) if status is not None else ("true", [])
        rows = self._query(
            f"SELECT {_SUGGESTION_COLUMNS} FROM skill_suggestions WHERE {cond} ORDER BY id",
            params,
        )
        return [_row_to_suggestion(r) for r in rows]

    def set_suggestion_status(self, suggestion_id: int, status: str, reason: str | None) -> None:
        """Raises: SkillError when there is no such suggestion; StoreError."""
        with self.db.transaction() as conn:
            cur = conn.execute(
                self.sql("UPDATE skill_suggestions SET status = ?, reason = ? WHERE id = ?"),
                (status, reason, suggestion_id),
            )
            if cur.rowcount == 0:
                raise SkillError(f"suggestion: no suggestion with id {suggestion_id}")
