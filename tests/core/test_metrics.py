import pytest

from toolscout.eval.metrics import (
    calibration_error,
    complete_at,
    hit_at,
    ndcg_at,
    percentile,
    recall_at,
    reliability,
    sampling_floor,
    sign_test,
)


def test_metrics_follow_the_shared_definitions() -> None:
    ranked = ["a", "x", "b", "y"]
    gold = {"a", "b", "c"}
    assert recall_at(ranked, gold, 3) == pytest.approx(2 / 3)
    assert hit_at(ranked, gold, 1) == 1.0
    assert hit_at(["x"], gold, 1) == 0.0
    assert complete_at(ranked, {"a", "b"}, 3) == 1.0
    assert complete_at(ranked, {"a", "b"}, 2) == 0.0
    ideal = 1 + 1 / 1.5849625007211563 + 0.5
    assert ndcg_at(ranked, gold, 3) == pytest.approx((1 + 0.5) / ideal)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile(list(map(float, range(1, 101))), 95) == 95.0


def test_the_sign_test_counts_wins_and_losses_and_drops_ties() -> None:
    won, lost, p = sign_test([1, 1, 1, 0, 1], [0, 0, 0, 0, 1])
    assert (won, lost) == (3, 0)
    assert p == pytest.approx(0.25)  # two-sided: 2 * (1/2)^3
    assert sign_test([1, 0], [1, 0]) == (0, 0, 1.0)


def test_reliability_bins_hits_by_score_and_counts_the_share_right() -> None:
    pairs = [(0.05, False), (0.15, True), (0.12, False), (0.95, True), (1.0, True)]
    bins = reliability(pairs)
    assert [(lo, n) for lo, _, _, n in bins] == [(0.0, 1), (0.1, 2), (0.9, 2)]
    assert bins[1][1] == pytest.approx(0.135) and bins[1][2] == 0.5
    # ECE: |0.05 - 0| * 1 + |0.135 - 0.5| * 2 + |0.975 - 1| * 2, over 5 hits.
    assert calibration_error(pairs) == pytest.approx((0.05 + 0.73 + 0.05) / 5)
    assert calibration_error([]) == 0.0


def test_the_sampling_floor_is_what_exact_probabilities_show_on_a_set_of_that_size() -> None:
    # Certain scores are always right or always wrong: nothing to sample, no floor.
    assert sampling_floor([1.0] * 50 + [0.0] * 50) == 0.0
    assert sampling_floor([]) == 0.0
    # Coin flips scored 0.5: 60 of them show an ECE of about 0.05 (|share right - 0.5|), 6,000
    # of them about 0.005; the floor is seeded, so it is the same every time.
    small, large = sampling_floor([0.5] * 60), sampling_floor([0.5] * 6000)
    assert 0.03 < small < 0.08 and large < 0.01
    assert sampling_floor([0.5] * 60) == small
