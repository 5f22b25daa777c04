"""The feedback store under faults: a kill during feedback writes leaves whole rows (never a
half-written call) and an index that searches; damaged rows are skipped with a warning while
the good ones keep teaching; a damaged feedback table (dropped, of another shape, pages
overwritten) is ignored with a warning. Feedback never fails a search."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlean

from support.fault_integrity import check
from support.fault_setup import SEED, Scene, WriterPool
from support.postgres import fresh_schema
from toolscout.config import Settings
from toolscout.engine import Engine

#: Calls recorded per feedback run, and seeded kills among their statements.
RECORDS = 12
KILLS = 5
QUERY = "send a message to a slack channel"


def _records(scene: Scene, rng: random.Random) -> list[list[str]]:
    tools = rng.sample(sorted(scene.v1), RECORDS)
    return [
        [
            f"please {t.split('::')[1].rsplit('_', 1)[0].replace('_', ' ')}",
            t,
            ("success", "error")[i % 2],
        ]
        for i, t in enumerate(tools)
    ]


def _rows(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlean.connect(str(db))
    try:
        rows: list[tuple[Any, ...]] = conn.execute(
            "SELECT query, tool_id, outcome, length(vector) FROM feedback ORDER BY id"
        ).fetchall()
        return rows
    finally:
        conn.close()


def test_a_kill_during_feedback_writes_keeps_whole_rows_and_the_index_searches(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    records = _records(scene, rng)
    expected = [(q, t, o) for q, t, o in records]
    full_db = scene.copy(tmp_path / "full.db")
    (full,) = writer_pool.run({"op": "feedback", "db": str(full_db), "records": records})
    assert not full["killed"] and full["report"]["recorded"] == RECORDS
    whole = _rows(full_db)
    assert [r[:3] for r in whole] == expected
    vector_bytes = whole[0][3]
    total = full["statements"]
    for i in range(KILLS):
        kill_at = rng.randint(1, total)
        where = f"seed {SEED}, kill {i}: feedback killed before statement {kill_at}/{total}"
        db = scene.copy(tmp_path / f"kill-{i}.db")
        (run,) = writer_pool.run(
            {"op": "feedback", "db": str(db), "records": records, "kill_at": kill_at}
        )
        assert run["killed"], where
        assert check(db).tools == scene.v1, where
        rows = _rows(db)
        # Whole rows, in order: each call is one transaction with its vector.
        assert [r[:3] for r in rows] == expected[: len(rows)], where
        assert all(r[3] == vector_bytes for r in rows), where
        (found,) = writer_pool.run({"op": "search", "db": str(db), "query": QUERY})
        assert len(found["report"]["ids"]) == 5, where
        (again,) = writer_pool.run({"op": "feedback", "db": str(db), "records": records})
        assert not again["killed"], where
        assert [r[:3] for r in _rows(db)] == expected[: len(rows)] + expected, where
    print(f"feedback kills: {KILLS} survived (seed {SEED}; {total} statements per run)")


@pytest.fixture
def engine_on(scene: Scene, tmp_path: Path, vector_cache: Path) -> Iterator[tuple[Engine, Path]]:
    db = scene.copy(tmp_path / "index.db")
    engine = Engine.open(Settings(db=str(db), cache_dir=str(vector_cache)))
    yield engine, db
    engine.close()


def _ids(engine: Engine) -> list[str]:
    return [hit.tool.id for hit in engine.search(QUERY, limit=5).tools]


def test_damaged_feedback_rows_are_skipped_with_a_warning_and_the_good_ones_still_count(
    engine_on: tuple[Engine, Path], caplog: pytest.LogCaptureFixture
) -> None:
    engine, db = engine_on
    plain = _ids(engine)
    promoted = plain[-1]
    for _ in range(3):
        engine.feedback.record(QUERY, promoted, "success")
    learned = _ids(engine)
    assert learned.index(promoted) < plain.index(promoted)  # the feedback moves the ranking
    good = engine.store.list_feedback(limit=1, vectors=True)[0]
    assert good.vector is not None
    blob = good.vector.tobytes()
    nan = np.full_like(good.vector, np.nan).tobytes()
    conn = sqlean.connect(str(db))
    damaged = [  # (created_at, query, tool_id, outcome, shown, source, embedder, vector)
        (1.0, QUERY, promoted, "success", "not json", "api", good.embedder, blob),
        (1.0, QUERY, promoted, "success", "5", "api", good.embedder, blob),
        ("yesterday", QUERY, promoted, "success", "[]", "api", good.embedder, blob),
        (1.0, QUERY, promoted, "success", "[]", "api", good.embedder, "text, not floats"),
        (1.0, QUERY, promoted, "success", "[]", "api", good.embedder, b"abc"),
        (1.0, QUERY, promoted, "maybe", "[]", "api", good.embedder, blob),
        (1.0, QUERY, b"\x00\x01", "success", "[]", "api", good.embedder, blob),
    ]
    try:
        with conn:
            conn.executemany(
                "INSERT INTO feedback(created_at, query, tool_id, outcome, shown, source, "
                "embedder, vector) VALUES (?,?,?,?,?,?,?,?)",
                damaged,
            )
            # A damaged vector on an otherwise good row: its request is embedded again.
            conn.execute(
                "INSERT INTO feedback(created_at, query, tool_id, outcome, shown, source, "
                "embedder, vector) VALUES (?,?,?,?,?,?,?,?)",
                (good.created_at, QUERY, promoted, "success", "[]", "api", good.embedder, nan),
            )
    finally:
        conn.close()
    with caplog.at_level(logging.WARNING, logger="toolscout.feedback"):
        after = _ids(engine)
    assert after == learned
    assert f"skipped {len(damaged)} unreadable row(s)" in caplog.text, caplog.text
    # The audit listing (without vectors) skips the rows damaged outside their vector too:
    # 3 good, the one with a NaN vector and the 2 with an unreadable one remain.
    assert len(engine.feedback.log(limit=100)) == 6


def _damage_dropped(conn: Any, path: Path) -> None:
    conn.execute("DROP TABLE feedback")


def _damage_reshaped(conn: Any, path: Path) -> None:
    conn.execute("DROP TABLE feedback")
    conn.execute("CREATE TABLE feedback (id INTEGER PRIMARY KEY, note TEXT)")


def _damage_pages(conn: Any, path: Path) -> None:
    """Overwrite the table's first page with noise, as a bad disk sector would."""
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='feedback'").fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with path.open("r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(random.Random(SEED).randbytes(size))


