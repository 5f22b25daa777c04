"""Calibrated scores: the packaged fit, its file format, and the fitting routine."""

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from toolscout.embed.base import Vectors
from toolscout.errors import ConfigError
from toolscout.models import Scored, SearchMode
from toolscout.search.calibration import fit_logistic, load_calibration, scored_hits
from toolscout.search.evidence import MODE_FEATURES, Evidence, RequestEvidence, request_evidence


def _request(cosine: float, gap: float, lexical: float, tools: int = 100) -> RequestEvidence:
    found = request_evidence(
        [Scored("a", lexical * 5.0), Scored("b", lexical * 2.0)],
        [Scored("a", cosine), Scored("b", cosine - gap), Scored("c", cosine - gap - 0.05)],
        tools,
    )
    assert found is not None
    return found


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


def test_a_request_whose_closest_tool_is_closer_is_more_likely_answerable() -> None:
    cal = load_calibration()
    near, far = _request(0.7, 0.1, 1.5), _request(0.25, 0.01, 0.0)
    hit = Evidence(cosine=0.7, standout=0.4, lexical=1.5, relative=1.0)
    for mode in ("hybrid", "vector", "bm25"):
        assert cal.answerable(mode, near) > cal.answerable(mode, far)
        assert cal.probability(mode, hit, cal.answerable(mode, near)) <= cal.probability(mode, hit)


def test_the_request_model_reads_the_features_its_file_names(tmp_path: Path) -> None:
    """A re-fit may choose other request features (bench/fit/calibrate.py tries several): the
    file names them and the engine reads those, here the catalog's size as well."""
    data = load_calibration().to_dict()
    data["models"]["hybrid"]["request"] = {
        "features": ["cosine", "size"],
        "coef": [10.0, -1.0],
        "intercept": -2.0,
    }
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data))
    cal = load_calibration(path)
    assert cal.stale is None
    assert cal.models["hybrid"].request_features == ("cosine", "size")
    small, large = _request(0.45, 0.02, 0.5, 100), _request(0.45, 0.02, 0.5, 5000)
    assert cal.answerable("hybrid", small) > cal.answerable("hybrid", large)
    again = load_calibration(_written(tmp_path / "again.json", cal.to_dict()))
    assert again.answerable("hybrid", small) == pytest.approx(cal.answerable("hybrid", small))


def _written(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("crowd", [1, 2, 7, 100])
def test_a_hits_standout_is_its_cosine_less_numpys_median_of_the_crowd_to_the_bit(
    crowd: int,
) -> None:
    rng = np.random.default_rng(crowd)
    cosines = sorted((float(c) for c in rng.uniform(-0.2, 0.9, crowd + 5)), reverse=True)
    vector = [Scored(f"t{i}", c) for i, c in enumerate(cosines)]
    found = scored_hits(
        load_calibration(), SearchMode.HYBRID, vector[:3], [], vector, tools=1000, crowd=crowd
    )
    median = float(np.median(cosines[:crowd]))
    assert [ev.standout for _, ev in found] == [c - median for c in cosines[:3]]


def test_request_evidence_reads_the_legs_as_they_came_back() -> None:
    ev = request_evidence(
        [Scored("x", 2.0 * math.log(11.0)), Scored("y", math.log(11.0))],
        [Scored("a", 0.6), Scored("b", 0.5), Scored("c", 0.2)],
        10,
    )
    assert ev is not None
    assert (ev.cosine, ev.gap, ev.lead) == pytest.approx((0.6, 0.1, 0.25))
    assert (ev.lexical, ev.lexical_gap, ev.size) == pytest.approx((2.0, 1.0, 1.0))
    assert request_evidence([], [], 10) is None


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
    assert cal.answerable("hybrid", _request(0.05, 0.0, 0.0)) == 1.0
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
