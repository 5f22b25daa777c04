"""``SearchConfig.whole_row`` (off by default): with the hand-set fusion, the vector leg of a
request of several intents also reads the whole request's row (the intents' rows averaged, no
embedding) and a tool keeps its best cosine over that row and the intents' rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.models import Loaded, SearchMode, Tool
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.queryrows import intents_mean

TWO_PARTS = "book a meeting with Ana on Friday and email her the agenda"

TOOLS = Loaded(
    "tests",
    [
        Tool("cal.create_event", "create_event", "Create a calendar event with attendees"),
        Tool("mail.send_email", "send_email", "Send an email to a recipient"),
        Tool("cal.invite", "send_invite", "Email a meeting invitation and its agenda to people"),
        Tool("files.read_file", "read_file", "Read a file from the local disk"),
        Tool("weather.forecast", "get_forecast", "Get the weather forecast for a city"),
    ],
)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": False}))
    engine.index([TOOLS])
    yield engine
    engine.close()


def _best(runs: list[list[tuple[str, float]]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for run in runs:
        for tid, score in run:
            best[tid] = max(best.get(tid, -2.0), score)
    return best


def test_a_tool_keeps_its_best_cosine_over_the_intents_and_the_whole_request(
    engine: Engine,
) -> None:
    plain = engine.searcher
    assert not plain.config.whole_row
    whole = HybridSearcher(engine.store, engine.embedder, replace(plain.config, whole_row=True))
    intents = plain.intents(TWO_PARTS)
    assert len(intents) == 2
    rows = engine.embedder.embed_query(intents)
    mean = intents_mean(rows, intents)
    runs = engine.store.nearest_many(np.vstack([rows, mean]), limit=5)
    as_pairs = [[(h.id, h.score) for h in run] for run in runs]
    by_intents, with_whole = _best(as_pairs[:2]), _best(as_pairs)
    # The catalog holds a tool closer to the whole request than to either part.
    assert any(with_whole[t] > by_intents[t] + 1e-4 for t in with_whole)

    def cosines(searcher: HybridSearcher) -> dict[str, float]:
        found = searcher.search_evidence(TWO_PARTS, mode=SearchMode.VECTOR, limit=5)
        return {r.id: float(ev.cosine or 0.0) for r, ev in found}

    assert cosines(whole) == pytest.approx(with_whole, abs=1e-5)
    assert cosines(plain) == pytest.approx(by_intents, abs=1e-5)
    plain.close()
    whole.close()


def test_a_request_of_one_intent_gets_the_same_answer_either_way(engine: Engine) -> None:
    plain = engine.searcher
    whole = HybridSearcher(engine.store, engine.embedder, replace(plain.config, whole_row=True))
    query = "send an email to Ana"
    assert len(plain.intents(query)) == 1
    assert whole.search(query, limit=5) == plain.search(query, limit=5)
    whole.close()
