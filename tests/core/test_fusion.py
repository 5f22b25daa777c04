import pytest

from toolscout.models import Scored
from toolscout.search.fusion import best_of_intents, fuse_rrf, fuse_scores, spread_intents


def test_rrf_scores_are_normalised_and_ties_break_by_id() -> None:
    a = [Scored("b", 9.0), Scored("a", 5.0)]
    b = [Scored("a", 0.9), Scored("b", 0.8)]
    fused = fuse_rrf([a, b], k=60)
    assert [h.id for h in fused] == ["a", "b"]  # equal RRF sums: id order decides
    assert fused[0].score == pytest.approx(fused[1].score)
    assert 0 < fused[0].score <= 1


def test_rrf_weights_shift_the_ranking() -> None:
    a = [Scored("x", 1.0), Scored("y", 0.5)]
    b = [Scored("y", 1.0), Scored("x", 0.5)]
    assert fuse_rrf([a, b], weights=[3, 1])[0].id == "x"
    assert fuse_rrf([a, b], weights=[1, 3])[0].id == "y"


def test_top_of_every_leg_scores_one() -> None:
    a = [Scored("x", 7.0)]
    assert fuse_rrf([a, a])[0].score == pytest.approx(1.0)
    assert fuse_scores([a, a], weights=[1, 2])[0].score == pytest.approx(1.0)


def test_score_fusion_keeps_margins() -> None:
    lexical = [Scored("clear", 20.0), Scored("weak", 2.0)]
    vector = [Scored("weak", 0.50), Scored("clear", 0.49)]
    fused = fuse_scores([lexical, vector], weights=[1, 1])
    assert fused[0].id == "clear"
    assert all(0 <= h.score <= 1 for h in fused)


def test_weights_must_match_runs() -> None:
    with pytest.raises(ValueError):
        fuse_rrf([[Scored("a", 1)]], weights=[1, 2])
    with pytest.raises(ValueError):
        fuse_scores([[Scored("a", 1)]], weights=[0])


def test_no_intent_fills_the_first_places_alone() -> None:
    fused = [Scored(i, 1.0 - n / 10) for n, i in enumerate(["c1", "c2", "c3", "c4", "e1", "x"])]
    owner = {"c1": 0, "c2": 0, "c3": 0, "c4": 0, "e1": 1}
    spread = [h.id for h in spread_intents(fused, owner, intents=2, limit=4)]
    assert spread[:4] == ["c1", "c2", "e1", "x"]  # x belongs to no intent: it never waits
    assert spread[4:] == ["c3", "c4"]


def test_a_single_intent_keeps_the_fused_order() -> None:
    fused = [Scored("a", 0.9), Scored("b", 0.8)]
    assert spread_intents(fused, {"a": 0, "b": 0}, intents=1, limit=1) == fused


def test_best_of_intents_keeps_each_tools_best_and_breaks_ties_by_id() -> None:
    runs = [
        [Scored("c", 0.5), Scored("b", 0.5), Scored("z", 0.0)],
        [Scored("a", 0.5), Scored("c", 0.7), Scored("y", -0.0)],
    ]
    best = best_of_intents(runs, 4)
    assert [(h.id, h.score) for h in best] == [("c", 0.7), ("a", 0.5), ("b", 0.5), ("y", 0.0)]
    assert best_of_intents(runs, 10)[-1] == Scored("z", 0.0)  # 0.0 and -0.0 tie: id order


def test_score_fusion_breaks_equal_scores_by_id_whatever_the_leg_order() -> None:
    lexical = [Scored("m", 2.0), Scored("k", 1.0), Scored("d", 1.0)]
    vector = [Scored("q", 0.9), Scored("d", 0.0), Scored("k", 0.0)]
    fused = fuse_scores([lexical, vector], weights=[1.0, 1.0])
    assert [h.id for h in fused] == ["m", "q", "d", "k"]
    assert fused[0].score == fused[1].score and fused[2].score == fused[3].score
