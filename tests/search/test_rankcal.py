"""The learned ranker's score map: fitted for the packaged ranker, monotone, never re-ordering."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.models import Loaded, Tool
from toolscout.search.rank import FEATURES, META_FILE, MODEL_FILE, REQUEST_COLUMNS, load_ranker
from toolscout.search.rankcal import (
    CALIBRATION_FILE,
    COSINE_MARGIN,
    CROWD_MARGIN,
    DERIVED,
    Band,
    RankCalibration,
    design,
    load_rank_calibration,
)


def _packaged() -> Path:
    return Path(str(resources.files("toolscout.search").joinpath(MODEL_FILE))).parent


def _copy(tmp_path: Path) -> Path:
    for name in (MODEL_FILE, META_FILE, CALIBRATION_FILE):
        shutil.copy(_packaged() / name, tmp_path / name)
    return tmp_path


def _packaged_sha256() -> str:
    text = resources.files("toolscout.search").joinpath(MODEL_FILE).read_bytes()
    return hashlib.sha256(text).hexdigest()


def test_the_packaged_map_is_fitted_for_the_packaged_ranker() -> None:
    ranker = load_ranker()
    assert ranker.calibration_status == "fitted", ranker.calibration_status
    # The fit script chooses on the dev sets whether isotonic bands follow the logistic stage.
    assert ranker.rankcal is not None and ranker.rankcal.ranker_sha256 == _packaged_sha256()


def test_every_band_maps_a_higher_output_to_an_equal_or_higher_probability() -> None:
    cal = load_ranker().rankcal
    assert cal is not None
    for band in cal.bands:
        assert np.all(np.diff(band.x) >= 0) and np.all(np.diff(band.y) >= 0)
        assert min(band.y) >= 0.0 and max(band.y) <= 1.0


def test_a_map_fitted_for_another_ranker_is_not_used(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    data = json.loads((folder / CALIBRATION_FILE).read_text("utf-8"))
    data["ranker_sha256"] = "0" * 64
    (folder / CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")
    ranker = load_ranker(folder)
    assert ranker.rankcal is None
    assert "ranker_calibration.py --write" in ranker.calibration_status
    # The ranker's own logistic map scores instead: still probabilities.
    p = ranker.probabilities(np.array([1.0, 0.0]), np.zeros((2, len(FEATURES))))
    assert np.all((p > 0) & (p < 1)) and p[0] > p[1]


def test_without_a_map_file_the_ranker_says_so(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / CALIBRATION_FILE).unlink()
    assert load_ranker(folder).calibration_status == f"no {CALIBRATION_FILE}"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"inputs": ["raw", "no_such_feature"], "coef": [1.0, 1.0]}, "no_such_feature"),
        ({"coef": [1.0]}, "weights"),
        ({"bands": [{"start": 0, "x": [0.5, 0.1], "y": [0.1, 0.2]}]}, "knots"),
        ({"intercept": "high"}, "malformed"),
    ],
)
def test_a_malformed_map_is_refused_with_the_refit_command(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    folder = _copy(tmp_path)
    data = json.loads((folder / CALIBRATION_FILE).read_text("utf-8"))
    data.update(change)
    (folder / CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_rank_calibration(data["ranker_sha256"], FEATURES, folder)


def test_each_band_reads_its_own_places() -> None:
    # Stage 1 is the raw output's logistic; the first place maps to 0.9, every later one to 0.2.
    bands = (Band(0, (0.0, 1.0), (0.9, 0.9)), Band(1, (0.0, 1.0), (0.2, 0.2)))
    cal = RankCalibration(("raw",), (1.0,), 0.0, bands, "")
    p = cal.probabilities(np.array([0.0, 3.0, 1.0]), np.zeros((3, 1)), ("cosine",))
    assert p.tolist() == [0.2, 0.9, 0.2]


@pytest.mark.parametrize("candidates", [1, 2, 7, 100])
def test_the_folded_map_is_the_logistic_of_every_input(candidates: int) -> None:
    # A search computes stage 1 from weights folded per ranker; the fit script from the design
    # matrix of every input. They must agree (to rounding), whatever the candidates.
    ranker = load_ranker()
    assert ranker.rankcal is not None
    plain = replace(ranker.rankcal, bands=())
    rng = np.random.default_rng(candidates)
    for _ in range(20):
        x = rng.uniform(-1.0, 3.0, size=(candidates, len(FEATURES)))
        x[:, :REQUEST_COLUMNS] = x[0, :REQUEST_COLUMNS]
        # Ties in the ranker's output, as its trees give near-identical candidates.
        x[candidates // 2 :] = x[candidates // 2]
        raw = ranker.scores(x, REQUEST_COLUMNS)
        folded = plain.probabilities(raw, x, FEATURES)
        order = np.argsort(-raw, kind="stable")
        assert folded == pytest.approx(plain.logistic(raw, x, FEATURES), abs=1e-12, rel=0)
        assert plain.probabilities(raw, x, FEATURES, order).tolist() == folded.tolist()
        # A search's rows are a transposed view: the same probabilities to the bit.
        assert plain.probabilities(raw, np.asfortranarray(x), FEATURES).tolist() == folded.tolist()


def _situation(raw: list[float], cosine: list[float]) -> dict[str, list[float]]:
    """The derived inputs of one request's candidates, by name."""
    x = np.zeros((len(raw), len(FEATURES)))
    x[:, FEATURES.index("cosine")] = cosine
    x[0, FEATURES.index("vector_rank")] = x[0, FEATURES.index("lexical_rank")] = np.log(2.0)
    rows = design(DERIVED, np.array(raw), x, FEATURES)
    return {name: rows[:, j].tolist() for j, name in enumerate(DERIVED)}


