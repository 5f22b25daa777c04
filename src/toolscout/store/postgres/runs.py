"""Whole write runs on one PostgreSQL schema: the lock that makes concurrent runs take turns,
and the swap at the end of ``index --rebuild``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from psycopg import sql

from toolscout.errors import StoreError
from toolscout.store.postgres.conn import parse_url, sql_errors
from toolscout.store.postgres.database import PostgresDatabase


class RunLock:
    """A session-level advisory lock per schema for one write run, on a pooled connection of
    its own, re-entrant per store. PostgreSQL drops it when that session ends, so a killed
    writer never leaves it behind."""

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database
        self._lock = threading.RLock()
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Raises: StoreError when PostgreSQL fails."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            target = self.database.target
            with sql_errors("write", target), self.database.pool.connection() as conn:
                key = "toolscout-run:" + target.schema
                row = conn.execute("SHOW statement_timeout").fetchone()
                conn.execute("SET statement_timeout = 0")  # waiting for a turn is not a query
                conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0
                    conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
                    previous = row[0] if row else "0"
                    conn.execute("SELECT set_config('statement_timeout', %s, false)", (previous,))


def staging_url(database: PostgresDatabase, given_url: str) -> str:
    """The same database with schema ``<schema>_rebuild``, dropped first if a killed rebuild
    left it. Raises: StoreError."""
    name = f"{database.target.schema}_rebuild"
    with sql_errors("write", database.target), database.pool.connection() as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
    parts = urlsplit(given_url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", name)])))


def replace_schema(database: PostgresDatabase, staging: str) -> None:
    """Rename the staging schema to the live one's name in one transaction and drop the old
    schema. The staging schema gets a new epoch and a version past the old one's first, so every
    process drops its copies of posting lists and its version-keyed caches.

    Raises: StoreError."""
    target = database.target
    staged = parse_url(staging).schema
    if staged == target.schema:
        raise StoreError(f"rebuild: {staging} is the live schema itself")
    old, new = sql.Identifier(target.schema), sql.Identifier(staged)
    retired = sql.Identifier(f"{target.schema}_retired")
    with sql_errors("write", target), database.pool.connection() as conn, conn.transaction():
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(retired))
        row = conn.execute(sql.SQL("SELECT version FROM {}.lexical_stats").format(old)).fetchone()
        conn.execute(
            sql.SQL(
                "UPDATE {}.lexical_stats SET version = version + %s, "
                "epoch = md5(random()::text || clock_timestamp()::text)"
            ).format(new),
            ((int(row[0]) if row else 0) + 1,),
        )
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(old, retired))
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(new, old))
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(retired))
