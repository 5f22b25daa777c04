"""What agents called is history: ``index --rebuild`` and ``migrate`` carry the feedback log
over, and the rebuilt index keeps learning from it."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.store.roles import FeedbackRecord
from toolscout.store.sqlite import SQLiteStore
from toolscout.store.transfer import copy_feedback
from toolscout.sync.rebuild import rebuild_index

STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
REQUEST = "open a PR from feature/search into main"
RIGHT = "github::create_pull_request"


def test_a_rebuilt_index_keeps_its_feedback_and_what_it_learned(
    db_copy: Callable[[str], Path], vector_cache: Path
) -> None:
    settings = Settings(db=str(db_copy("index.db")), cache_dir=str(vector_cache))
    with Engine.open(settings) as engine:
        for _ in range(3):
            engine.feedback.record(REQUEST, RIGHT, "success")
    rebuild_index(settings, [CatalogFile(STARTER, source="builtin").read()])
    with Engine.open(settings) as engine:
        assert [r.tool_id for r in engine.feedback.log()] == [RIGHT] * 3
        top3 = [h.tool.id for h in engine.search(REQUEST, limit=3).tools]
    assert RIGHT in top3


def test_copying_feedback_appends_every_row_oldest_first(tmp_path: Path) -> None:
    source = SQLiteStore(f"sqlite:///{tmp_path / 'a.db'}")
    target = SQLiteStore(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        source.feedback.add_feedback(
            [
                FeedbackRecord(0, float(n), f"r{n}", "a::b", "success", (), "api", "m")
                for n in range(3)
            ],
            keep=10,
        )
        assert copy_feedback(source, target) == 3
        assert [r.query for r in target.feedback.list_feedback()] == ["r2", "r1", "r0"]
    finally:
        source.close()
        target.close()


def test_rows_of_another_model_are_embedded_again_when_carried_over(
    engine: Engine, tmp_path: Path
) -> None:
    source = SQLiteStore(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        source.feedback.add_feedback(
            [FeedbackRecord(0, 1.0, REQUEST, RIGHT, "success", (), "api", "old-model")], keep=10
        )
        assert engine.feedback.carry_over(source) == 1
    finally:
        source.close()
    (row,) = engine.store.feedback.list_feedback(vectors=True)
    assert row.embedder == engine.embedder.name and row.vector is not None
    assert row.vector.shape == (engine.embedder.dim,)
