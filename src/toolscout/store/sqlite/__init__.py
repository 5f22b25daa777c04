"""The embedded store: one SQLite file (tools, FTS5 index, sqlite-vec table)."""

from toolscout.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
