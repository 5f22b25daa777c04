"""What must hold in an index file after any crash, read straight from the file (no Engine)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlean
import sqlite_vec

from toolscout.store.sqlite.lex.rows import varints


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


def _skills_checked(conn: Any, tools: dict[str, str]) -> Snapshot:
    """Assert that assignments and classification rows name existing tools and skills (any
    DB-API connection with ``execute``: SQLite's or psycopg's); the snapshot of ``tools``."""
    skills = {s for (s,) in conn.execute("SELECT id FROM skills")}
    pairs = conn.execute("SELECT tool_id, skill_id FROM tool_skills").fetchall()
    assert all(t in tools for t, _ in pairs), "an assignment names a deleted tool"
    assert all(s in skills for _, s in pairs), "an assignment names a missing skill"
    done = conn.execute(
        "SELECT tool_id, content_hash FROM tool_classification WHERE status='done'"
    ).fetchall()
    assert all(t in tools for t, _ in done), "a classification names a deleted tool"
    classified = {t for t, h in done if tools.get(t) == h}
    return Snapshot(tools, classified, {t for t, _ in pairs})


def check(path: Path) -> Snapshot:
    """Assert the file is a consistent index and return what it holds.

    Consistent: SQLite's and FTS5's integrity checks pass; every tool has exactly one text row,
    one terms row (of FTS5's token count) and one vector and nothing else has any;
    assignments and classification rows name existing tools and skills; the recorded identity
    is present whenever tools are.
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
            # The lexical posting index's source: one terms row per tool, of FTS5's length.
            lengths = dict(conn.execute("SELECT rowid, length FROM tools_terms").fetchall())
            assert set(lengths) == rowids, f"terms rows differ: {len(set(lengths) ^ rowids)}"
            for rowid, size in conn.execute("SELECT id, sz FROM tools_fts_docsize"):
                assert lengths[rowid] == sum(varints(bytes(size))), f"terms of row {rowid}"
        return _skills_checked(conn, tools)
    finally:
        conn.close()


def check_pg(url: str) -> Snapshot:
    """Assert a PostgreSQL index (the schema ``url`` names) is consistent; what it holds.

    Consistent: every tool has its vector and its postings, and no posting names a tool that
    is gone; each term's document frequency and the live row count agree with the postings
    and tools; assignments and classification rows name existing tools and skills; the
    recorded identity is present whenever tools are.
    """
    import psycopg

    from toolscout.store.postgres.conn import parse_url

    target = parse_url(url)
    with psycopg.connect(target.conninfo, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {target.schema}")
        tools = {i: h for i, h in conn.execute("SELECT id, content_hash FROM tools")}
        docs = {d for (d,) in conn.execute("SELECT doc FROM tools")}
        if tools:
            identity = conn.execute("SELECT value FROM meta WHERE key='identity'").fetchone()
            assert identity is not None and json.loads(identity[0])["dim"] > 0
            missing = conn.execute("SELECT count(*) FROM tools WHERE embedding IS NULL").fetchone()
            assert missing == (0,), f"{missing} tools without a vector"
        posted = {d for (d,) in conn.execute("SELECT DISTINCT doc FROM postings")}
        assert posted == docs, f"postings differ from tools: {len(posted ^ docs)} docs"
        wrong_df = conn.execute(
            "SELECT count(*) FROM term_stats s FULL JOIN "
            "(SELECT term, count(*) AS n FROM postings GROUP BY term) p ON p.term = s.term "
            "WHERE coalesce(s.df, 0) <> coalesce(p.n, 0)"
        ).fetchone()
        assert wrong_df is not None and wrong_df[0] == 0, f"{wrong_df} terms with a wrong df"
        live = conn.execute("SELECT live_rows FROM lexical_stats").fetchone()
        assert live is not None and live[0] == len(tools), (live, len(tools))
        return _skills_checked(conn, tools)


def nothing_lost(
    op: str,
    after: Snapshot,
    v1: dict[str, str],
    v2: dict[str, str],
    classified_before: set[str],
    where: str,
) -> None:
    """After a killed ``op`` from an index of ``v1`` towards ``v2``: each tool is in its old or
    its new version, never missing while the catalog lists it (a rebuild: the old index whole
    or the new one whole; a classification: no classification lost)."""
    if op == "classify":
        assert after.tools == v1, where
        assert classified_before - after.classified == set(), where
        return
    if op == "rebuild":  # the old index whole, or the new one whole: never a mix
        assert after.tools in (v1, v2), where
        assert after.classified == set(after.tools), where
        return
    for tool_id, content in after.tools.items():
        assert content in (v1.get(tool_id), v2.get(tool_id)), (where, tool_id)
    kept = set(v1) & set(v2)
    assert kept <= set(after.tools), (where, sorted(kept - set(after.tools))[:5])


def complete(op: str, after: Snapshot, v1: dict[str, str], v2: dict[str, str], where: str) -> None:
    """After ``op`` ran to the end: the index holds its target version, every tool classified
    and assigned (a kill between chunks must not leave written tools unclassified for good)."""
    expected = v1 if op == "classify" else v2
    assert after.tools == expected, where
    assert after.classified == set(expected), (where, len(set(expected) - after.classified))
    assert after.assigned == set(expected), (where, len(set(expected) - after.assigned))
