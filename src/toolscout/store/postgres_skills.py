"""Skills, assignments, classification state and suggestions in the PostgreSQL store.

A mixin of :class:`~toolscout.store.postgres.PostgresStore` implementing
:class:`~toolscout.store.base.SkillStore` with the same semantics as
``toolscout.store.sqlite_skills`` (tests/contract runs both). Skill vectors are raw float32
bytes (``bytea``), as in SQLite: they are few and read whole, so no index is needed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import SkillError, SkillExists, SkillNotFound
from toolscout.models import JSON, ItemType, Skill, SkillAssignment, Suggestion, Tool
from toolscout.store.base import Classified
from toolscout.store.sqlite_skills import now_iso

_SKILL_COLUMNS = (
    "id, name, description, keywords, examples, parent, is_active, created_at, updated_at"
)
_SUGGESTION_COLUMNS = (
    "id, skill_id, name, description, source_tool_id, status, reason, created_at, keywords"
)
_LIGHT_COLUMNS = (
    "t.id, t.name, t.description, t.annotations, t.item_type, t.server, t.source, t.category, "
    "t.content_hash"
)


def _skill(row: Sequence[Any]) -> Skill:
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


def _suggestion(row: Sequence[Any]) -> Suggestion:
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


def _decode_schema(raw: str | None) -> JSON | None:
    # A schema written by another version must not sink a whole result.
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class PostgresSkillTables:
    """The SkillStore half of the PostgreSQL store."""

    def transaction(self) -> AbstractContextManager[Any]:  # provided by the store
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[Any]:
        raise NotImplementedError  # provided by the store

    # -- skills -----------------------------------------------------------------------------
    @staticmethod
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

    def insert_skill(self, skill: Skill) -> None:
        """Raises: SkillExists, StoreError."""
        with self.transaction() as conn:
            cur = conn.execute(
                f"INSERT INTO skills({_SKILL_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (id) DO NOTHING",
                (skill.id, *self._skill_values(skill)),
            )
            if cur.rowcount == 0:
                raise SkillExists(skill.id)

    def update_skill(self, skill: Skill) -> None:
        """Raises: SkillNotFound, StoreError."""
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE skills SET name = %s, description = %s, keywords = %s, examples = %s, "
                "parent = %s, is_active = %s, created_at = %s, updated_at = %s WHERE id = %s",
                (*self._skill_values(skill), skill.id),
            )
            if cur.rowcount == 0:
                raise SkillNotFound(skill.id)

    def get_skill(self, skill_id: str) -> Skill:
        """Raises: SkillNotFound, StoreError."""
        rows = self._query(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE id = %s", (skill_id,))
        if not rows:
            raise SkillNotFound(skill_id)
        return _skill(rows[0])

    def list_skills(self, *, include_inactive: bool = True) -> list[Skill]:
        cond = "true" if include_inactive else "is_active"
        rows = self._query(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE {cond} ORDER BY id")
        return [_skill(r) for r in rows]

    def skill_tool_counts(self) -> dict[str, int]:
        rows = self._query("SELECT skill_id, count(*) FROM tool_skills GROUP BY skill_id")
        return {str(r[0]): int(r[1]) for r in rows}

    def set_skill_vectors(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        with self.transaction() as conn:
            conn.cursor().executemany(
                "UPDATE skills SET vector = %s WHERE id = %s",
                [(_blob(v), skill_id) for skill_id, v in vectors.items()],
            )

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        rows = self._query("SELECT id, vector FROM skills WHERE vector IS NOT NULL")
        return {r[0]: _floats(r[1]) for r in rows}

    def set_skill_profile(self, skill_id: str, vector: NDArray[np.float32], text_hash: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE skills SET profile_vector = %s, profile_hash = %s WHERE id = %s",
                (_blob(vector), text_hash, skill_id),
            )

    def skill_profiles(self) -> dict[str, tuple[str, NDArray[np.float32]]]:
        rows = self._query(
            "SELECT id, profile_hash, profile_vector FROM skills WHERE profile_vector IS NOT NULL"
        )
        return {r[0]: (r[1], _floats(r[2])) for r in rows}

    # -- assignments ------------------------------------------------------------------------
    def replace_assignments(self, results: Sequence[Classified]) -> set[str]:
        changed: set[str] = set()
        with self.transaction() as conn:
            cur = conn.cursor()
            for res in results:
                old = {
                    (r[0], round(float(r[1]), 6))
                    for r in conn.execute(
                        "SELECT skill_id, confidence FROM tool_skills WHERE tool_id = %s",
                        (res.tool_id,),
                    ).fetchall()
                }
                new = {(a.skill_id, round(a.confidence, 6)) for a in res.assignments}
                changed.update(s for s, _ in old ^ new)
                conn.execute("DELETE FROM tool_skills WHERE tool_id = %s", (res.tool_id,))
                cur.executemany(
                    "INSERT INTO tool_skills(tool_id, skill_id, confidence, is_primary) "
                    "VALUES (%s,%s,%s,%s)",
                    [
                        (res.tool_id, a.skill_id, float(a.confidence), bool(a.is_primary))
                        for a in res.assignments
                    ],
                )
                self._classified(conn, res.tool_id, res.content_hash, "done", res.classifier, None)
        return changed

    @staticmethod
    def _classified(
        conn: Any, tool_id: str, content_hash: str, status: str, classifier: str, error: str | None
    ) -> None:
        conn.execute(
            "INSERT INTO tool_classification(tool_id, content_hash, status, classifier, error, "
            "updated_at) VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (tool_id) DO UPDATE SET "
            "content_hash = EXCLUDED.content_hash, status = EXCLUDED.status, "
            "classifier = EXCLUDED.classifier, error = EXCLUDED.error, "
            "updated_at = EXCLUDED.updated_at",
            (tool_id, content_hash, status, classifier, error, now_iso()),
        )

    def mark_classify_failed(self, tool_id: str, content_hash: str, error: str) -> None:
        with self.transaction() as conn:
            self._classified(conn, tool_id, content_hash, "failed", "", error[:2000])

    def classification_state(self) -> dict[str, tuple[str, str]]:
        rows = self._query("SELECT tool_id, content_hash, status FROM tool_classification")
        return {r[0]: (r[1], r[2]) for r in rows}

    def assignments(self, tool_ids: Sequence[str]) -> dict[str, list[SkillAssignment]]:
        out: dict[str, list[SkillAssignment]] = {}
        rows = self._query(
            "SELECT tool_id, skill_id, confidence, is_primary FROM tool_skills "
            "WHERE tool_id = ANY(%s) ORDER BY tool_id, confidence DESC, skill_id",
            (list(tool_ids),),
        )
        for r in rows:
            out.setdefault(r[0], []).append(SkillAssignment(r[0], r[1], float(r[2]), bool(r[3])))
        return out

    def skill_members(self, skill_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = {s: [] for s in skill_ids}
        rows = self._query(
            "SELECT skill_id, tool_id, confidence FROM tool_skills "
            "WHERE skill_id = ANY(%s) ORDER BY skill_id, tool_id",
            (list(skill_ids),),
        )
        for r in rows:
            out[r[0]].append((r[1], float(r[2])))
        return out

    # -- suggestions ------------------------------------------------------------------------
    def add_suggestion(self, suggestion: Suggestion) -> int:
        with self.transaction() as conn:
            row = conn.execute(
                "INSERT INTO skill_suggestions(skill_id, name, description, keywords, "
                "source_tool_id, status, reason, created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
                "RETURNING id",
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
        rows = self._query(
            f"SELECT {_SUGGESTION_COLUMNS} FROM skill_suggestions WHERE id = %s", (suggestion_id,)
        )
        return _suggestion(rows[0]) if rows else None

    def list_suggestions(self, status: str | None = "pending") -> list[Suggestion]:
        cond, params = ("status = %s", [status]) if status is not None else ("true", [])
        rows = self._query(
            f"SELECT {_SUGGESTION_COLUMNS} FROM skill_suggestions WHERE {cond} ORDER BY id",
            params,
        )
        return [_suggestion(r) for r in rows]

    def set_suggestion_status(self, suggestion_id: int, status: str, reason: str | None) -> None:
        """Raises: SkillError when there is no such suggestion."""
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE skill_suggestions SET status = %s, reason = %s WHERE id = %s",
                (status, reason, suggestion_id),
            )
            if cur.rowcount == 0:
                raise SkillError(f"suggestion: no suggestion with id {suggestion_id}")

    # -- light loads for ranked results ------------------------------------------------------
    def get_light(self, ids: Sequence[str]) -> dict[str, Tool]:
        out: dict[str, Tool] = {}
        rows = self._query(
            f"SELECT {_LIGHT_COLUMNS} FROM tools t WHERE t.id = ANY(%s)", (list(ids),)
        )
        for r in rows:
            tool = Tool(
                id=r[0],
                name=r[1],
                description=r[2],
                annotations=json.loads(r[3]),
                item_type=ItemType(r[4]),
                server=r[5],
                source=r[6],
                category=r[7],
            )
            # The stored hash covers the schemas this light load leaves out.
            object.__setattr__(tool, "content_hash", r[8])
            out[r[0]] = tool
        return out

    def schemas(self, ids: Sequence[str]) -> dict[str, JSON | None]:
        rows = self._query(
            "SELECT t.id, t.input_schema FROM tools t WHERE t.id = ANY(%s)", (list(ids),)
        )
        return {r[0]: _decode_schema(r[1]) for r in rows}
