"""The fitted skill constants: one packaged file with the model they were fitted for."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.search.calibration import embedder_identity, load_calibration
from toolscout.search.hierarchical import HierarchicalSearcher
from toolscout.search.skillfit import (
    CLASSIFIER_FEATURES,
    COVERAGE_FEATURES,
    STAGE1_FEATURES,
    load_skill_fit,
    packaged_skill_fit,
)
from toolscout.search.skillstage import coverage_features, matched_count, stage1_features

PACKAGED = Path(__file__).resolve().parents[2] / "src" / "toolscout" / "search" / "calibration.json"


def test_skill_constants_share_the_calibration_file_and_its_model() -> None:
    fit = packaged_skill_fit()
    calibration = load_calibration()
    assert fit.stage1.features == STAGE1_FEATURES
    assert fit.classifier.features == CLASSIFIER_FEATURES
    assert fit.fitted_for == calibration.fitted_for
    assert fit.model_sha256 == calibration.model_sha256
    assert fit.fitted_at and "data/natural" in fit.provenance
    assert 0.0 < fit.keep_floor < 0.5 and fit.near_depth > 0
    assert fit.coverage is not None and fit.coverage.features == COVERAGE_FEATURES
    assert fit.temperature > 0.0


def test_the_packaged_fit_is_for_the_default_model(engine: Engine) -> None:
    assert DEFAULT_MODEL.startswith("local:")
    name, digest = embedder_identity(engine.embedder)
    assert packaged_skill_fit().status(engine.embedder) == "fitted", (name, digest)
    assert engine.search_service.hierarchical.stage1.fit_status == "fitted"


def test_constants_of_another_model_get_one_warning_naming_the_catalog_fit(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    other = replace(packaged_skill_fit(), fitted_for="some-other-model")
    with caplog.at_level(logging.WARNING, logger="toolscout.skills"):
        first = HierarchicalSearcher(engine.store, engine.searcher, fit=other)
        HierarchicalSearcher(engine.store, engine.searcher, fit=other)
    assert first.stage1.fit_status.startswith("approximate: fitted for some-other-model")
    warnings = [r for r in caplog.records if "skill scores are approximate" in r.getMessage()]
    assert len(warnings) == 1
    assert "fitted on this catalog" in warnings[0].getMessage()
    assert first.stage1.fit is other  # given constants stay in use


def test_a_file_without_a_skills_section_names_the_refit(tmp_path: Path) -> None:
    data = json.loads(PACKAGED.read_text(encoding="utf-8"))
    del data["skills"]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bench/fit/skill_scores\.py --write"):
        load_skill_fit(path)


def test_a_fit_of_other_features_is_refused_naming_them(tmp_path: Path) -> None:
    data = json.loads(PACKAGED.read_text(encoding="utf-8"))
    data["skills"]["stage1"]["features"] = ["sim", "margin"]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"skills\.stage1 uses features \['sim', 'margin'\]"):
        load_skill_fit(path)


def test_a_skill_holding_the_nearest_tool_scores_above_an_equally_close_one() -> None:
    sims = np.array([0.5, 0.5, 0.2], dtype=np.float32)
    neighbours = [("t1", 0.8), ("t2", 0.6), ("t3", 0.4)]
    members = {"t1": [("a", 0.9)], "t2": [("b", 0.9)], "t3": [("b", 0.5)]}
    features = stage1_features(sims, neighbours, members, {"a": 0, "b": 1, "c": 2})
    assert features.shape == (3, len(STAGE1_FEATURES))
    near, gap, votes = features[:, 2], features[:, 3], features[:, 4]
    assert list(near) == pytest.approx([0.8, 0.6, 0.4])  # c has no neighbour: the last cosine
    assert gap[0] == 0.0 and gap[1] < 0.0
    assert votes[0] == pytest.approx(0.9) and votes[1] == pytest.approx(0.45 + 0.5 / 3)
    scores = packaged_skill_fit().stage1(features)
    assert scores[0] > scores[1] > scores[2]


def test_a_file_without_a_coverage_model_never_stops_early(tmp_path: Path) -> None:
    data = json.loads(PACKAGED.read_text(encoding="utf-8"))
    del data["skills"]["coverage"]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    fit = load_skill_fit(path)
    assert fit.coverage is None
    ranked = np.array([0.9, 0.8, 0.5, 0.3])
    assert matched_count(ranked, None, limit=3, threshold=0.4, coverage=0.5) == 3


def test_coverage_counts_each_near_tool_from_the_first_skill_that_holds_it() -> None:
    scores = np.array([0.2, 0.9, 0.6])
    order = np.array([1, 2, 0])  # b, c, a
    neighbours = [("t1", 0.8), ("t2", 0.8), ("t3", 0.1)]
    members = {"t1": [("a", 0.9), ("c", 0.3)], "t2": [("b", 0.9)], "t3": [("a", 0.5)]}
    rows = coverage_features(scores, order, neighbours, members, {"a": 0, "b": 1, "c": 2}, 0.05)
    assert rows.shape == (3, len(COVERAGE_FEATURES))
    share, following, mass, log_k, top = rows.T
    assert list(share) == pytest.approx([0.9 / 1.7, 1.5 / 1.7, 1.0])
    assert list(following) == pytest.approx([0.6, 0.2, 0.0])
    # t2 enters with b, t1 with c (its first skill in score order), t3 (far: ~0) with a.
    assert mass[0] == pytest.approx(0.5, abs=1e-6) and mass[1] == pytest.approx(1.0, abs=1e-6)
    assert mass[2] == pytest.approx(1.0)
    assert list(log_k) == pytest.approx([0.0, np.log(2), np.log(3)])
    assert list(top) == pytest.approx([0.8, 0.8, 0.8])
    fit = packaged_skill_fit()
    assert fit.coverage is not None
    covered = fit.coverage(rows)
    assert covered[0] < covered[1] <= covered[2]


def test_a_request_close_to_no_tool_needs_more_skills_for_the_same_coverage() -> None:
    # The same skills, scores and neighbours' skills; only how close the nearest tools are
    # differs. A request far from every tool (a short, conversational one) is less surely
    # held by its first skills, so stage 1 goes on to further skills.
    scores = np.array([0.9, 0.6, 0.3, 0.2])
    order = np.array([0, 1, 2, 3])
    members = {"t1": [("a", 0.9)], "t2": [("a", 0.8)], "t3": [("b", 0.7)]}
    position = {"a": 0, "b": 1, "c": 2, "d": 3}
    fit = packaged_skill_fit()
    model = fit.coverage
    assert model is not None

    def needed(shift: float) -> int:
        near = [("t1", 0.8 - shift), ("t2", 0.78 - shift), ("t3", 0.7 - shift)]
        rows = coverage_features(scores, order, near, members, position, fit.temperature)
        return matched_count(scores, model(rows), limit=4, threshold=0.1, coverage=0.99)

    close, far = needed(0.0), needed(0.4)
    assert 1 <= close < far


def test_matched_count_stops_at_the_first_prefix_reaching_the_coverage() -> None:
    ranked = np.array([0.95, 0.9, 0.7, 0.5, 0.3])
    covered = np.array([0.6, 0.85, 0.97, 0.99, 0.995])
    assert matched_count(ranked, covered, limit=5, threshold=0.4, coverage=0.95) == 3
    assert matched_count(ranked, covered, limit=2, threshold=0.4, coverage=0.95) == 2
    assert matched_count(ranked, covered, limit=5, threshold=0.8, coverage=0.95) == 2
    assert matched_count(ranked, covered, limit=5, threshold=0.4, coverage=1.0) == 4
    assert matched_count(ranked, covered, limit=5, threshold=0.96, coverage=0.5) == 0
