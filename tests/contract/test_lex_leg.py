"""The embedded store's in-memory lexical leg: when it answers, that it answers what FTS5
answers (ids and scores, bit for bit) through writes, deletes, other writers, filters and
weights, and how its setting is parsed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import sqlean

from support.backends import IDENTITY, entry, unit
from support.concurrent_reads import reads_beside_writes
from toolscout.config import Settings
from toolscout.errors import ConfigError
from toolscout.models import Filters, ItemType, SkillAssignment
from toolscout.store.base import IndexEntry
from toolscout.store.roles import Classified
from toolscout.store.sqlite import SQLiteStore

WEIGHTS = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)
WORDS = [f"w{i}" for i in range(30)] + ["file", "read", "write", "git", "page"]


def _store(path: Path, min_tools: int = 0) -> SQLiteStore:
    store = SQLiteStore(f"sqlite:///{path}?lex_min_tools={min_tools}")
    store.bind(IDENTITY)
    return store


def _entries(rng: random.Random, ids: range, prefix: str = "t") -> list[IndexEntry]:
    return [
        entry(
            f"s{i % 3}::{prefix}{i}",
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))),
            unit(1.0, i / 10),
            server=f"s{i % 3}",
            item_type=ItemType.PROMPT if i % 5 == 0 else ItemType.TOOL,
        )
        for i in ids
    ]


def assert_as_fts5(
    store: SQLiteStore,
    rng: random.Random,
    *,
    filters: Filters | None = None,
    weights: tuple[float, ...] | None = WEIGHTS,
    queries: int = 40,
) -> None:
    """The leg answers from its posting index, with FTS5's ids and scores exactly."""
    for _ in range(queries):
        tokens = [rng.choice([*WORDS, "absent"]) for _ in range(rng.randint(1, 8))]
        limit = rng.choice([1, 3, 10, 50])
        got = store.lex.lexical(tokens, limit=limit, filters=filters, weights=weights)
        want = store.lexical_leg.lexical(tokens, limit=limit, filters=filters, weights=weights)
        assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want], tokens
    assert store.lex.describe()["leg"] == "postings"


def test_below_the_threshold_fts5_answers_and_above_it_the_posting_index(
    tmp_path: Path,
) -> None:
    rng = random.Random(1)
    store = _store(tmp_path / "i.db", min_tools=10)
    store.upsert(_entries(rng, range(9)))
    assert store.lexical(["file"], limit=5, weights=WEIGHTS) is not None
    assert store.lex.describe()["leg"] == "fts5"
    store.upsert(_entries(rng, range(9, 12)))
    assert_as_fts5(store, rng)
    assert store.lex.describe()["tools"] == 12
    store.close()


def test_scores_stay_fts5s_through_updates_and_deletes(tmp_path: Path) -> None:
    # FTS5 counts every row ever inserted in N and avgdl (contentless_delete never lowers
    # them): the posting index reads FTS5's totals, so scores agree after churn too.
    rng = random.Random(2)
    store = _store(tmp_path / "i.db")
    store.upsert(_entries(rng, range(60)))
    assert_as_fts5(store, rng)
    store.upsert(_entries(rng, range(30, 90)))  # 30 rewritten, 30 new
    assert_as_fts5(store, rng)
    assert store.delete([f"s{i % 3}::t{i}" for i in range(0, 90, 4)]) > 0
    assert_as_fts5(store, rng)
    assert_as_fts5(store, rng, weights=None)  # other weights: loaded again for them
    assert_as_fts5(store, rng, weights=(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.5))
    store.close()


def test_every_filter_is_honoured_as_fts5_honours_it(tmp_path: Path) -> None:
    rng = random.Random(3)
    store = _store(tmp_path / "i.db")
    store.upsert(_entries(rng, range(40)))
    store.skills.replace_assignments(
        [
            Classified(
                f"s{i % 3}::t{i}", "h", "test", (SkillAssignment(f"s{i % 3}::t{i}", "files", 0.9),)
            )
            for i in range(1, 40, 3)
        ]
    )
    for filters in (
        Filters(servers=("s1",)),
        Filters(sources=("src-s2",)),
        Filters(item_types=(ItemType.PROMPT,)),
        Filters(skill_ids=("files",)),
        Filters(tool_ids=("s0::t3", "s1::t4", "s2::t5")),
        Filters(servers=("s0", "s2"), item_types=(ItemType.TOOL,)),
        Filters(servers=()),
    ):
        assert_as_fts5(store, rng, filters=filters, queries=15)
    store.close()


def test_the_index_follows_another_writer_on_the_same_file(tmp_path: Path) -> None:
    rng = random.Random(4)
    reader = _store(tmp_path / "i.db")
    reader.upsert(_entries(rng, range(30)))
    assert_as_fts5(reader, rng)
    writer = _store(tmp_path / "i.db")
    writer.upsert(_entries(rng, range(20, 45)))
    assert writer.delete(["s0::t0", "s1::t1"]) == 2
    assert_as_fts5(reader, rng)
    assert reader.lex.describe()["tools"] == 43
    writer.close()
    reader.close()


