"""Retrieval metrics (pure functions), with the shared benchmark's exact definitions.

recall@k = |gold ∩ top-k| / |gold|; hit@k = 1 if any gold in top-k; complete@k = 1 if all gold in
top-k; nDCG@k with binary gains. All macro-averaged over queries.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence

KS = (1, 3, 5, 10)
METRICS = ("recall", "hit", "complete", "ndcg")


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return len(gold.intersection(ranked[:k])) / len(gold) if gold else 0.0


def hit_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return 1.0 if gold.intersection(ranked[:k]) else 0.0


def complete_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return 1.0 if gold and gold.issubset(ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, tid in enumerate(ranked[:k]) if tid in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


_FUNCS = {"recall": recall_at, "hit": hit_at, "complete": complete_at, "ndcg": ndcg_at}


def score_query(ranked: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """Every metric at every k for one query, keyed like ``ndcg@10``."""
    g = set(gold)
    return {f"{m}@{k}": _FUNCS[m](ranked, g, k) for m in METRICS for k in KS}


def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Macro average of per-query metric dicts."""
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def sign_test(mine: Sequence[float], theirs: Sequence[float]) -> tuple[int, int, float]:
    """Paired comparison of two systems on the same requests: how many requests ``mine``
    scores higher, how many lower, and the exact two-sided sign test's p-value of that split
    (ties are dropped; 1.0 means no difference)."""
    won = sum(1 for a, b in zip(mine, theirs, strict=True) if a > b)
    lost = sum(1 for a, b in zip(mine, theirs, strict=True) if a < b)
    n, k = won + lost, min(won, lost)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n if n else 0.5
    return won, lost, min(1.0, 2 * tail)


#: One bin of a reliability diagram: its lower edge, the mean score and the share right of the
#: hits inside, and how many hits that is.
Bin = tuple[float, float, float, int]


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> list[Bin]:
    """The non-empty equal-width score bins of ``(score, right)`` pairs (scores in 0..1; a
    score of 1 falls in the last bin): what a reliability diagram draws."""
    inside: dict[int, list[tuple[float, bool]]] = {}
    for score, right in pairs:
        inside.setdefault(min(max(int(score * bins), 0), bins - 1), []).append((score, right))
    return [
        (
            b / bins,
            sum(s for s, _ in rows) / len(rows),
            sum(r for _, r in rows) / len(rows),
            len(rows),
        )
        for b, rows in sorted(inside.items())
    ]


def calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> float:
    """Expected calibration error: over equal-width score bins, the gap between the mean score
    and the share right, weighted by the bin's share of the pairs (0 for no pairs)."""
    if not pairs:
        return 0.0
    return sum(abs(s - r) * n for _, s, r, n in reliability(pairs, bins)) / len(pairs)


def sampling_floor(
    scores: Sequence[float], bins: int = 10, draws: int = 100, seed: int = 0
) -> float:
    """The expected calibration error that exact probabilities would still show on this many
    hits: the mean :func:`calibration_error` of ``draws`` label sets in which each hit is right
    with probability its score (seeded, so the same scores give the same floor). An ECE near
    its floor is as low as a set of that size can show; 0 for no scores."""
    if not scores:
        return 0.0
    rng = random.Random(seed)
    total = 0.0
    for _ in range(draws):
        total += calibration_error([(s, rng.random() < s) for s in scores], bins)
    return total / draws
