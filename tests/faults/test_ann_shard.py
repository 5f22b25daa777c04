"""The embedded HNSW shard never disagrees with the SQLite rows it copies: kill -9 between a
commit and the shard's write (and at seeded points anywhere), delete or damage the shard's
folder, and the next open repairs it from the rows with nothing lost, searches answering all
along."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as qe

from support.fault_integrity import check
from support.fault_setup import SEED, Scene, WriterPool
from toolscout.models import Scored
from toolscout.store.sqlite import SQLiteStore

ANN = "?ann_min_tools=0"
OPS = ("index", "sync", "rebuild")
KILLS = 9


def _open(db: Path) -> SQLiteStore:
    return SQLiteStore(f"sqlite:///{db}{ANN}")


def _with_shard(db: Path) -> Path:
    store = _open(db)
    try:
        assert store.ann.current() is not None
    finally:
        store.close()
    assert Path(str(db) + ".vectors", "state.json").is_file()
    return db


@pytest.fixture(scope="module")
def with_shard(scene: Scene, tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """``with_shard(to)``: a copy of the scene's index and of its HNSW shard at ``to``, the shard
    built from the rows once (building it is most of an open's time) and checked current at
    every copy's open."""
    base = _with_shard(scene.copy(tmp_path_factory.mktemp("ann") / "base.db"))

    def copy(to: Path) -> Path:
        shutil.copyfile(base, to)
        shutil.copytree(str(base) + ".vectors", str(to) + ".vectors")
        return _with_shard(to)

    return copy


def _rows(store: SQLiteStore) -> dict[int, tuple[str, list[str], list[float]]]:
    found = store.database.query(
        "SELECT t.rowid, t.id, v.embedding, (SELECT json_group_array(skill_id) FROM tool_skills s "
        "WHERE s.tool_id = t.id) FROM tools t JOIN tools_vec v ON v.rowid = t.rowid"
    )
    return {
        int(r[0]): (
            str(r[1]),
            sorted(json.loads(r[3])),
            np.frombuffer(r[2], dtype=np.float32).tolist(),
        )
        for r in found
    }


def _ids(runs: list[list[Scored]]) -> list[list[str]]:
    return [[hit.id for hit in run] for run in runs]


def _vector(raw: Any) -> list[float]:
    return list(raw[""] if isinstance(raw, dict) else raw)


def assert_shard_agrees(db: Path) -> int:
    """The shard (caught up at open) holds exactly the rows' tools, skills and vectors, and
    answers as the exact leg does. Returns the number of tools."""
    store = _open(db)
    try:
        index = store.ann.current()
        assert index is not None
        records, _ = index.shard.scroll(
            qe.ScrollRequest(limit=1_000_000, with_payload=True, with_vector=True)
        )
        rows = _rows(store)
        points = {int(r.id): r for r in records}
        assert set(points) == set(rows), sorted(set(points) ^ set(rows))[:5]
        for rowid, (tool_id, skills, vector) in rows.items():
            payload = points[rowid].payload or {}
            assert payload["tool_id"] == tool_id
            assert sorted(payload["skill_ids"]) == skills, tool_id
            assert np.allclose(_vector(points[rowid].vector), vector, atol=1e-5), tool_id
        queries = np.random.default_rng(SEED).normal(size=(5, store.vector_leg.dim or 0))
        queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
        approx = store.ann.nearest_many(queries, limit=10)
        assert _ids(approx) == _ids(store.vector_leg.nearest_many(queries, limit=10))
        return len(rows)
    finally:
        store.close()


def test_kill_9_between_commit_and_shard_write_is_repaired_from_the_rows(
    writer_pool: WriterPool,
    scene: Scene,
    with_shard: Callable[[Path], Path],
    tmp_path: Path,
    rng: random.Random,
) -> None:
    runs: dict[str, dict[str, Any]] = {}
    for op in OPS:
        db = with_shard(tmp_path / f"full-{op}.db")
        (full,) = writer_pool.run(scene.request(op, db, ANN))
        assert not full["killed"] and full["commits"], full
        assert assert_shard_agrees(db) == len(scene.v2)
        runs[op] = full
    behind = 0
    for i in range(KILLS):
        op = OPS[i % len(OPS)]
        full = runs[op]
        if i % 2 == 0:  # just after a COMMIT: the rows are written, the shard not yet
            # (a COMMIT that is the run's last statement has no statement after it to kill at)
            kill_at = rng.choice([c for c in full["commits"] if c < full["statements"]]) + 1
        else:
            kill_at = rng.randint(1, full["statements"])
        where = f"seed {SEED}, kill {i}: {op} killed before statement {kill_at}"
        db = with_shard(tmp_path / f"kill-{i}.db")
        (run,) = writer_pool.run(scene.request(op, db, ANN, kill_at))
        assert run["killed"], where
        behind += _behind(db)
        assert assert_shard_agrees(db) == len(check(db).tools), where
        (resumed,) = writer_pool.run(scene.request(op, db, ANN))
        assert not resumed["killed"] and resumed["exit"] == 0, where
        assert assert_shard_agrees(db) == len(scene.v2), where + ", then run again"
    assert behind >= KILLS // 3, "too few kills left the shard behind the rows to test repair"


def _behind(db: Path) -> bool:
    """Whether the shard records fewer changes than the file has committed (read raw)."""
    import sqlean

    conn = sqlean.connect(str(db))
    try:
        last = conn.execute("SELECT max(seq) FROM tools_changes").fetchone()[0] or 0
    finally:
        conn.close()
    state = json.loads(Path(str(db) + ".vectors", "state.json").read_text(encoding="utf-8"))
    return bool(state["seq"] < last)


def test_a_deleted_shard_is_rebuilt_from_the_rows_while_searches_answer(
    scene: Scene, with_shard: Callable[[Path], Path], tmp_path: Path
) -> None:
    db = with_shard(tmp_path / "deleted.db")
    shutil.rmtree(str(db) + ".vectors")
    store = _open(db)
    try:
        store.ann.inline_build = 0  # build in a child process, as a large index does
        query = np.asarray(store.vectors([next(iter(scene.v1))])[next(iter(scene.v1))])
        exact = _ids(store.vector_leg.nearest_many(query[None, :], limit=10))
        # The exact leg answers while the shard is built.
        assert _ids(store.ann.nearest_many(query[None, :], limit=10)) == exact
        assert store.ann.current() is None
        assert store.ann.wait_built(timeout=120)
        assert store.ann.current() is not None
        assert _ids(store.ann.nearest_many(query[None, :], limit=10)) == exact
    finally:
        store.close()
    assert assert_shard_agrees(db) == len(scene.v1)


def test_a_damaged_shard_is_rebuilt_from_the_rows(
    scene: Scene, with_shard: Callable[[Path], Path], tmp_path: Path
) -> None:
    db = with_shard(tmp_path / "damaged.db")
    folder = Path(str(db) + ".vectors")
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "state.json":
            path.write_bytes(b"\xff" * min(64, path.stat().st_size or 64))
    assert assert_shard_agrees(db) == len(scene.v1)


def test_a_shard_ahead_of_a_restored_file_is_rebuilt(
    scene: Scene, with_shard: Callable[[Path], Path], tmp_path: Path
) -> None:
    db = with_shard(tmp_path / "restored.db")
    backup = tmp_path / "backup.db"
    shutil.copyfile(db, backup)
    store = _open(db)
    try:
        assert store.delete([next(iter(scene.v1))]) == 1  # the shard follows: one point fewer
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    shutil.copyfile(backup, db)  # the file goes back; its shard is now ahead of it
    assert assert_shard_agrees(db) == len(scene.v1)