def test_a_reset_index_is_loaded_again(tmp_path: Path) -> None:
    rng = random.Random(5)
    store = _store(tmp_path / "i.db")
    store.upsert(_entries(rng, range(20)))
    assert_as_fts5(store, rng)
    store.reset()
    store.bind(IDENTITY)
    store.upsert([entry("s0::fresh", "fresh file", unit(1.0))])
    assert [h.id for h in store.lexical(["file"], limit=5, weights=WEIGHTS)] == ["s0::fresh"]
    assert store.lex.describe() | {"min_tools": 0} == {
        "leg": "postings",
        "min_tools": 0,
        "tools": 1,
        "postings": 2,
        "terms": 2,
        "loading": False,
    }
    store.close()


def test_tools_without_stored_terms_leave_fts5_answering_until_rewritten(
    tmp_path: Path,
) -> None:
    rng = random.Random(6)
    store = _store(tmp_path / "i.db")
    store.upsert(_entries(rng, range(20)))
    store.close()
    raw = sqlean.connect(str(tmp_path / "i.db"), isolation_level=None)
    raw.execute("DELETE FROM tools_terms WHERE rowid % 2 = 0")  # as an index from before them
    raw.close()
    store = _store(tmp_path / "i.db")
    hits = store.lexical(["file", "w1"], limit=10, weights=WEIGHTS)
    assert hits == store.lexical_leg.lexical(["file", "w1"], limit=10, weights=WEIGHTS)
    assert store.lex.describe()["leg"] == "fts5"
    store.upsert(_entries(random.Random(6), range(20)))  # the same tools, written again
    assert_as_fts5(store, rng)
    store.close()


def test_a_large_index_is_loaded_apart_while_fts5_answers(tmp_path: Path) -> None:
    rng = random.Random(8)
    store = _store(tmp_path / "i.db")
    store.lex.inline_load = 0  # as a catalog above INLINE_LOAD tools
    store.upsert(_entries(rng, range(40)))
    with store.lex._lock:  # the handover waits: the first searches are FTS5's
        first = store.lexical(["file", "w3"], limit=10, weights=WEIGHTS)
        assert first == store.lexical_leg.lexical(["file", "w3"], limit=10, weights=WEIGHTS)
        assert first and store.lex.describe()["leg"] == "fts5"
        store.upsert(_entries(rng, range(35, 45)))  # written while the index loads
    assert store.lex.wait_loaded(timeout=60)
    assert_as_fts5(store, rng)
    assert store.lex.describe()["tools"] == 45
    store.close()


def test_an_index_that_outgrew_its_delta_answers_while_its_successor_loads(
    tmp_path: Path,
) -> None:
    rng = random.Random(9)
    store = _store(tmp_path / "i.db")
    store.upsert(_entries(rng, range(40)))
    assert_as_fts5(store, rng)  # loaded inline
    store.lex.inline_load, store.lex.reload_min = 0, 0
    with store.lex._lock:  # the handover waits: the old index, caught up, answers
        store.upsert(_entries(rng, range(20, 60)))  # a delta past a quarter of the base
        assert store.lex.describe()["loading"]
        assert_as_fts5(store, rng)
    assert store.lex.wait_loaded(timeout=60)
    assert_as_fts5(store, rng)
    assert store.lex.describe() | {"min_tools": 0} == {
        "leg": "postings",
        "min_tools": 0,
        "tools": 60,
        "postings": store.lex.describe()["postings"],
        "terms": store.lex.describe()["terms"],
        "loading": False,
    }
    store.close()


def test_a_token_fts5_reads_as_a_phrase_is_answered_by_fts5(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db")
    store.upsert(
        [
            entry("s::a", "read file", unit(1.0)),
            entry("s::b", "file read", unit(0.0, 1.0)),
        ]
    )
    # "read-file" is one token to the caller, the phrase "read file" to FTS5: only s::a.
    assert [h.id for h in store.lexical(["read-file"], limit=5)] == ["s::a"]
    store.close()


def test_searches_from_threads_during_writes_see_committed_states_only(tmp_path: Path) -> None:
    store = _store(tmp_path / "i.db")
    store.upsert(_entries(random.Random(7), range(10)))

    def search() -> int:
        hits = store.lexical(["late"], limit=50, weights=WEIGHTS)
        # "late" tools arrive in pairs, one transaction each: never half a pair.
        assert len(hits) % 2 == 0, hits
        return len(hits)

    def write() -> None:
        for i in range(10):
            pair = [f"s::late_{i}a", f"s::late_{i}b"]
            store.upsert([entry(t, "late", unit(1.0)) for t in pair])

    seen = reads_beside_writes(search, write)
    assert seen and store.lex.describe()["tools"] == 30
    store.close()


def test_bad_lex_option_is_refused_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lex_min_tools"):
        SQLiteStore(f"sqlite:///{tmp_path / 'i.db'}?lex_min_tools=all")


def test_the_setting_rides_on_the_sqlite_url_and_is_refused_for_postgresql() -> None:
    assert Settings(db="/x/i.db", lex_min_tools=0).db == "/x/i.db?lex_min_tools=0"
    both = Settings(db="/x/i.db?mode=ro", ann_min_tools=5, lex_min_tools=7).db
    assert both == "/x/i.db?mode=ro&ann_min_tools=5&lex_min_tools=7"
    with pytest.raises(ValueError, match="lex_min_tools"):
        Settings(db="postgresql://localhost/x", lex_min_tools=5)
