"""What must hold in an index file after any crash, read straight from the file (no Engine)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import sqlean
import sqlite_vec


@dataclass(frozen=True)
class Snapshot:
    """The tools of an index (id -> content hash) and which of them are classified."""

    tools: dict[str, str]
    classified: set[str]
    assigned: set[str]


def _connect(path: Path) -> sqlean.Connection:
    conn = sqlean.connect(str(path), isolation_level=None)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


def check(path: Path) -> Snapshot:
    """Assert the file is a consistent index and return what it holds.

    Consistent: SQLite's and FTS5's integrity checks pass; every tool has exactly one text row
    and one vector and nothing else has either; assignments and classification rows name
    existing tools and skills; the recorded identity is present whenever tools are.
    """
    conn = _connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO tools_fts(tools_fts) VALUES('integrity-check')")
        tools = dict(conn.execute("SELECT id, content_hash FROM tools").fetchall())
        rowids = {r[0] for r in conn.execute("SELECT rowid FROM tools")}
        identity = conn.execute("SELECT value FROM meta WHERE key='identity'").fetchone()
        if tools:
            assert identity is not None and json.loads(identity[0])["dim"] > 0
            fts = {r[0] for r in conn.execute("SELECT rowid FROM tools_fts")}
            vec = {r[0] for r in conn.execute("SELECT rowid FROM tools_vec")}
            assert fts == rowids, f"text rows differ: {len(fts ^ rowids)} rowids"
            assert vec == rowids, f"vectors differ: {len(vec ^ rowids)} rowids"
        skills = {r[0] for r in conn.execute("SELECT id FROM skills")}
        pairs = conn.execute("SELECT tool_id, skill_id FROM tool_skills").fetchall()
        assert all(t in tools for t, _ in pairs), "an assignment names a deleted tool"
        assert all(s in skills for _, s in pairs), "an assignment names a missing skill"
        done = conn.execute(
            "SELECT tool_id, content_hash FROM tool_classification WHERE status='done'"
        ).fetchall()
        assert all(t in tools for t, _ in done), "a classification names a deleted tool"
        classified = {t for t, h in done if tools.get(t) == h}
        return Snapshot(tools, classified, {t for t, _ in pairs})
    finally:
        conn.close()