@pytest.mark.parametrize(
    "damage",
    [_damage_dropped, _damage_reshaped, _damage_pages],
    ids=["dropped", "reshaped", "pages"],
)
def test_a_damaged_feedback_table_is_ignored_with_a_warning_and_searches_answer(
    scene: Scene, tmp_path: Path, vector_cache: Path, caplog: pytest.LogCaptureFixture, damage: Any
) -> None:
    db = scene.copy(tmp_path / "index.db")
    settings = Settings(db=str(db), cache_dir=str(vector_cache))
    engine = Engine.open(settings)
    try:
        plain = _ids(engine)
        for i in range(40):  # enough rows to fill pages of their own
            engine.feedback.record(f"{QUERY} {i}", plain[-1], "success")
    finally:
        engine.close()  # checkpoints the WAL into the file
    conn = sqlean.connect(str(db), isolation_level=None)
    try:
        damage(conn, db)
    finally:
        conn.close()
    engine = Engine.open(settings)
    try:
        with caplog.at_level(logging.WARNING, logger="toolscout.feedback"):
            after = _ids(engine)
    finally:
        engine.close()
    assert after == plain  # the ranking without feedback
    assert "ranking without it" in caplog.text, caplog.text


@pytest.mark.postgres
@pytest.mark.parametrize(
    "damage", ["DROP TABLE feedback", "ALTER TABLE feedback DROP COLUMN vector"]
)
def test_a_damaged_feedback_table_on_postgresql_never_fails_a_search(
    writer_pool: WriterPool, scene: Scene, postgres_url: str, damage: str
) -> None:
    import psycopg

    from toolscout.store.postgres.conn import parse_url

    url = fresh_schema(postgres_url)
    catalogs = [str(c) for c in scene.catalogs]
    (indexed,) = writer_pool.run({"op": "index", "db": url, "catalogs": catalogs})
    assert not indexed["killed"], indexed
    (plain,) = writer_pool.run({"op": "search", "db": url, "query": QUERY})
    records = [[QUERY, plain["report"]["ids"][-1], "success"]] * 3
    (learned,) = writer_pool.run({"op": "feedback", "db": url, "records": records})
    assert learned["report"]["recorded"] == 3
    target = parse_url(url)
    with psycopg.connect(target.conninfo, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {target.schema}")
        conn.execute(damage)
    (after,) = writer_pool.run({"op": "search", "db": url, "query": QUERY})
    assert after["report"]["ids"] == plain["report"]["ids"]  # the ranking without feedback
