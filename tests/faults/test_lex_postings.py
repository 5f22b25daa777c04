"""The embedded store's in-memory lexical posting index never disagrees with FTS5: kill -9 a
writer just after a commit and at seeded points of ``index``, ``sync`` and ``index --rebuild``
while another process holds the index loaded; that process catches up from the change log, a
fresh process loads it from the rows, and both answer FTS5's ids and scores exactly."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from support.fault_integrity import check
from support.fault_setup import SEED, Scene, WriterPool
from toolscout.store.sqlite import SQLiteStore

LEX = "?lex_min_tools=0"
OPS = ("index", "sync", "rebuild")
KILLS = 9
WEIGHTS = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)


def _open(db: Path) -> SQLiteStore:
    return SQLiteStore(f"sqlite:///{db}{LEX}")


def _queries(db: Path, rng: random.Random) -> list[list[str]]:
    """Requests of words the catalog holds: a few from one tool, several across tools."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        terms = [r[0].split() for r in conn.execute("SELECT terms FROM tools_terms LIMIT 200")]
    finally:
        conn.close()
    words = sorted({w for ts in terms for w in ts})
    queries = [rng.sample(ts, min(3, len(ts))) for ts in rng.sample(terms, 10)]
    return queries + [rng.sample(words, 8) for _ in range(10)]


def assert_as_fts5(store: SQLiteStore, queries: list[list[str]], where: str = "") -> None:
    for tokens in queries:
        got = store.lex.lexical(tokens, limit=50, weights=WEIGHTS)
        want = store.lexical_leg.lexical(tokens, limit=50, weights=WEIGHTS)
        assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want], where
    assert store.lex.describe()["leg"] == "postings", where


def assert_fresh_agrees(db: Path, queries: list[list[str]], where: str = "") -> int:
    """A new process's index (loaded from the rows) answers as FTS5; returns its tools."""
    store = _open(db)
    try:
        assert_as_fts5(store, queries, where)
        return int(store.lex.describe()["tools"])
    finally:
        store.close()


def test_kill_9_of_a_writer_leaves_every_posting_index_as_fts5(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path, rng: random.Random
) -> None:
    queries = _queries(scene.base, rng)
    runs: dict[str, dict[str, Any]] = {}
    for op in OPS:
        db = scene.copy(tmp_path / f"full-{op}.db")
        (full,) = writer_pool.run(scene.request(op, db, LEX))
        assert not full["killed"] and full["commits"], full
        assert assert_fresh_agrees(db, queries) == len(scene.v2)
        runs[op] = full
    for i in range(KILLS):
        op = OPS[i % len(OPS)]
        full = runs[op]
        if i % 2 == 0:  # just after a COMMIT
            # (a COMMIT that is the run's last statement has no statement after it to kill at)
            kill_at = rng.choice([c for c in full["commits"] if c < full["statements"]]) + 1
        else:
            kill_at = rng.randint(1, full["statements"])
        where = f"seed {SEED}, kill {i}: {op} killed before statement {kill_at}"
        db = scene.copy(tmp_path / f"kill-{i}.db")
        reader = _open(db)  # holds the index loaded while the writer runs and dies
        try:
            assert_as_fts5(reader, queries, where)
            (run,) = writer_pool.run(scene.request(op, db, LEX, kill_at))
            assert run["killed"], where
            tools = len(check(db).tools)
            assert_as_fts5(reader, queries, where + ", the reader caught up")
            assert reader.lex.describe()["tools"] == tools, where
            assert assert_fresh_agrees(db, queries, where) == tools, where
            (resumed,) = writer_pool.run(scene.request(op, db, LEX))
            assert not resumed["killed"] and resumed["exit"] == 0, where
            assert_as_fts5(reader, queries, where + ", then run again")
            assert reader.lex.describe()["tools"] == len(scene.v2), where
        finally:
            reader.close()
