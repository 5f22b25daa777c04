"""The learned ranker: its model file is read exactly and checked at load."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

from support.rank_reference import read_trees, walk
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.models import Loaded, Scored, Tool
from toolscout.search.forest import parse_lightgbm
from toolscout.search.rank import (
    FEATURES,
    META_FILE,
    MODEL_FILE,
    REQUEST_COLUMNS,
    Legs,
    copied_columns,
    load_ranker,
)

#: The whole request's columns and the vector leg's they repeat for a request of one intent.
WHOLE_COPIES = tuple(
    (FEATURES.index(f"whole_{whole}"), FEATURES.index(vector))
    for whole, vector in [
        ("cosine", "cosine"),
        ("gap", "cosine_gap"),
        ("z", "cosine_z"),
        ("rank", "vector_rank"),
    ]
)

#: Two trees as LightGBM 4 writes them (a binary model fitted on three random columns).
TWO_TREES = """tree
version=v4
num_class=1
max_feature_idx=2

Tree=0
num_leaves=3
num_cat=0
split_feature=0 1
threshold=0.10571194710753465 1.3865725424221027
decision_type=2 2
left_child=1 -1
right_child=-2 -3
leaf_value=-0.26220593453628066 0.060317535499104777 0.048750155883054827
shrinkage=1


Tree=1
num_leaves=1
num_cat=0
split_feature=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.25
shrinkage=1


