"""Opening an index writes nothing (a search or ``info`` must not disturb a server's caches or
fail on a replica), and a SQLite index can be opened read-only."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
import sqlean

from support.backends import IDENTITY, entry, unit
from toolscout.errors import StoreError
from toolscout.store.postgres import PostgresStore
from toolscout.store.postgres.conn import parse_url
from toolscout.store.sqlite import SQLiteStore


def _filled_sqlite(path: Path) -> None:
    store = SQLiteStore(str(path))
    store.bind(IDENTITY)
    store.upsert([entry("files::read_file", "read a file", unit(1.0))])
    store.close()


def test_opening_a_current_sqlite_index_and_reading_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    _filled_sqlite(path)
    observer = sqlean.connect(str(path), isolation_level=None)
    before = observer.execute("PRAGMA data_version").fetchone()[0]
    store = SQLiteStore(str(path))
    store.bind(IDENTITY)
    assert store.tools.get("files::read_file").name == "read_file"
    assert store.nearest(unit(1.0), limit=1)[0].id == "files::read_file"
    store.close()
    assert observer.execute("PRAGMA data_version").fetchone()[0] == before
    observer.close()


def test_a_read_only_sqlite_index_answers_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    _filled_sqlite(path)
    store = SQLiteStore(f"sqlite:///{path}?mode=ro")
    store.bind(IDENTITY)
    assert store.count() == 1 and store.read_only
    with pytest.raises(StoreError, match="read-only"):
        store.upsert([entry("files::write_file", "write a file", unit(0.0, 1.0))])
    with pytest.raises(StoreError, match="read-only"), store.writer_lock():
        pass
    store.close()
    with pytest.raises(StoreError, match="no index"):
        SQLiteStore(f"{tmp_path / 'missing.db'}?mode=ro")


@pytest.mark.postgres
def test_opening_a_current_postgres_schema_writes_nothing(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.bind(IDENTITY)
    store.close()
    target = parse_url(pg_url)
    with psycopg.connect(target.conninfo, autocommit=True) as conn:
        query = f"SELECT xmin::text FROM {target.schema}.meta WHERE key = 'schema_version'"
        before = conn.execute(query).fetchone()
        store = PostgresStore(pg_url)
        store.bind(IDENTITY)
        store.count()
        store.close()
        assert conn.execute(query).fetchone() == before
