"""The whole request as the learned ranker reads it, made only when the ranker is on and the
request has several intents: by default the intents' rows averaged (no embedding), or, with
``whole_request = "embedded"``, its text embedded beside the intents; either way searched as
one more row of the vector leg, and nothing of it made with the ranker off."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import pytest

from toolscout.config import Settings
from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors
from toolscout.engine import Engine
from toolscout.models import Loaded, Scored, SearchRequest, Strategy, Tool
from toolscout.search.queryrows import intents_mean
from toolscout.search.rank import FEATURES, Legs, features

TWO_PARTS = "book a meeting with Ana on Friday and email her the agenda"
ONE_PART = "how deep is the snow at the ski resort"

TOOLS = Loaded(
    "tests",
    [
        Tool("cal.create_event", "create_event", "Create a calendar event with attendees"),
        Tool("mail.send_email", "send_email", "Send an email to a recipient"),
        Tool("snow.depth", "snow_depth", "Report snowfall depth for ski resorts"),
        Tool("files.read_file", "read_file", "Read a file from the local disk"),
        Tool("weather.forecast", "get_forecast", "Get the weather forecast for a city"),
    ],
)


class Recorder(EmbedderWrapper):
    """The real embedder, keeping the texts of every query embedding call."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.calls: list[list[str]] = []

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return self.inner.embed_query(texts)


def _open(settings: Settings, ranker: bool) -> Engine:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": ranker}))
    engine.index([TOOLS])
    return engine


@pytest.fixture
def ranked(settings: Settings) -> Iterator[Engine]:
    """The ranker on, its whole-request row embedded beside the intents."""
    engine = _open(settings, True)
    assert engine.searcher.ranker is not None
    engine.searcher.config = replace(engine.searcher.config, whole_request="embedded")
    yield engine
    engine.close()


@pytest.fixture
def averaged(settings: Settings) -> Iterator[Engine]:
    """The ranker on as configured by default: the whole request's row averaged."""
    engine = _open(settings, True)
    assert engine.searcher.config.whole_request == "intents_mean"
    yield engine
    engine.close()


def _recorded(engine: Engine) -> Recorder:
    recorder = Recorder(engine.searcher.embedder)
    engine.searcher.embedder = recorder
    return recorder


@pytest.fixture
def plain(settings: Settings) -> Iterator[Engine]:
    engine = _open(settings, False)
    assert engine.searcher.ranker is None
    yield engine
    engine.close()


def test_with_the_ranker_off_only_the_intents_are_embedded(plain: Engine) -> None:
    engine = plain
    intents = engine.searcher.intents(TWO_PARTS)
    assert len(intents) == 2
    recorder = _recorded(engine)
    engine.search(TWO_PARTS, limit=3)
    assert recorder.calls == [intents]


def test_with_the_ranker_on_the_whole_request_is_embedded_in_the_intents_call(
    ranked: Engine,
) -> None:
    intents = ranked.searcher.intents(TWO_PARTS)
    recorder = _recorded(ranked)
    ranked.search(TWO_PARTS, limit=3)
    assert recorder.calls == [[*intents, TWO_PARTS]]


def test_a_request_of_one_intent_costs_no_more_embedding_with_the_ranker_on(
    ranked: Engine,
) -> None:
    recorder = _recorded(ranked)
    hits = ranked.search(ONE_PART, limit=3).hits
    assert recorder.calls == [[ONE_PART]]
    assert hits[0].tool.id == "snow.depth"


def test_a_search_that_brings_its_intents_rows_embeds_the_whole_request_alone(
    ranked: Engine,
) -> None:
    intents = ranked.searcher.intents(TWO_PARTS)
    recorder = _recorded(ranked)
    ranked.find(SearchRequest(TWO_PARTS, strategy=Strategy.HIERARCHICAL, limit=3))
    assert recorder.calls == [intents, [TWO_PARTS]]


def test_the_whole_request_has_its_own_run_of_nearest_tools(ranked: Engine) -> None:
    searcher = ranked.searcher
    legs, _ = searcher.legs(TWO_PARTS)
    assert legs.intents == 2
    alone = ranked.store.nearest_many(searcher.embedder.embed_query([TWO_PARTS]), limit=100)[0]
    # One more row of the same product: the same run, up to float32 rounding.
    assert [h.id for h in legs.whole] == [h.id for h in alone]
    assert [h.score for h in legs.whole] == pytest.approx([h.score for h in alone], abs=1e-6)
    single, _ = searcher.legs(ONE_PART)
    assert list(single.whole) == list(single.vector)


def test_answers_with_the_ranker_off_are_those_of_the_intents_rows_alone(plain: Engine) -> None:
    """The search's own embedding path and the intents' rows brought by a caller give the same
    ids and scores, to the bit."""
    searcher = plain.searcher
    for query in (TWO_PARTS, ONE_PART):
        own = searcher.search(query, limit=5)
        brought = searcher.search(query, limit=5, query_vectors=searcher.embed_query(query))
        assert [(r.id, r.score) for r in own] == [(r.id, r.score) for r in brought]


def test_whole_request_features_read_its_run() -> None:
    run = [Scored("a", 0.9), Scored("b", 0.7), Scored("c", 0.5)]
    legs = Legs(run, run, run, 2, 10, run)
    x = features(legs, ["b", "z"], ["b"], {})
    col = FEATURES.index
    crowd = np.array([0.9, 0.7, 0.5])
    assert x[0, col("whole_cosine")] == pytest.approx(0.7)
    assert x[0, col("whole_gap")] == pytest.approx(-0.2)
    assert x[0, col("whole_z")] == pytest.approx((0.7 - crowd.mean()) / crowd.std())
    assert x[0, col("whole_rank")] == pytest.approx(np.log1p(2))
    # Outside the run: its last cosine, one place below it.
    assert x[1, col("whole_cosine")] == pytest.approx(0.5)
    assert x[1, col("whole_rank")] == pytest.approx(np.log1p(4))
    bare = features(Legs(run, run, run, 2, 10), ["a"], ["a"], {})
    names = ("whole_cosine", "whole_gap", "whole_z", "whole_rank")
    assert all(bare[0, col(n)] == 0.0 for n in names)


def test_the_intents_mean_costs_no_embedding_and_has_its_own_run(averaged: Engine) -> None:
    ranked = averaged
    searcher = ranked.searcher
    intents = searcher.intents(TWO_PARTS)
    recorder = _recorded(ranked)
    ranked.search(TWO_PARTS, limit=3)
    ranked.find(SearchRequest(TWO_PARTS, strategy=Strategy.HIERARCHICAL, limit=3))
    assert recorder.calls == [intents, intents]
    legs, _ = searcher.legs(TWO_PARTS)
    rows = searcher.embedder.embed_query(intents)
    mean = intents_mean(rows, intents)
    expected = rows[0] * len(intents[0]) + rows[1] * len(intents[1])
    assert mean[0] == pytest.approx(expected / np.linalg.norm(expected), abs=1e-6)
    alone = ranked.store.nearest_many(mean, limit=100)[0]
    assert [h.id for h in legs.whole] == [h.id for h in alone]
