"""The learned ranker's stage: its view of its candidates, remembered per index version, and its
rows built a feature at a time and scored from bit masks give the same answers, to the bit, as
reading every candidate's light row on every search, building each row through a dict per run
and walking every tree node by node (tests/support/rank_reference.py); and no read once a
version's candidates are known."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from support.rank_reference import Tree, read_trees, reference_rerank, reference_rows, walk
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.run import load_queries
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Loaded, Scored, Tool
from toolscout.search.candidates import CandidateCache, candidate, missing
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.nametable import NameTable
from toolscout.search.rank import (
    FEATURES,
    MODEL_FILE,
    REQUEST_COLUMNS,
    Legs,
    Ranker,
    candidate_rows,
    copied_columns,
    features,
    rerank,
)
from toolscout.store.roles import ToolReads

DATA = Path(__file__).resolve().parents[1] / "data"


class LightRowSearcher(HybridSearcher):
    """The ranker's features as they were built before the cache: every candidate's light row
    read from the store, its name analysed, on every search."""

    def candidate_features(
        self, legs: Legs, tokens: list[str], version: Hashable | None = None
    ) -> tuple[list[str], NDArray[np.float64]]:
        ids = [h.id for h in legs.fused[: self.config.candidates]]
        return ids, features(legs, ids, tokens, self.store.tools.get_light(ids))


class ReferenceSearcher(HybridSearcher):
    """The whole stage the plain way: every candidate's light row read on every search, each
    row built through a dict per run, every tree walked node by node, the order sorted in
    Python."""

    @property
    def trees(self) -> list[Tree]:
        return _packaged_trees()

    def _rerank(
        self, ranker: Ranker, legs: Legs, tokens: list[str], version: Hashable | None
    ) -> tuple[list[Scored], dict[str, float]]:
        ids = [h.id for h in legs.fused[: self.config.candidates]]
        light = self.store.tools.get_light(ids)
        seen = {
            t: candidate(t, light[t].name, light[t].server) if t in light else missing(t)
            for t in ids
        }
        x = reference_rows(legs, ids, tokens, seen)
        return reference_rerank(ranker, self.trees, legs, ids, x)


@cache
def _packaged_trees() -> list[Tree]:
    return read_trees(resources.files("toolscout.search").joinpath(MODEL_FILE).read_text("utf-8"))


class CountingReads:
    """A store's tool reads, counting the ids asked of ``names``."""

    def __init__(self, inner: ToolReads) -> None:
        self.inner = inner
        self.asked: list[str] = []

    def names(self, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        self.asked.extend(ids)
        return self.inner.names(ids)


@pytest.fixture
def ranked(settings: Settings) -> Iterator[Engine]:
    starter = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
    engine = Engine.open(settings.model_copy(update={"learned_ranker": True}))
    assert engine.searcher.ranker is not None
    engine.index([CatalogFile(starter, source="builtin").read()])
    yield engine
    engine.close()


def _requests() -> list[str]:
    single = load_queries(DATA / "single_intent" / "queries.jsonl")[::4]
    multi = load_queries(DATA / "multi_intent" / "queries.jsonl")[::6]
    return [q.text for q in (*single, *multi)]


def _answers(searcher: HybridSearcher, requests: list[str]) -> list[list[tuple[str, float]]]:
    return [[(r.id, r.score) for r in searcher.search(q, limit=10)] for q in requests]


def test_remembered_candidates_give_the_answers_of_reading_every_row(ranked: Engine) -> None:
    searcher = ranked.searcher
    before = LightRowSearcher(
        ranked.store, searcher.embedder, searcher.config, ranker=searcher.ranker
    )
    requests = _requests()
    assert any(len(searcher.intents(q)) > 1 for q in requests)
    expected = _answers(before, requests)
    cold = _answers(searcher, requests)
    warm = _answers(searcher, requests)
    assert cold == expected and warm == expected
    before.close()


def test_the_whole_catalogs_table_gives_the_same_answers_without_a_read(ranked: Engine) -> None:
    searcher, store = ranked.searcher, ranked.store
    before = LightRowSearcher(store, searcher.embedder, searcher.config, ranker=searcher.ranker)
    requests = _requests()
    expected = _answers(before, requests)
    reads = CountingReads(store.tools)
    table = NameTable(store.tools, lambda: store.state().version, min_tools=0, rest=0)
    searcher.seen.close()
    searcher.seen = CandidateCache(reads, catalog=table)  # type: ignore[arg-type]
    # The first search starts the load and reads its candidates as before meanwhile.
    assert _answers(searcher, requests[:1]) == expected[:1]
    assert table.wait_loaded(60) and table.describe()["tools"] == store.count()
    reads.asked.clear()
    assert _answers(searcher, requests) == expected
    assert reads.asked == []
    # A write: the table holds the old version, so the next search reads as before.
    ranked.index([Loaded("extra", [Tool("x.report", "email_report", "Send a message")])])
    request = "email the weekly report to the team"
    assert _answers(searcher, [request]) == _answers(before, [request])
    assert reads.asked
    assert table.wait_loaded(60)
    reads.asked.clear()
    assert _answers(searcher, [request]) == _answers(before, [request])
    assert reads.asked == []
    before.close()


def test_the_stage_gives_the_answers_of_building_it_the_plain_way(ranked: Engine) -> None:
    searcher = ranked.searcher
    plain = ReferenceSearcher(
        ranked.store, searcher.embedder, searcher.config, ranker=searcher.ranker
    )
    requests = [*_requests(), "snow", "list", "the of and"]
    expected = _answers(plain, requests)
    assert _answers(searcher, requests) == expected
    plain.close()


def test_feature_rows_are_the_plain_rows_to_the_bit(ranked: Engine) -> None:
    """Single- and multi-intent requests, a request the lexical leg finds nothing for, legs
    without a whole-request run and a candidate the store does not hold; the columns
    ``copied_columns`` names hold the same values."""
    searcher = ranked.searcher
    checked = copied = 0
    for text in [*_requests(), "zzzz qqqq"]:
        legs, tokens = searcher.legs(text)
        ids = [h.id for h in legs.fused[: searcher.config.candidates]]
        seen = searcher.seen.get(ids, None)
        variants = [legs, replace(legs, whole=()), replace(legs, whole=list(legs.vector))]
        for case in variants:
            for who in (ids, [*ids[:-1], "not.stored"]):
                views = {**seen, "not.stored": missing("not.stored")}
                want = reference_rows(case, who, tokens, views)
                got = candidate_rows(case, who, tokens, views)
                assert got.shape == want.shape == (len(who), len(FEATURES))
                assert got.tobytes() == np.ascontiguousarray(want).tobytes(), text
                # The columns the trees search once as copies are copies.
                for copy, original in copied_columns(case):
                    assert got[:, copy].tobytes() == got[:, original].tobytes()
                    copied += 1
                checked += 1
    assert checked > 20 and copied > 0


def test_masks_find_the_leaves_a_walk_finds(ranked: Engine) -> None:
    """The packaged trees on random rows (each thresholds' own values among them) and on rows
    whose request columns every row shares, read once: the sums of a node-by-node walk."""
    ranker = ranked.searcher.ranker
    assert ranker is not None
    trees = _packaged_trees()
    rng = np.random.default_rng(7)
    x = rng.normal(size=(60, len(FEATURES)))
    for j, (f, cuts) in enumerate(zip(ranker.trees.features, ranker.trees.thresholds, strict=True)):
        x[j % 60, f] = cuts[j % cuts.size]
    assert ranker.scores(x).tobytes() == walk(trees, x).tobytes()
    x[:, :REQUEST_COLUMNS] = x[0, :REQUEST_COLUMNS]
    shared = ranker.scores(x, shared=REQUEST_COLUMNS)
    assert shared.tobytes() == walk(trees, x).tobytes()


def test_ties_go_by_id_as_a_sort_in_python_puts_them(ranked: Engine) -> None:
    ranker = ranked.searcher.ranker
    assert ranker is not None
    legs, tokens = ranked.searcher.legs("send an email to the team")
    ids = [h.id for h in legs.fused[:30]]
    x = np.ascontiguousarray(candidate_rows(legs, ids, tokens, ranked.searcher.seen.get(ids, None)))
    x[10:20] = x[5]  # ten more rows exactly like row 5: their scores tie
    got = rerank(ranker, legs, ids, x)
    want = reference_rerank(ranker, _packaged_trees(), legs, ids, x)
    assert got == want
    tied = [h.id for h in got[0] if h.id in {ids[i] for i in (5, *range(10, 20))}]
    assert tied == sorted(tied)


def test_known_candidates_are_not_read_again_at_the_same_version(ranked: Engine) -> None:
    store = ranked.store
    reads = CountingReads(store.tools)
    cache = CandidateCache(reads)  # type: ignore[arg-type]
    tools = store.tools.list_tools(limit=20)
    ids = [t.id for t in tools]
    version = store.state().version
    first = cache.get([*ids, "nope"], version)
    assert reads.asked == [*ids, "nope"]
    for tool in tools:
        assert first[tool.id] == candidate(tool.id, tool.name, tool.server)
    assert first["nope"] == missing("nope")
    again = cache.get([*ids, "nope"], version)
    # Only the id the store lacks is asked again.
    assert again == first and reads.asked == [*ids, "nope", "nope"]


def test_a_write_moves_the_version_and_the_new_name_counts(ranked: Engine) -> None:
    searcher = ranked.searcher
    reads = CountingReads(ranked.store.tools)
    cache = CandidateCache(reads)  # type: ignore[arg-type]
    request = "email the weekly report to the team"
    ranked.index([Loaded("extra", [Tool("x.report", "post_note", "Send a message to a team")])])
    before = ranked.store.state().version
    server = ranked.store.tools.get("x.report").server
    assert cache.get(["x.report"], before)["x.report"] == candidate("x.report", "post_note", server)
    ranked.index([Loaded("extra", [Tool("x.report", "email_report", "Send a message to a team")])])
    after = ranked.store.state().version
    assert after != before
    renamed = cache.get(["x.report"], after)["x.report"]
    assert renamed == candidate("x.report", "email_report", server)
    assert renamed.name != candidate("x.report", "post_note", server).name
    assert reads.asked == ["x.report", "x.report"]
    reference = LightRowSearcher(
        ranked.store, searcher.embedder, searcher.config, ranker=searcher.ranker
    )
    assert _answers(searcher, [request]) == _answers(reference, [request])
    reference.close()


def test_a_store_that_cannot_tell_its_version_is_read_every_time(ranked: Engine) -> None:
    reads = CountingReads(ranked.store.tools)
    cache = CandidateCache(reads)  # type: ignore[arg-type]
    ids = [t.id for t in ranked.store.tools.list_tools(limit=3)]
    assert cache.get(ids, None) == cache.get(ids, None)
    assert reads.asked == ids + ids


def test_the_cache_keeps_at_most_its_size_newest_first(ranked: Engine) -> None:
    reads = CountingReads(ranked.store.tools)
    cache = CandidateCache(reads, size=5)  # type: ignore[arg-type]
    ids = [t.id for t in ranked.store.tools.list_tools(limit=12)]
    version = ranked.store.state().version
    cache.get(ids, version)
    reads.asked.clear()
    cache.get(ids[-5:], version)
    assert reads.asked == []
    cache.get(ids[:2], version)
    assert reads.asked == ids[:2]
