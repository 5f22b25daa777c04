"""The SQLite connection: extensions, pragmas, migrations, transactions and the data version.

Python's own ``sqlite3`` here cannot load extensions, so the connection comes from ``sqlean``
(SQLite 3.50 with extension loading), which loads ``sqlite-vec``. One connection behind one
lock serves the whole store.

Opening a file whose schema is current writes nothing, so a search or ``info`` does not disturb
a server's caches (they key on the data version). Opened read-only (SQLite's own ``mode=ro``),
every write fails with a StoreError saying so.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlean
import sqlite_vec

from toolscout.errors import StoreError
from toolscout.store.sql.dialect import SQLITE
from toolscout.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION, statements


class SQLiteDatabase:
    """One SQLite file in WAL mode (a :class:`~toolscout.store.sql.dialect.Database`)."""

    dialect = SQLITE

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """Raises: StoreError when the file cannot be opened or migrated."""
        self.path = path
        self.read_only = read_only
        try:
            if read_only:
                if not self.path.is_file():
                    raise StoreError(f"no index at {self.path} to open read-only")
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                conn = sqlean.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlean.connect(str(self.path), check_same_thread=False, isolation_level=None)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            if not read_only:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute("PRAGMA foreign_keys=ON")
        except (sqlean.Error, OSError) as exc:
            raise StoreError(f"cannot open SQLite index at {self.path}: {exc}") from exc
        self.conn = conn
        self.lock = threading.RLock()
        #: This connection's own commits (``PRAGMA data_version`` counts only the others').
        self.writes = 0
        self._migrate()

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error).

        Raises: StoreError when SQLite fails or the file is open read-only."""
        self.check_writable()
        with self.lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlean.Error as exc:
                raise StoreError(f"cannot start a write on {self.path}: {exc}") from exc
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlean.Error):
                    raise StoreError(f"write to {self.path} failed: {exc}") from exc
                raise
            finally:
                # The one place the data version moves for this process's writes.
                self.writes += 1

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Raises: StoreError."""
        with self.lock:
            try:
                return list(self.conn.execute(sql, params).fetchall())
            except sqlean.Error as exc:
                raise StoreError(f"query on {self.path} failed: {exc}") from exc

    def version(self) -> Hashable:
        """SQLite's ``data_version`` (bumped by other connections' commits) plus this
        connection's own write count: together they change with every write to the file.

        Raises: StoreError."""
        with self.lock:
            try:
                row = self.conn.execute("PRAGMA data_version").fetchone()
            except sqlean.Error as exc:
                raise StoreError(f"cannot read the data version of {self.path}: {exc}") from exc
            return (int(row[0]), self.writes)

    def check_writable(self) -> None:
        """Raises: StoreError when the file is open read-only."""
        if self.read_only:
            raise StoreError(
                f"the index at {self.path} is open read-only (?mode=ro); open it without "
                "that suffix to change it"
            )

    def _schema_version(self) -> int:
        if not self.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"):
            return 0
        row = self.query("SELECT value FROM meta WHERE key='schema_version'")
        return int(row[0][0]) if row else 0

    def _migrate(self) -> None:
        current = self._schema_version()
        if current == SCHEMA_VERSION:
            return  # opening a current index writes nothing
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {current}, newer than this toolscout "
                f"({SCHEMA_VERSION}); upgrade toolscout"
            )
        if self.read_only:
            raise StoreError(
                f"{self.path} has schema version {current}; this toolscout needs "
                f"{SCHEMA_VERSION}. Open it once without ?mode=ro to upgrade it."
            )
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {current}, newer than this toolscout "
                    f"({SCHEMA_VERSION}); upgrade toolscout"
                )
            for version, sql in MIGRATIONS:
                if version > current:
                    for statement in statements(sql):
                        conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    def close(self) -> None:
        with self.lock:
            self.conn.close()
