"""Versioned SQLite schema. Append a migration; never edit one that has shipped.

Statements are separated by a semicolon at the end of a line, so a trigger's body (its inner
statements end mid-line, before ``END``) stays one statement."""

from __future__ import annotations

import re

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE tools (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            input_schema TEXT,
            output_schema TEXT,
            annotations TEXT NOT NULL,
            item_type TEXT NOT NULL,
            server TEXT,
            source TEXT,
            category TEXT,
            content_hash TEXT NOT NULL,
            text_hash TEXT NOT NULL
        );
        CREATE INDEX tools_server ON tools(server);
        CREATE INDEX tools_source ON tools(source);
        CREATE INDEX tools_item_type ON tools(item_type);
        CREATE VIRTUAL TABLE tools_fts USING fts5(
            name, actions, enhanced, keywords, use_cases, domain, description, params,
            content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TABLE skills (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            keywords TEXT NOT NULL DEFAULT '[]',
            examples TEXT NOT NULL DEFAULT '[]',
            parent TEXT,
            is_active INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            vector BLOB,
            profile_vector BLOB,
            profile_hash TEXT
        );
        CREATE TABLE tool_skills (
            tool_id TEXT NOT NULL,
            skill_id TEXT NOT NULL,
            confidence REAL NOT NULL,
            is_primary INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (tool_id, skill_id)
        );
        CREATE INDEX tool_skills_skill ON tool_skills(skill_id);
        CREATE TABLE skill_suggestions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            skill_id TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            keywords TEXT NOT NULL DEFAULT '[]',
            source_tool_id TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            reason TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX skill_suggestions_status ON skill_suggestions(status);
        CREATE TABLE tool_classification (
            tool_id TEXT PRIMARY KEY,
            content_hash TEXT NOT NULL,
            status TEXT NOT NULL,
            classifier TEXT NOT NULL,
            error TEXT,
            updated_at TEXT NOT NULL
        );
        """,
    ),
    (
        2,
        """
        CREATE TABLE enrichments (
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            enricher TEXT NOT NULL,
            input_hash TEXT NOT NULL,
            payload TEXT NOT NULL,
            status TEXT NOT NULL,
            error TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            tokens INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (kind, key, enricher)
        );
        """,
    ),
    (
        3,
        """
        CREATE TABLE feedback (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at REAL NOT NULL,
            query TEXT NOT NULL,
            tool_id TEXT NOT NULL,
            outcome TEXT NOT NULL,
            shown TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL,
            embedder TEXT NOT NULL DEFAULT '',
            vector BLOB
        );
        CREATE INDEX feedback_tool ON feedback(tool_id);
        """,
    ),
    (
        4,
        # The change log the embedded ANN vector leg follows (store/sqlite/ann/): every commit
        # that changes a tool row or its skills appends the row's rowid here, in the same
        # transaction, so the leg's shard can be brought up to any committed state.
        """
        CREATE TABLE tools_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, row INTEGER NOT NULL);
        CREATE TRIGGER tools_changed_insert AFTER INSERT ON tools
            BEGIN INSERT INTO tools_changes(row) VALUES (new.rowid); END;
        CREATE TRIGGER tools_changed_update AFTER UPDATE ON tools
            BEGIN INSERT INTO tools_changes(row) VALUES (new.rowid); END;
        CREATE TRIGGER tools_changed_delete AFTER DELETE ON tools
            BEGIN INSERT INTO tools_changes(row) VALUES (old.rowid); END;
        CREATE TRIGGER tool_skills_added AFTER INSERT ON tool_skills
            BEGIN INSERT INTO tools_changes(row)
            SELECT rowid FROM tools WHERE id = new.tool_id; END;
        CREATE TRIGGER tool_skills_removed AFTER DELETE ON tool_skills
            BEGIN INSERT INTO tools_changes(row)
            SELECT rowid FROM tools WHERE id = old.tool_id; END;
        INSERT OR REPLACE INTO meta(key, value)
            VALUES('vectors_epoch', lower(hex(randomblob(16))));
        """,
    ),
    (
        5,
        # Each tool's analysed terms, written with the tool (store/sqlite/lex/rows.py has the
        # layout): the in-memory lexical leg is loaded from them. Tools written before this
        # table have none until rewritten; FTS5 answers for such an index.
        """
        CREATE TABLE tools_terms (
            rowid INTEGER PRIMARY KEY,
            length INTEGER NOT NULL,
            terms TEXT NOT NULL,
            tf BLOB NOT NULL
        );
        """,
    ),
]


def statements(sql: str) -> list[str]:
    """The statements of one migration (split at semicolons that end a line)."""
    return [s for s in re.split(r";[ \t]*\n", sql + "\n") if s.strip()]


SCHEMA_VERSION = MIGRATIONS[-1][0]
