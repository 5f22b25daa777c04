"""kill -9 at seeded points of index, sync and rebuild on PostgreSQL, with the checks the SQLite
kills get: after every kill the schema is a consistent index that has lost nothing (a rebuild
leaves the old index or the new one, whole), and the next run completes the work,
classification included. The writer sends itself SIGKILL just before its n-th statement to the
server; the server rolls back the transaction of the connection that went away."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from support.fault_catalogs import content_hashes, versions, write
from support.fault_integrity import check_pg, complete, nothing_lost
from support.fault_setup import SEED, WriterPool
from support.postgres import fresh_schema

pytestmark = pytest.mark.postgres

OPS = ("index", "sync", "rebuild")
#: Two embedding chunks of 256 (kills land inside and between them), fewer tools than the
#: SQLite scene: each kill here first indexes a fresh schema.
CATALOG_SIZE = 300
#: Kills per run (each sets up a fresh schema of version 1 first): ``TOOLSCOUT_FAULT_PG_KILLS``.
KILLS = max(len(OPS), int(os.environ.get("TOOLSCOUT_FAULT_PG_KILLS", "6")))


class PgScene:
    """Catalog files that list version 1 while a schema is indexed, then version 2."""

    def __init__(self, folder: Path, pool: WriterPool, base_url: str) -> None:
        self.pool = pool
        self.base_url = base_url
        self.first, self.second = versions(SEED, CATALOG_SIZE)
        self.catalogs = write(folder, self.first)
        self.v1 = content_hashes(self.catalogs)
        write(folder, self.second)
        self.v2 = content_hashes(self.catalogs)
        self.folder = folder

    def request(self, op: str, url: str, kill_at: int | None = None) -> dict[str, Any]:
        request: dict[str, Any] = {"op": op, "db": url, "catalogs": [str(c) for c in self.catalogs]}
        if op == "index":
            request["prune"] = True
        if kill_at is not None:
            request["kill_at"] = kill_at
        return request

    def indexed_v1(self) -> tuple[str, set[str]]:
        """A fresh schema holding version 1 (the files list version 2 again afterwards), and
        the tools classified in it."""
        url = fresh_schema(self.base_url)
        write(self.folder, self.first)
        try:
            (done,) = self.pool.run(self.request("index", url))
        finally:
            write(self.folder, self.second)
        assert not done["killed"] and done["report"]["added"] == len(self.v1), done
        before = check_pg(url)
        assert before.tools == self.v1 and before.classified == set(self.v1)
        return url, before.classified


def test_kill_9_on_postgresql_loses_nothing_and_the_next_run_completes(
    writer_pool: WriterPool, postgres_url: str, tmp_path: Path
) -> None:
    scene = PgScene(tmp_path / "catalogs", writer_pool, postgres_url)
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
