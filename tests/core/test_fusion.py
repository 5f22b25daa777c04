import pytest

from toolscout.models import Scored
from toolscout.search.fusion import fuse_rrf, fuse_scores


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
