"""The hand-set fusion's scores (``learned_ranker = false``) go through the packaged score map
(search/scoremap.py)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.models import Loaded, Ranked, Tool
from toolscout.search.calibration import Calibration, load_calibration
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.scoremap import Hit, ScoreMap, situation

TOOLS = [
    Tool(id="snow", name="snow_depth", description="Report snowfall depth for ski resorts."),
    Tool(id="rain", name="rain_forecast", description="Forecast rain for a city."),
    Tool(id="wind", name="wind_speed", description="Report the wind speed at an airport."),
    Tool(id="mail", name="send_email", description="Send an email to a recipient."),
    Tool(id="cal", name="create_event", description="Create a calendar event."),
    Tool(id="inv", name="create_invoice", description="Create an invoice for a customer."),
]
REQUESTS = ("snow depth", "will it rain in Oslo", "email my boss", "xyzzy plugh", "weather")


def _without_map(cal: Calibration) -> Calibration:
    return replace(cal, models={m: replace(v, score_map=None) for m, v in cal.models.items()})


def _search(engine: Engine, cal: Calibration, query: str) -> tuple[list[Ranked], bool]:
    searcher = HybridSearcher(engine.store, engine.embedder, engine.searcher.config, cal)
    try:
        ranked = searcher.search(query, limit=5)
        return ranked, searcher.no_match(ranked)
    finally:
        searcher.close()


@pytest.fixture
def indexed(settings: Settings) -> Engine:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": False}))
    engine.index([Loaded("test", TOOLS)])
    return engine


def test_the_packaged_default_carries_a_score_map() -> None:
    assert isinstance(load_calibration().models["hybrid"].score_map, ScoreMap)


def test_a_clear_match_scores_high_on_the_fusions_path(indexed: Engine) -> None:
    assert indexed.searcher.ranker is None
    hit = indexed.search("snow depth", limit=3).hits[0]
    indexed.close()
    assert hit.tool.id == "snow" and hit.score >= 0.5


def test_the_map_keeps_the_order_answerable_and_no_match(indexed: Engine) -> None:
    packaged = load_calibration()
    bare = _without_map(packaged)
    changed = False
    try:
        for query in REQUESTS:
            mapped, flagged = _search(indexed, packaged, query)
            product, flagged_bare = _search(indexed, bare, query)
            scores = [r.score for r in mapped]
            assert scores == sorted(scores, reverse=True), query
            assert all(0.0 <= s <= 1.0 for s in scores), query
            assert [r.id for r in mapped] == [r.id for r in product], query
            assert [r.answerable for r in mapped] == [r.answerable for r in product], query
            assert flagged == flagged_bare, query
            changed |= scores != [r.score for r in product]
    finally:
        indexed.close()
    assert changed, "the map changed no score"


def test_a_score_map_survives_a_round_trip(tmp_path: Path) -> None:
    packaged = load_calibration()
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(packaged.to_dict()), encoding="utf-8")
    assert load_calibration(path).models["hybrid"].score_map == packaged.models["hybrid"].score_map


def test_the_map_scores_as_stage_one_over_the_fits_rows_then_its_band() -> None:
    """The search sums the request's terms once; the fit reads :func:`situation`'s rows."""
    score_map = load_calibration().models["hybrid"].score_map
    assert score_map is not None
    hits = [Hit(0.3 * 0.8**i, 1 - 0.07 * i, 0.62 - 0.012 * i) for i in range(10)]
    cosines = [0.62 - 0.004 * i for i in range(40)]
    plain = replace(score_map, bands=())
    for place, row in enumerate(situation(plain.inputs, hits, 0.4, cosines)):
        z = plain.intercept + sum(c * v for c, v in zip(plain.coef, row, strict=True))
        assert plain.scores(hits, 0.4, cosines)[place] == pytest.approx(1 / (1 + math.exp(-z)))
    mapped = score_map.scores(hits, 0.4, cosines)
    assert all(0.0 <= s <= 1.0 for s in mapped) and mapped != plain.scores(hits, 0.4, cosines)
