"""The pure metrics every benchmark and ``toolscout eval`` report."""

from __future__ import annotations

import pytest

from toolscout.eval.metrics import hit_at, ndcg_at, sign_test


def test_hit_and_ndcg_see_the_gold_tool_where_it_is_ranked() -> None:
    ranked = ["a", "b", "c", "d"]
    assert hit_at(ranked, {"c"}, 3) == 1.0 and hit_at(ranked, {"d"}, 3) == 0.0
    assert ndcg_at(ranked, {"a"}, 10) == pytest.approx(1.0)
    assert ndcg_at(ranked, {"b"}, 10) < 1.0


def test_the_sign_test_counts_wins_and_losses_and_drops_ties() -> None:
    won, lost, p = sign_test([1, 1, 1, 0, 1], [0, 0, 0, 0, 1])
    assert (won, lost) == (3, 0)
    assert p == pytest.approx(0.25)  # two-sided: 2 * (1/2)^3
    assert sign_test([1, 0], [1, 0]) == (0, 0, 1.0)
