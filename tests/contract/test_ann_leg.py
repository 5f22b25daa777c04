"""The embedded store's HNSW leg (Qdrant Edge): when it answers, what it writes, how it follows
other writers, and how its setting is parsed."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlean

from support.backends import IDENTITY, entry, unit
from support.concurrent_reads import reads_beside_writes
from toolscout.config import Settings
from toolscout.errors import ConfigError
from toolscout.store.sqlite import SQLiteStore


def _store(path: Path, min_tools: int = 0) -> SQLiteStore:
    store = SQLiteStore(f"sqlite:///{path}?ann_min_tools={min_tools}")
    store.bind(IDENTITY)
    return store


def _fill(store: SQLiteStore, n: int = 6) -> None:
    store.upsert(
        [
            entry(f"files::tool_{i}", f"word{i}", unit(1.0, i / 10), server=f"s{i % 2}")
            for i in range(n)
        ]
    )


def test_below_the_threshold_the_exact_leg_answers_and_no_shard_is_made(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db", min_tools=7)
    _fill(store)
    assert store.nearest(unit(1.0), limit=1)[0].id == "files::tool_0"
    assert store.ann.describe()["leg"] == "exact"
    assert not (tmp_path / "i.db.vectors").exists()
    store.upsert([entry("files::tool_9", "word9", unit(0.0, 1.0))])  # the 7th tool
    assert store.nearest(unit(0.0, 1.0), limit=1)[0].id == "files::tool_9"
    assert store.ann.describe()["leg"] == "ann"
    assert (tmp_path / "i.db.vectors" / "state.json").is_file()
    store.close()


def test_searching_through_the_shard_writes_nothing_to_the_index_file(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db")
    _fill(store)
    store.close()
    observer = sqlean.connect(str(tmp_path / "i.db"), isolation_level=None)
    before = observer.execute("PRAGMA data_version").fetchone()[0]
    reader = SQLiteStore(f"sqlite:///{tmp_path / 'i.db'}?ann_min_tools=0")
    assert reader.nearest(unit(1.0), limit=2)[0].id == "files::tool_0"
    assert reader.ann.describe()["leg"] == "ann"
    reader.close()
    assert observer.execute("PRAGMA data_version").fetchone()[0] == before
    observer.close()


def test_the_shard_follows_writes_of_a_store_that_does_not_own_it(tmp_path: Path) -> None:
    owner = _store(tmp_path / "i.db")
    _fill(owner)
    assert owner.nearest(unit(1.0), limit=1)[0].id == "files::tool_0"
    assert owner.ann.describe()["leg"] == "ann"
    other = _store(tmp_path / "i.db")  # the shard is taken: this one answers exactly
    other.upsert([entry("files::late", "late", unit(0.0, 0.0, 1.0))])
    assert other.nearest(unit(0.0, 0.0, 1.0), limit=1)[0].id == "files::late"
    assert other.ann.describe()["leg"] == "exact"
    assert other.delete(["files::tool_0"]) == 1
    hits = [h.id for h in owner.nearest(unit(0.0, 0.0, 1.0), limit=10)]
    assert hits[0] == "files::late" and "files::tool_0" not in hits
    assert owner.ann.describe()["leg"] == "ann"
    assert owner.ann.describe()["points"] == 6
    other.close()
    owner.close()


def test_points_are_named_by_their_rows_after_deletes_and_a_reused_rowid(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db")
    _fill(store)
    assert store.nearest(unit(0.0, 1.0), limit=1)[0].id == "files::tool_5"
    assert store.ann.describe()["leg"] == "ann"
    last = store.database.query("SELECT max(rowid) FROM tools")[0][0]
    assert store.delete(["files::tool_5", "files::tool_1"]) == 2
    store.upsert([entry("files::reborn", "reborn", unit(0.0, 1.0))])
    assert store.database.query("SELECT rowid FROM tools WHERE id = 'files::reborn'")[0][0] == last
    hits = [h.id for h in store.nearest(unit(0.0, 1.0), limit=10)]
    assert hits[0] == "files::reborn"
    assert sorted(hits) == sorted(["files::reborn", *(f"files::tool_{i}" for i in (0, 2, 3, 4))])
    store.close()
    reopened = _store(tmp_path / "i.db")  # a fresh process reads the names with the shard
    assert [h.id for h in reopened.nearest(unit(0.0, 1.0), limit=10)] == hits
    assert reopened.ann.describe()["leg"] == "ann"
    reopened.close()


def test_a_reset_index_gets_a_new_shard(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db")
    _fill(store)
    assert store.nearest(unit(1.0), limit=1)[0].id == "files::tool_0"
    store.reset()
    store.bind(IDENTITY)
    store.upsert([entry("files::fresh", "fresh", unit(1.0))])
    assert [h.id for h in store.nearest(unit(1.0), limit=5)] == ["files::fresh"]
    store.close()


@pytest.mark.parametrize(
    ("suffix", "named"),
    [("?ann_min_tools=many", "ann_min_tools"), ("?colour=red", "colour"), ("?mode=rw", "mode")],
)
def test_bad_store_options_are_refused_with_the_option_named(
    tmp_path: Path, suffix: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        SQLiteStore(f"sqlite:///{tmp_path / 'i.db'}{suffix}")


def test_the_setting_rides_on_the_sqlite_url_and_is_refused_for_postgresql() -> None:
    assert Settings(db="/x/i.db", ann_min_tools=0).db == "/x/i.db?ann_min_tools=0"
    assert Settings(db="sqlite:////x/i.db?mode=ro", ann_min_tools=5).db == (
        "sqlite:////x/i.db?mode=ro&ann_min_tools=5"
    )
    with pytest.raises(ValueError, match="ann_min_tools"):
        Settings(db="postgresql://localhost/x", ann_min_tools=5)


def test_searches_from_threads_during_writes_see_committed_states_only(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db")
    _fill(store)

    def search() -> int:
        hits = store.nearest(unit(0.0, 0.0, 1.0), limit=50)  # every tool
        # "files::late_*" tools arrive in pairs, one transaction each: never half a pair.
        late = [h.id for h in hits if h.id.startswith("files::late_")]
        assert len(late) % 2 == 0, late
        return len(late)

    def write() -> None:
        for i in range(10):
            store.upsert(
                [
                    entry(f"files::late_{i}a", "late", unit(0.0, 0.01 * i, 1.0)),
                    entry(f"files::late_{i}b", "late", unit(0.0, 0.01 * i + 0.005, 1.0)),
                ]
            )

    seen = reads_beside_writes(search, write)
    assert seen and store.ann.describe()["points"] == 26
    store.close()


def test_many_new_points_outside_the_graph_are_reindexed_while_the_shard_answers(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path / "i.db")
    _fill(store)
    assert store.nearest(unit(1.0), limit=1)[0].id == "files::tool_0"  # built inline
    store.ann.inline_build = 2  # so that ten new points call for a re-index (in a child)
    store.upsert([entry(f"files::new_{i}", "new", unit(0.0, 1.0, i / 10)) for i in range(10)])
    assert store.ann.describe()["building"]
    # The current shard, caught up, answers while the new one is built.
    assert store.ann.describe()["leg"] == "ann"
    assert store.nearest(unit(0.0, 1.0), limit=1)[0].id == "files::new_0"
    assert store.ann.wait_built(timeout=120)
    assert store.nearest(unit(0.0, 1.0), limit=1)[0].id == "files::new_0"
    assert store.ann.describe()["points"] == 16
    # Points the optimizer leaves outside a graph by design do not start another build.
    store.upsert([entry("files::one_more", "more", unit(0.0, 0.0, 0.0, 1.0))])
    assert not store.ann.describe()["building"]
    store.close()
