"""Calibrated scores: the packaged fit, its file format, and the fitting routine."""

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from toolscout.embed.base import Vectors
from toolscout.errors import ConfigError
from toolscout.search.calibration import (
    MODE_FEATURES,
    Evidence,
    fit_logistic,
    load_calibration,
)


def test_the_packaged_calibration_covers_every_search_mode() -> None:
    cal = load_calibration()
    assert set(cal.models) == set(MODE_FEATURES)
    for mode, model in cal.models.items():
        assert len(model.coef) == len(MODE_FEATURES[mode])
        assert 0.0 < model.no_match_below < 1.0


def test_a_closer_tool_is_more_likely_to_fit() -> None:
    cal = load_calibration()
    near = Evidence(cosine=0.7, standout=0.5, lexical=2.0, relative=1.0)
    far = Evidence(cosine=0.2, standout=0.05, lexical=0.0, relative=1.0)
    assert cal.probability("hybrid", near) > cal.probability("hybrid", far)
    assert cal.probability("vector", near) > cal.probability("vector", far)
    assert cal.probability("bm25", near) > cal.probability("bm25", far)


def test_a_request_whose_best_hit_is_closer_is_more_likely_answerable() -> None:
    cal = load_calibration()
    near = Evidence(cosine=0.7, standout=0.4, lexical=1.5, relative=1.0)
    far = Evidence(cosine=0.25, standout=0.1, lexical=0.0, relative=1.0)
    for mode in ("hybrid", "vector"):
        assert cal.answerable(mode, near) > cal.answerable(mode, far)
        assert cal.probability(mode, near, cal.answerable(mode, near)) <= cal.probability(
            mode, near
        )


def test_a_calibration_with_other_features_is_refused_with_the_fix(tmp_path: Path) -> None:
    data = load_calibration().to_dict()
    data["models"]["hybrid"]["features"] = ["cosine"]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"bench/fit/calibrate\.py"):
        load_calibration(path)


def test_a_request_model_with_other_features_degrades_to_approximate(tmp_path: Path) -> None:
    """A stale request model must not stop the engine (nor bench/fit/calibrate.py, which re-fits
    it): hits keep their own probabilities, answerability is unknown, the status says why."""
    data = load_calibration().to_dict()
    data["models"]["hybrid"]["request"]["features"] = ["cosine", "standout", "lexical"]
    data["models"]["hybrid"]["request"]["coef"] = [5.0, 1.0, 0.1]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data))
    cal = load_calibration(path)
    assert cal.stale and "bench/fit/calibrate.py --write" in cal.stale
    best = Evidence(cosine=0.05, standout=0.0, lexical=0.0, relative=1.0)
    assert cal.answerable("hybrid", best) == 1.0
    assert cal.status(_Named("whatever")).startswith("approximate: the request model for hybrid")


class _Named:
    """An embedder that only has an identity: ``Calibration.status`` reads its name and never
    embeds."""

    dim = 8

    def __init__(self, name: str) -> None:
        self.name = name

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise AssertionError("Calibration.status must not embed")

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        raise AssertionError("Calibration.status must not embed")


def test_a_missing_calibration_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="calibration"):
        load_calibration(tmp_path / "absent.json")


def test_a_calibration_survives_a_round_trip(tmp_path: Path) -> None:
    cal = load_calibration()
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(cal.to_dict()))
    again = load_calibration(path)
    assert (again.fitted_for, again.model_sha256) == (cal.fitted_for, cal.model_sha256)
    ev = Evidence(cosine=0.4, standout=0.2, lexical=1.0, relative=0.8)
    assert again.probability("hybrid", ev) == pytest.approx(cal.probability("hybrid", ev), abs=1e-5)


def test_logistic_fit_recovers_the_direction_that_separates_the_labels() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 2))
    p = 1.0 / (1.0 + np.exp(-(3.0 * x[:, 0] - 1.0)))
    y = (rng.random(2000) < p).astype(np.float64)
    coef, intercept = fit_logistic(x, y)
    assert coef[0] == pytest.approx(3.0, abs=0.5)
    assert abs(coef[1]) < 0.3
    assert intercept == pytest.approx(-1.0, abs=0.3)
