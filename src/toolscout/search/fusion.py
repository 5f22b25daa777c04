"""Pure rank fusion: no I/O, deterministic, ties broken by tool id.

Two methods:

* :func:`fuse_rrf` — weighted Reciprocal Rank Fusion, ``sum_i w_i / (k + rank_i)``.
* :func:`fuse_scores` — score-aware fusion: each leg's scores are mapped to 0..1 relative to that
  leg's best hit, then combined with weights. Unlike RRF it keeps *how much* better a hit is, so a
  confident lexical match is not dragged down by an indifferent vector rank (and vice versa).

:func:`fuse_legs` applies the configured method to a search's two legs; the default
(``adaptive``) weighs the lexical leg by :func:`lexical_confidence`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter

from toolscout.models import Scored, SearchMode
from toolscout.search.config import SearchConfig


def _sorted(scores: dict[str, float], n: int | None = None) -> list[Scored]:
    """The first ``n`` (None: all), best score first, ties by id: sorted by id, then stably by
    score (two sorts in C beat one with a key built per item in Python)."""
    items = sorted(scores.items())
    items.sort(key=itemgetter(1), reverse=True)
    return [Scored(i, s) for i, s in items[:n]]


def fuse_rrf(
    runs: Sequence[Sequence[Scored]], *, k: int = 60, weights: Sequence[float] | None = None
) -> list[Scored]:
    """Weighted RRF of ranked runs; scores are divided by their maximum possible value (0..1).

    Raises:
        ValueError: if ``weights`` does not have one entry per run or all weights are zero.
    """
    weights = list(weights) if weights is not None else [1.0] * len(runs)
    if len(weights) != len(runs):
        raise ValueError("weights must have one entry per run")
    total = sum(weights)
    if total <= 0:
        raise ValueError("at least one weight must be positive")
    scores: dict[str, float] = {}
    for run, weight in zip(runs, weights, strict=True):
        for rank, hit in enumerate(run, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (k + rank)
    ceiling = total / (k + 1)
    return _sorted({i: s / ceiling for i, s in scores.items()})


def normalise(run: Sequence[Scored], *, floor: float = 0.0) -> dict[str, float]:
    """Map a run's scores to 0..1: ``(s - floor) / (best - floor)``, clipped at 0."""
    if not run:
        return {}
    best = max(h.score for h in run)
    span = best - floor
    if span <= 0:
        return {h.id: 1.0 for h in run}
    # ``v if v > 0.0 else 0.0`` is ``max(0.0, v)`` (NaN and -0.0 included), without the call.
    return {h.id: v if (v := (h.score - floor) / span) > 0.0 else 0.0 for h in run}


def fuse_scores(
    runs: Sequence[Sequence[Scored]],
    *,
    weights: Sequence[float],
    floors: Sequence[float] | None = None,
) -> list[Scored]:
    """Weighted sum of per-leg normalised scores, divided by the weight total (0..1).

    Raises:
        ValueError: if ``weights`` or ``floors`` do not have one entry per run.
    """
    floors = list(floors) if floors is not None else [0.0] * len(runs)
    if len(weights) != len(runs) or len(floors) != len(runs):
        raise ValueError("weights and floors must have one entry per run")
    total = sum(weights)
    if total <= 0:
        raise ValueError("at least one weight must be positive")
    scores: dict[str, float] = {}
    for run, weight, floor in zip(runs, weights, floors, strict=True):
        for tool_id, value in normalise(run, floor=floor).items():
            scores[tool_id] = scores.get(tool_id, 0.0) + weight * value
    return _sorted({i: s / total for i, s in scores.items()})


def spread_intents(
    fused: Sequence[Scored], owner: dict[str, int], intents: int, limit: int
) -> list[Scored]:
    """Keep any one intent from filling the first ``limit`` places.

    ``owner`` maps a tool to the intent it matches best. Within the first ``limit`` places an
    intent gets at most ``ceil(limit / intents)`` tools; a tool over its intent's share waits,
    in order, until the places are filled. Tools of no intent (found only by words) never wait.
    """
    if intents < 2:
        return list(fused)
    share = -(-limit // intents)
    head: list[Scored] = []
    waiting: list[Scored] = []
    taken = [0] * intents
    rest: list[Scored] = []
    for hit in fused:
        if len(head) >= limit:
            rest.append(hit)
            continue
        who = owner.get(hit.id)
        if who is not None and taken[who] >= share:
            waiting.append(hit)
            continue
        if who is not None:
            taken[who] += 1
        head.append(hit)
    return head + waiting + rest


def best_of_intents(runs: list[list[Scored]], n: int) -> list[Scored]:
    """One vector run from one run per intent: each tool keeps its best similarity."""
    if not runs:
        return []
    if len(runs) == 1:
        return runs[0]
    best: dict[str, float] = {}
    for run in runs:
        for hit in run:
            if hit.score > best.get(hit.id, -2.0):
                best[hit.id] = hit.score
    return _sorted(best, n)


def intent_owners(runs: list[list[Scored]]) -> dict[str, int]:
    """Each tool's intent: the run (one per intent) where it is most similar."""
    best: dict[str, tuple[float, int]] = {}
    for k, run in enumerate(runs):
        for hit in run:
            if hit.id not in best or hit.score > best[hit.id][0]:
                best[hit.id] = (hit.score, k)
    return {tool: k for tool, (_, k) in best.items()}


def fuse_legs(
    config: SearchConfig,
    mode: SearchMode,
    tokens: Sequence[str],
    lexical: Sequence[Scored],
    vector: Sequence[Scored],
    tools: int,
) -> list[Scored]:
    """The legs fused as ``config`` says for ``mode`` over an index of ``tools`` tools
    (``adaptive``: the lexical weight scaled by :func:`lexical_confidence`)."""
    if mode is SearchMode.BM25:
        return fuse_scores([lexical], weights=[1.0])
    if mode is SearchMode.VECTOR:
        return [Scored(h.id, max(0.0, h.score)) for h in vector]
    if config.fusion == "rrf":
        weights = [config.lexical_weight, config.vector_weight]
        return fuse_rrf([lexical, vector], k=config.rrf_k, weights=weights)
    lw = config.lexical_weight
    if config.fusion == "adaptive":
        lw = lw * lexical_confidence(config, tokens, lexical, tools)
    return fuse_scores(
        [lexical, vector], weights=[lw, config.vector_weight], floors=[0.0, config.vector_floor]
    )


def lexical_confidence(
    config: SearchConfig, tokens: Sequence[str], lexical: Sequence[Scored], tools: int
) -> float:
    """0..1: a logistic in the best BM25 score measured in units of the largest IDF,
    ``ln(tools + 1)`` (midpoint and slope from ``config``)."""
    if not lexical or not tokens:
        return 0.0
    evidence = lexical[0].score / math.log(tools + 1.0)
    z = (evidence - config.evidence_midpoint) / max(config.evidence_slope, 1e-6)
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
