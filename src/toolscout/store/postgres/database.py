"""The PostgreSQL connection source of one store: its pool, write transactions (with the
schema's write lock and the data version bump) and reads."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg_pool import ConnectionPool

from toolscout.store.postgres.conn import Conn, PgTarget, sql_errors
from toolscout.store.sql.dialect import POSTGRES


class PostgresDatabase:
    """A :class:`~toolscout.store.sql.dialect.Database` over a connection pool."""

    dialect = POSTGRES

    def __init__(self, target: PgTarget, pool: ConnectionPool[Conn]) -> None:
        self.target = target
        self.pool = pool
        self._lock_key = "toolscout-write:" + target.schema

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """One write transaction holding the schema's write lock; rolled back on any error.

        Raises: StoreError when PostgreSQL fails."""
        with (
            sql_errors("write", self.target),
            self.pool.connection() as conn,
            conn.transaction(),
        ):
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._lock_key,))
            # The one place the data version moves: every write, from any process.
            conn.execute("UPDATE lexical_stats SET version = version + 1")
            yield conn

    def query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[Any]:
        """Raises: StoreError."""
        with sql_errors("query", self.target), self.pool.connection() as conn:
            cur = conn.cursor(binary=binary)
            return list(cur.execute(sql, params).fetchall())

    def version(self) -> Hashable:
        """The write counter every write transaction bumps (shared by all processes).

        Raises: StoreError."""
        return int(self.query("SELECT version FROM lexical_stats")[0][0])

    def close(self) -> None:
        self.pool.close()
