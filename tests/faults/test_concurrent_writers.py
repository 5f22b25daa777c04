"""Two and three writers applying the same catalog at once: the index ends consistent and
complete, and their reports add up to what really changed (no tool counted as added twice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.fault_integrity import check
from support.fault_setup import Scene, WriterPool


@pytest.mark.parametrize(("op", "writers"), [("index", 2), ("sync", 3)])
def test_concurrent_writers_of_one_catalog_report_truthfully(
    writer_pool: WriterPool, scene: Scene, tmp_path: Path, writers: int, op: str
) -> None:
    db = scene.copy(tmp_path / "shared.db")
    request = {"op": op, "db": str(db), "catalogs": [str(c) for c in scene.catalogs]}
    runs = writer_pool.run(*[{**request, "prune": True}] * writers)
    assert all(not r["killed"] and r["exit"] == 0 for r in runs), runs
    after = check(db)
    assert after.tools == scene.v2
    assert after.classified == set(scene.v2)
    reports = [r["report"] if op == "index" else r["report"]["totals"] for r in runs]
    new = set(scene.v2) - set(scene.v1)
    changed = {t for t in set(scene.v1) & set(scene.v2) if scene.v1[t] != scene.v2[t]}
    gone = set(scene.v1) - set(scene.v2)
    print(
        f"{writers} concurrent {op} writers: " + str([(r["added"], r["updated"]) for r in reports])
    )
    assert sum(r["added"] for r in reports) == len(new), reports
    assert sum(r["updated"] for r in reports) == len(changed), reports
    assert sum(r["deleted"] for r in reports) == len(gone), reports
