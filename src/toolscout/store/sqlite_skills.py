"""SQL for skills, assignments, classification state and suggestions in the SQLite store.

A mixin of :class:`~toolscout.store.sqlite.SQLiteStore` (kept apart so each module stays small);
it implements :class:`~toolscout.store.base.SkillStore` with the store's own connection,
lock and transactions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import SkillError, SkillExists, SkillNotFound
from toolscout.models import JSON, ItemType, Skill, SkillAssignment, Suggestion, Tool
from toolscout.store.base import Classified

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


def now_iso() -> str:
    """UTC timestamp used for created/updated times (second precision, ISO 8601)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


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


def _chunks(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


class SQLiteSkillTables:
    """The SkillStore half of the SQLite store (see the module docstring)."""

    # Provided by SQLiteStore.
    def transaction(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    # -- skills -----------------------------------------------------------------------------
    def _skill_values(self, skill: Skill) -> tuple[Any, ...]:
        return (
            skill.name,
            skill.description,
            json.dumps(list(skill.keywords), ensure_ascii=False),
            json.dumps(list(skill.examples), ensure_ascii=False),
            skill.parent,
            int(skill.is_active),
            skill.created_at,
            skill.updated_at,
        )

    def insert_skill(self, skill: Skill) -> None:
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM skills WHERE id=?", (skill.id,)).fetchone():
                raise SkillExists(skill.id)
            conn.execute(
                f"INSERT INTO skills({_SKILL_COLUMNS}) VALUES(?,?,?,?,?,?,?,?,?)",
                (skill.id, *self._skill_values(skill)),
            )

    def update_skill(self, skill: Skill) -> None:
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE skills SET name=?, description=?, keywords=?, examples=?, parent=?, "
                "is_active=?, created_at=?, updated_at=? WHERE id=?",
                (*self._skill_values(skill), skill.id),
            )
            if cur.rowcount == 0:
                raise SkillNotFound(skill.id)

    def get_skill(self, skill_id: str) -> Skill:
        rows = self._query(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE id=?", (skill_id,))
        if not rows:
            raise SkillNotFound(skill_id)
        return _row_to_skill(rows[0])

    def list_skills(self, *, include_inactive: bool = True) -> list[Skill]:
        cond = "1" if include_inactive else "is_active=1"
        rows = self._query(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE {cond} ORDER BY id")
        return [_row_to_skill(r) for r in rows]

    def skill_tool_counts(self) -> dict[str, int]:
        rows = self._query("SELECT skill_id, count(*) FROM tool_skills GROUP BY skill_id")
        return {str(r[0]): int(r[1]) for r in rows}

    def set_skill_vectors(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        with self.transaction() as conn:
            for skill_id, vector in vectors.items():
                conn.execute("UPDATE skills SET vector=? WHERE id=?", (_blob(vector), skill_id))

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        rows = self._query("SELECT id, vector FROM skills WHERE vector IS NOT NULL")
        return {r[0]: np.frombuffer(r[1], dtype=np.float32).copy() for r in rows}

    def set_skill_profile(self, skill_id: str, vector: NDArray[np.float32], text_hash: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE skills SET profile_vector=?, profile_hash=? WHERE id=?",
                (_blob(vector), text_hash, skill_id),
            )

    def skill_profiles(self) -> dict[str, tuple[str, NDArray[np.float32]]]:
        rows = self._query(
            "SELECT id, profile_hash, profile_vector FROM skills WHERE profile_vector IS NOT NULL"
        )
        return {r[0]: (r[1], np.frombuffer(r[2], dtype=np.float32).copy()) for r in rows}

    # -- assignments ------------------------------------------------------------------------
    def replace_assignments(self, results: Sequence[Classified]) -> set[str]:
        changed: set[str] = set()
        stamp = now_iso()
        with self.transaction() as conn:
            for res in results:
                old = {
                    (r[0], round(float(r[1]), 6))
                    for r in conn.execute(
                        "SELECT skill_id, confidence FROM tool_skills WHERE tool_id=?",
                        (res.tool_id,),
                    ).fetchall()
                }
                new = {(a.skill_id, round(a.confidence, 6)) for a in res.assignments}
                if old != new:
                    changed.update(s for s, _ in old ^ new)
                conn.execute("DELETE FROM tool_skills WHERE tool_id=?", (res.tool_id,))
                conn.executemany(
                    "INSERT INTO tool_skills(tool_id, skill_id, confidence, is_primary) "
                    "VALUES(?,?,?,?)",
                    [
                        (res.tool_id, a.skill_id, float(a.confidence), int(a.is_primary))
                        for a in res.assignments
                    ],
                )
                conn.execute(
                    "INSERT OR REPLACE INTO tool_classification(tool_id, content_hash, status, "
                    "classifier, error, updated_at) VALUES(?,?,?,?,NULL,?)",
                    (res.tool_id, res.content_hash, "done", res.classifier, stamp),
                )
        return changed

    def mark_classify_failed(self, tool_id: str, content_hash: str, error: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO tool_classification(tool_id, content_hash, status, "
                "classifier, error, updated_at) VALUES(?,?,?,?,?,?)",
                (tool_id, content_hash, "failed", "", error[:2000], now_iso()),
            )

    def classification_state(self) -> dict[str, tuple[str, str]]:
        rows = self._query("SELECT tool_id, content_hash, status FROM tool_classification")
        return {r[0]: (r[1], r[2]) for r in rows}

    def assignments(self, tool_ids: Sequence[str]) -> dict[str, list[SkillAssignment]]:
        out: dict[str, list[SkillAssignment]] = {}
        for chunk in _chunks(tool_ids):
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT tool_id, skill_id, confidence, is_primary FROM tool_skills "
                f"WHERE tool_id IN ({marks}) ORDER BY tool_id, confidence DESC, skill_id",
                chunk,
            )
            for r in rows:
                out.setdefault(r[0], []).append(
                    SkillAssignment(r[0], r[1], float(r[2]), bool(r[3]))
                )
        return out

    def skill_members(self, skill_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = {s: [] for s in skill_ids}
        for chunk in _chunks(skill_ids):
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT skill_id, tool_id, confidence FROM tool_skills "
                f"WHERE skill_id IN ({marks}) ORDER BY skill_id, tool_id",
                chunk,
            )
            for r in rows:
                out[r[0]].append((r[1], float(r[2])))
        return out

    # -- suggestions ------------------------------------------------------------------------
    def add_suggestion(self, suggestion: Suggestion) -> int:
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO skill_suggestions(skill_id, name, description, keywords, "
                "source_tool_id, status, reason, created_at) VALUES(?,?,?,?,?,?,?,?)",
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
            )
            return int(cur.lastrowid)

    def get_suggestion(self, suggestion_id: int) -> Suggestion | None:
        rows = self._query(
            f"SELECT {_SUGGESTION_COLUMNS} FROM skill_suggestions WHERE id=?", (suggestion_id,)
        )
        return _row_to_suggestion(rows[0]) if rows else None

    def list_suggestions(self, status: str | None = "pending") -> list[Suggestion]:
        cond, params = ("status=?", [status]) if status is not None else ("1", [])
        rows = self._query(
            f"SELECT {_SUGGESTION_COLUMNS} FROM skill_suggestions WHERE {cond} ORDER BY id",
            params,
        )
        return [_row_to_suggestion(r) for r in rows]

    def set_suggestion_status(self, suggestion_id: int, status: str, reason: str | None) -> None:
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE skill_suggestions SET status=?, reason=? WHERE id=?",
                (status, reason, suggestion_id),
            )
            if cur.rowcount == 0:
                raise SkillError(f"suggestion: no suggestion with id {suggestion_id}")

    # -- light loads for ranked results ------------------------------------------------------
    def get_light(self, ids: Sequence[str]) -> dict[str, Tool]:
        out: dict[str, Tool] = {}
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT {_LIGHT_COLUMNS} FROM tools t WHERE t.id IN ({marks})", chunk
            )
            for r in rows:
                out[r[0]] = Tool(
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
                object.__setattr__(out[r[0]], "content_hash", r[8])
        return out

    def schemas(self, ids: Sequence[str]) -> dict[str, JSON | None]:
        out: dict[str, JSON | None] = {}
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT t.id, t.input_schema FROM tools t WHERE t.id IN ({marks})", chunk
            )
            for tool_id, raw in rows:
                out[tool_id] = _decode_schema(raw)
        return out


def _decode_schema(raw: str | None) -> JSON | None:
    # A schema written by another version or damaged on disk must not sink the whole result.
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
