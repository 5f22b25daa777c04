"""kill -9 at seeded points of index, sync, classify and rebuild: after every kill the file is
a consistent index that has lost nothing (a rebuild leaves the old index or the new one, whole),
and the next run completes the work, classification included."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from support.fault_integrity import check, complete, nothing_lost
from support.fault_setup import KILLS, SEED, Scene, WriterPool

OPS = ("index", "sync", "classify", "rebuild")


def _request(op: str, db: Path, scene: Scene, kill_at: int | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "op": op,
        "db": str(db),
        "catalogs": [str(c) for c in scene.catalogs],
    }
    if op == "index":
        request["prune"] = True
    if kill_at is not None:
        request["kill_at"] = kill_at
    return request


def test_kill_9_at_seeded_points_loses_nothing_and_the_next_run_completes(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path, rng: random.Random
) -> None:
    # How many statements each operation issues from the base state, run to the end.
    totals: dict[str, int] = {}
    for op in OPS:
        (full,) = writer_pool.run(_request(op, scene.copy(tmp_path / f"full-{op}.db"), scene))
        assert not full["killed"]
        complete(op, check(tmp_path / f"full-{op}.db"), scene.v1, scene.v2, f"uninterrupted {op}")
        totals[op] = full["statements"]
    kills = 0
    for i in range(KILLS):
        op = OPS[i % len(OPS)]
        kill_at = rng.randint(1, totals[op])
        where = f"seed {SEED}, kill {i}: {op} killed before statement {kill_at}/{totals[op]}"
        db = scene.copy(tmp_path / f"kill-{i}.db")
        (run,) = writer_pool.run(_request(op, db, scene, kill_at))
        assert run["killed"], where
        kills += 1
        nothing_lost(op, check(db), scene.v1, scene.v2, scene.before.classified, where)
        (resumed,) = writer_pool.run(_request(op, db, scene))
        assert not resumed["killed"] and resumed["exit"] == 0, where
        complete(op, check(db), scene.v1, scene.v2, where + ", then run again")
    assert kills >= 20
    print(f"kills: {kills} survived (seed {SEED}; statements per full run {totals})")