end of trees
"""


def _packaged() -> Path:
    return Path(str(resources.files("toolscout.search").joinpath(MODEL_FILE))).parent


def test_trees_are_walked_as_lightgbm_walks_them() -> None:
    trees = parse_lightgbm(TWO_TREES)
    x = np.array([[0.0, 0.0, 9.0], [0.0, 2.0, 9.0], [0.5, -4.0, 9.0]])
    # Row 0: x0 <= t0 and x1 <= t1 -> leaf 0; row 1: x1 > t1 -> leaf 2; row 2: x0 > t0 -> leaf 1.
    expected = np.array([-0.26220593453628066, 0.048750155883054827, 0.060317535499104777]) + 0.25
    assert np.allclose(trees.predict(x), expected)


def test_packaged_ranker_matches_lightgbm_on_random_rows() -> None:
    text = (_packaged() / MODEL_FILE).read_text("utf-8")
    booster = lgb.Booster(model_str=text)
    x = np.random.default_rng(3).normal(size=(200, len(FEATURES)))
    assert np.allclose(load_ranker().scores(x), booster.predict(x), atol=1e-9)


def test_the_packaged_files_are_what_their_refit_command_writes() -> None:
    """The refit command ``ranker.json`` records writes a model of its fixed rounds, recorded
    in LightGBM's parameters trailer too, and the score map beside it names that file: a file
    from another command (early stopping past those rounds, another count) fails here."""
    meta = json.loads((_packaged() / META_FILE).read_text("utf-8"))
    text = (_packaged() / MODEL_FILE).read_text("utf-8")
    rounds = meta["rounds"]
    assert f"--fixed-rounds {rounds} " in meta["provenance"]
    assert load_ranker().trees.size == rounds
    assert f"[num_iterations: {rounds}]" in text
    rankcal = json.loads((_packaged() / "rankcal.json").read_text("utf-8"))
    assert rankcal["ranker_sha256"] == meta["sha256"]


def test_values_on_a_split_threshold_and_zeros_go_where_lightgbm_sends_them() -> None:
    text = (_packaged() / MODEL_FILE).read_text("utf-8")
    forest = parse_lightgbm(text)
    x = np.random.default_rng(5).normal(size=(len(forest.features) * 3, len(FEATURES)))
    x[::4] = 0.0
    for j, (feature, cuts) in enumerate(zip(forest.features, forest.thresholds, strict=True)):
        # LightGBM reads |x| <= 1e-35 as 0 (its zero bin's edge); no feature takes such values.
        cuts = cuts[np.abs(cuts) > 1e-30]
        x[3 * j : 3 * j + 3, feature] = cuts[[0, cuts.size // 2, -1]]
    assert np.allclose(forest.predict(x), lgb.Booster(model_str=text).predict(x), atol=1e-9)


def test_copied_columns_searched_once_find_the_leaves_a_walk_finds() -> None:
    """Rows whose whole-request columns repeat the vector leg's (a request of one intent) give
    the same sums to the bit when each pair is searched once in both features' splits merged:
    values on every split threshold of either feature, and just above each, included."""
    ranker = load_ranker()
    forest = ranker.trees
    x = np.random.default_rng(11).normal(size=(800, len(FEATURES)))
    x[:, :REQUEST_COLUMNS] = x[0, :REQUEST_COLUMNS]
    for copy, original in WHOLE_COPIES:
        splits = [forest.thresholds[forest.features.index(f)] for f in (copy, original)]
        cuts = np.concatenate(splits)
        x[: cuts.size, original] = cuts
        x[400 : 400 + cuts.size, original] = np.nextafter(cuts, np.inf)
        x[:, copy] = x[:, original]
    one_intent = [Scored("a", 0.5)]
    copies = copied_columns(Legs((), one_intent, one_intent, 1, 1, one_intent))
    assert sorted(copies) == sorted(WHOLE_COPIES)
    assert copied_columns(Legs((), one_intent, one_intent, 2, 1, [Scored("b", 0.5)])) == ()
    want = walk(read_trees((_packaged() / MODEL_FILE).read_text("utf-8")), x)
    assert ranker.scores(x, REQUEST_COLUMNS, copies).tobytes() == want.tobytes()


def test_an_altered_model_file_is_refused(tmp_path: Path) -> None:
    for name in (MODEL_FILE, META_FILE):
        shutil.copy(_packaged() / name, tmp_path / name)
    with (tmp_path / MODEL_FILE).open("a", encoding="utf-8") as fh:
        fh.write("\n")
    with pytest.raises(ConfigError, match="sha256"):
        load_ranker(tmp_path)


def test_a_ranker_for_other_features_is_refused(tmp_path: Path) -> None:
    shutil.copy(_packaged() / MODEL_FILE, tmp_path / MODEL_FILE)
    meta = json.loads((_packaged() / META_FILE).read_text("utf-8"))
    meta["features"] = ["cosine"]
    (tmp_path / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ConfigError, match="refit"):
        load_ranker(tmp_path)


def test_probabilities_fall_with_the_ranker_score() -> None:
    ranker = load_ranker()
    x = np.zeros((3, len(FEATURES)))
    p = ranker.probabilities(np.array([2.0, 0.5, -1.0]), x)
    # The isotonic stage may map neighbouring outputs to one value, never a lower one higher.
    assert np.all(np.diff(p) <= 0) and p[0] > p[-1] and np.all((p > 0) & (p < 1))


def test_a_calibration_for_other_inputs_is_refused(tmp_path: Path) -> None:
    shutil.copy(_packaged() / MODEL_FILE, tmp_path / MODEL_FILE)
    meta = json.loads((_packaged() / META_FILE).read_text("utf-8"))
    meta["calibration"]["inputs"] = ["raw"]
    (tmp_path / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ConfigError, match="calibration"):
        load_ranker(tmp_path)


SNOW = Tool(id="snow", name="snow_depth", description="Report snowfall depth for ski resorts.")


def _snow_score(settings: Settings, others: list[Tool]) -> tuple[str, float]:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": True}))
    assert engine.searcher.ranker is not None
    engine.index([Loaded("test", [SNOW, *others])])
    hit = engine.search("snow depth", limit=3).hits[0]
    engine.close()
    return hit.tool.id, hit.score


def test_a_clear_match_in_a_one_tool_catalog_scores_high(settings: Settings) -> None:
    tid, score = _snow_score(settings, [])
    assert tid == "snow" and score >= 0.5


def test_a_clear_match_keeps_its_score_as_the_catalog_grows(settings: Settings) -> None:
    """The same request and tool alone and among 10 and 50 unrelated tools: the probability
    that the tool is right does not collapse with the catalog's size."""
    others = [
        Tool(id=f"t{i}", name=f"{verb}_{noun}_{i}", description=f"{verb.title()} the {noun} {i}.")
        for i, (verb, noun) in enumerate(
            (v, n)
            for v in ("create", "delete", "list", "update", "archive")
            for n in (
                "invoice",
                "ticket",
                "repository",
                "calendar event",
                "customer",
                "playlist",
                "shipment",
                "database table",
                "pull request",
                "contact",
            )
        )
    ]
    alone = _snow_score(settings, [])
    assert alone[0] == "snow"
    for size in (10, 50):
        tid, score = _snow_score(settings, others[:size])
        assert tid == "snow" and score >= 0.5 and score >= alone[1] - 0.3


def test_learned_order_ranks_the_named_tool_first(settings: Settings) -> None:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": True}))
    assert engine.searcher.ranker is not None
    tools = [
        Tool(id="snow", name="snow_depth", description="Report snowfall depth for ski resorts."),
        Tool(id="rain", name="rain_forecast", description="Forecast rain for a city."),
        Tool(id="mail", name="send_email", description="Send an email to a recipient."),
    ]
    engine.index([Loaded("test", tools)])
    result = engine.search("how deep is the snow at the ski resort", limit=3)
    assert result.hits[0].tool.id == "snow"
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    engine.close()


def test_the_ranker_is_on_by_default(engine: Engine) -> None:
    assert engine.searcher.config.learned_ranker is True and engine.searcher.ranker is not None


def test_the_ranker_is_off_when_asked(settings: Settings) -> None:
    engine = Engine.open(settings.model_copy(update={"learned_ranker": False}))
    assert engine.searcher.ranker is None
    engine.close()