def test_the_situation_inputs_describe_how_crowded_the_top_is() -> None:
    # Two near-ties at the top (within the margins), a third far behind.
    raw = [3.0, 3.0 - CROWD_MARGIN / 2, 0.0]
    got = _situation(raw, [0.8, 0.8 - COSINE_MARGIN / 2, 0.3])
    assert got["crowd"] == got["cosine_crowd"] == [pytest.approx(np.log(2.0))] * 3
    assert got["gap_next"] == pytest.approx([CROWD_MARGIN / 2, 3.0 - CROWD_MARGIN / 2, 0.0])
    assert got["share"][0] > got["share"][1] > got["share"][2]
    assert sum(got["share"]) == pytest.approx(1.0)
    assert got["entropy"][0] > 0.5  # two of three nearly equal
    assert got["legs_agree"] == [1.0] * 3  # both legs put the first candidate first
    assert got["cosine_spread"][0] == pytest.approx(0.8 - np.median([0.8 - COSINE_MARGIN / 2, 0.3]))
    # The same candidates in another order: the same inputs, row for row.
    again = _situation(raw[::-1], [0.3, 0.8 - COSINE_MARGIN / 2, 0.8])
    assert again["share"] == pytest.approx(got["share"][::-1]) and again["crowd"] == got["crowd"]


def test_a_lone_candidate_has_no_crowd_and_holds_the_whole_softmax() -> None:
    got = _situation([1.5], [0.6])
    assert got["crowd"] == [0.0] and got["cosine_crowd"] == [0.0] and got["entropy"] == [0.0]
    assert got["share"] == [1.0] and got["cosine_spread"] == [pytest.approx(0.6)]


def test_a_map_reading_the_legs_agreement_needs_the_legs_ranks(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    data = json.loads((folder / CALIBRATION_FILE).read_text("utf-8"))
    data.update({"inputs": ["raw", "legs_agree"], "coef": [1.0, 1.0]})
    (folder / CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="lexical_rank"):
        load_rank_calibration(data["ranker_sha256"], ("cosine", "vector_rank"), folder)


SNOW = Tool(id="snow", name="snow_depth", description="Report snowfall depth for ski resorts.")


def test_scores_never_rise_down_the_list(settings: Settings) -> None:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": True}))
    others = [
        Tool(id=f"t{i}", name=f"{word}_report", description=f"Report the {word} of a place.")
        for i, word in enumerate(["snow", "rain", "wind", "sun", "fog", "hail", "frost", "tide"])
    ]
    engine.index([Loaded("test", [SNOW, *others])])
    hits = engine.search("how much snow fell at the resort", limit=8).hits
    engine.close()
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
