"""kill -9 at seeded points of index, sync, classify and rebuild: after every kill the file is
a consistent index that has lost nothing (a rebuild leaves the old index or the new one, whole),
and the next run completes the work, classification included."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from support.fault_integrity import Snapshot, check
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


def _nothing_lost(op: str, after: Snapshot, scene: Scene, where: str) -> None:
    """Each tool is in its old or its new version, never missing while the catalog lists it."""
    if op == "classify":
        assert after.tools == scene.v1, where
        assert scene.before.classified - after.classified == set(), where
        return
    if op == "rebuild":  # the old index whole, or the new one whole: never a mix
        assert after.tools in (scene.v1, scene.v2), where
        assert after.classified == set(after.tools), where
        return
    for tool_id, content in after.tools.items():
        assert content in (scene.v1.get(tool_id), scene.v2.get(tool_id)), (where, tool_id)
    kept = set(scene.v1) & set(scene.v2)
    assert kept <= set(after.tools), (where, sorted(kept - set(after.tools))[:5])


def _complete(op: str, after: Snapshot, scene: Scene, where: str) -> None:
    expected = scene.v1 if op == "classify" else scene.v2
    assert after.tools == expected, where
    # A kill between chunks must not leave written tools unclassified for good.
    assert after.classified == set(expected), (where, len(set(expected) - after.classified))
    assert after.assigned == set(expected), (where, len(set(expected) - after.assigned))


def test_kill_9_at_seeded_points_loses_nothing_and_the_next_run_completes(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path, rng: random.Random
) -> None:
    # How many statements each operation issues from the base state, run to the end.
    totals: dict[str, int] = {}
    for op in OPS:
        (full,) = writer_pool.run(_request(op, scene.copy(tmp_path / f"full-{op}.db"), scene))
        assert not full["killed"]
        _complete(op, check(tmp_path / f"full-{op}.db"), scene, f"uninterrupted {op}")
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
        _nothing_lost(op, check(db), scene, where)
        (resumed,) = writer_pool.run(_request(op, db, scene))
        assert not resumed["killed"] and resumed["exit"] == 0, where
        _complete(op, check(db), scene, where + ", then run again")
    assert kills >= 20
    print(f"kills: {kills} survived (seed {SEED}; statements per full run {totals})")
