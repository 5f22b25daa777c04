"""kill -9 at seeded points of index, sync and rebuild on PostgreSQL, with the checks the SQLite
kills get: after every kill the schema is a consistent index that has lost nothing (a rebuild
leaves the old index or the new one, whole), and the next run completes the work,
classification included. The writer sends itself SIGKILL just before its n-th statement to the
server; the server rolls back the transaction of the connection that went away."""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from support.fault_catalogs import content_hashes, versions, write
from support.fault_integrity import check_pg, complete, nothing_lost
from support.fault_setup import SEED, WriterPool
from support.postgres import fresh_schema
from toolscout.store.postgres.conn import parse_url

pytestmark = pytest.mark.postgres

OPS = ("index", "sync", "rebuild")
#: Two embedding chunks of 256 (kills land inside and between them), fewer tools than the
#: SQLite scene.
CATALOG_SIZE = 300
#: Kills per run (each starts on an index of version 1 of its own): ``TOOLSCOUT_FAULT_PG_KILLS``.
KILLS = max(len(OPS), int(os.environ.get("TOOLSCOUT_FAULT_PG_KILLS", "6")))


def _in_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def _create_database(base_url: str, name: str, template: str | None = None) -> None:
    """Raises: psycopg.errors.InsufficientPrivilege (a server that lets this role create no
    database)."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with psycopg.connect(parse_url(base_url).conninfo, autocommit=True) as conn:
        conn.execute(statement)


class PgScene:
    """Catalog files that list version 1 while a schema is indexed, then version 2.

    Version 1 is indexed once, in a database of its own; every run starts on a copy of it
    (``CREATE DATABASE ... TEMPLATE``, a file copy). On a server where this role may create no
    database, every run indexes version 1 into a fresh schema instead."""

    def __init__(self, folder: Path, pool: WriterPool, base_url: str) -> None:
        self.pool = pool
        self.base_url = base_url
        self.first, self.second = versions(SEED, CATALOG_SIZE)
        self.catalogs = write(folder, self.first)
        self.v1 = content_hashes(self.catalogs)
        write(folder, self.second)
        self.v2 = content_hashes(self.catalogs)
        self.folder = folder
        self.databases: list[str] = []
        self.template: str | None = "v1_" + uuid.uuid4().hex[:12]
        try:
            _create_database(base_url, self.template)
        except psycopg.errors.InsufficientPrivilege:
            self.template = None
        else:
            self.databases.append(self.template)
            self.template_url, self.classified = self._index_v1(
                fresh_schema(_in_database(base_url, self.template))
            )

    def request(self, op: str, url: str, kill_at: int | None = None) -> dict[str, Any]:
        request: dict[str, Any] = {"op": op, "db": url, "catalogs": [str(c) for c in self.catalogs]}
        if op == "index":
            request["prune"] = True
        if kill_at is not None:
            request["kill_at"] = kill_at
        return request

    def _index_v1(self, url: str) -> tuple[str, set[str]]:
        write(self.folder, self.first)
        try:
            (done,) = self.pool.run(self.request("index", url))
        finally:
            write(self.folder, self.second)
        assert not done["killed"] and done["report"]["added"] == len(self.v1), done
        before = check_pg(url)
        assert before.tools == self.v1 and before.classified == set(self.v1)
        return url, before.classified

    def indexed_v1(self) -> tuple[str, set[str]]:
        """A schema holding version 1 (the files list version 2 again afterwards), and the
        tools classified in it."""
        if self.template is None:
            return self._index_v1(fresh_schema(self.base_url))
        copy = "k_" + uuid.uuid4().hex[:12]
        _create_database(self.base_url, copy, self.template)
        self.databases.append(copy)
        url = _in_database(self.template_url, copy)
        before = check_pg(url)
        assert before.tools == self.v1 and before.classified == self.classified
        return url, before.classified

    def close(self) -> None:
        """Drop the databases this scene made (a shared server keeps no leftovers)."""
        with psycopg.connect(parse_url(self.base_url).conninfo, autocommit=True) as conn:
            for name in reversed(self.databases):
                drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                conn.execute(drop.format(sql.Identifier(name)))


@pytest.fixture
def pg_scene(writer_pool: WriterPool, postgres_url: str, tmp_path: Path) -> Iterator[PgScene]:
    scene = PgScene(tmp_path / "catalogs", writer_pool, postgres_url)
    yield scene
    scene.close()


def test_kill_9_on_postgresql_loses_nothing_and_the_next_run_completes(
    writer_pool: WriterPool, pg_scene: PgScene
) -> None:
    scene = pg_scene
    rng = random.Random(SEED)
    totals: dict[str, int] = {}
    for op in OPS:
        url, _ = scene.indexed_v1()
        (full,) = writer_pool.run(scene.request(op, url))
        assert not full["killed"]
        complete(op, check_pg(url), scene.v1, scene.v2, f"uninterrupted {op}")
        totals[op] = full["statements"]
    kills = 0
    for i in range(KILLS):
        op = OPS[i % len(OPS)]
        # The pool's own statements vary a little from run to run: stay clear of the end.
        kill_at = rng.randint(1, max(1, totals[op] - 10))
        where = f"seed {SEED}, kill {i}: {op} killed before statement {kill_at}/{totals[op]}"
        url, classified = scene.indexed_v1()
        (run,) = writer_pool.run(scene.request(op, url, kill_at))
        assert run["killed"], where
        kills += 1
        nothing_lost(op, check_pg(url), scene.v1, scene.v2, classified, where)
        (resumed,) = writer_pool.run(scene.request(op, url))
        assert not resumed["killed"] and resumed["exit"] == 0, where
        complete(op, check_pg(url), scene.v1, scene.v2, where + ", then run again")
    assert kills >= len(OPS)
    print(f"PostgreSQL kills: {kills} survived (seed {SEED}; statements per full run {totals})")
