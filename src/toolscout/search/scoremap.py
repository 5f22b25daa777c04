"""The default search's scores as probabilities: a map of the fusion's product per hit.

The hand-set fusion's product ``P(answerable) x P(fits | answerable)`` (search/calibration.py)
ranks well but runs far below the hit rate: ``P(fits)`` is fitted over every candidate of the
training searches, half of them made with the gold tools taken out, and ``P(answerable)`` over a
mix that is two thirds no-match requests. The map has two stages, both fitted on training
requests and chosen on dev requests (``python bench/fit/fusion_calibration.py --write``, which
writes it into ``calibration.json`` as a mode's ``score_map``):

1. a logistic model over :data:`INPUTS`, which place the hit in its request: the product's log
   odds, ``P(answerable)``'s, the hit's place, its fused score relative to the best and its
   margin over the next hit, and how crowded the top is in cosine (near-identical tools make a
   first place a coin toss);
2. per band of places (first hit, second to fifth, ...), an isotonic (non-decreasing) map of the
   logistic output, read by linear interpolation between its knots.

The caller caps each score at the one before it, so the map never re-orders a list; it reads
the product and never changes ``P(answerable)``, so ``no_match`` is the same with or without it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolscout.search.rankcal import Band

#: What stage 1 may read, per hit (see the module docstring): ``product`` and ``answerable`` as
#: log odds, ``position`` (log of 1 + the 0-based place), ``relative`` (the fused score over the
#: best), ``gap_next`` (``relative`` minus the next hit's; 0 for the last), ``cosine_crowd``
#: (log of 1 + how many other vector candidates are within :data:`COSINE_MARGIN` of the closest
#: one's cosine) and ``cosine_gap`` (the closest cosine minus the hit's).
INPUTS = (
    "product",
    "answerable",
    "position",
    "relative",
    "gap_next",
    "cosine_crowd",
    "cosine_gap",
    "cosine",
    "cosine_lead",
    "tight_crowd",
    "crowd_cosine",
)
#: Cosine distance from the closest tool within which another counts as near-identical.
COSINE_MARGIN = 0.05
#: The same, for ``tight_crowd``.
TIGHT_MARGIN = 0.02


@dataclass(frozen=True)
class Hit:
    """What the map reads about one hit of a list, best first."""

    product: float
    relative: float
    cosine: float


@dataclass(frozen=True)
class ScoreMap:
    """Stage 1 (``inputs``, ``coef``, ``intercept``) and stage 2 (``bands``)."""

    inputs: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    bands: tuple[Band, ...]

    def scores(
        self, hits: Sequence[Hit], answerable: float, cosines: Sequence[float]
    ) -> list[float]:
        """Each hit's probability of being a right tool (not yet capped at the one before);
        ``cosines``: the vector leg's cosines, closest first. The same as stage 1 over
        :func:`situation`'s rows, with the request's terms summed once."""
        weight = dict(zip(self.inputs, self.coef, strict=True))
        best, request = _request(answerable, cosines)
        base = self.intercept + sum(weight.get(n, 0.0) * v for n, v in request.items())
        w = [weight.get(n, 0.0) for n in _OWN]
        out = []
        for place in range(len(hits)):
            own = _own(hits, place, best, request["cosine_crowd"])
            z = base + sum(a * b for a, b in zip(w, own, strict=True))
            p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
            out.append(_interpolate(self._band(place), p) if self.bands else p)
        return out

    def _band(self, place: int) -> Band:
        band = self.bands[0]
        for b in self.bands[1:]:
            if b.start > place:
                break
            band = b
        return band

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": list(self.inputs),
            "coef": [round(c, 6) for c in self.coef],
            "intercept": round(self.intercept, 6),
            "bands": [b.to_dict() for b in self.bands],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreMap:
        """Raises: ValueError (or KeyError, TypeError) when the map is malformed."""
        inputs = tuple(str(n) for n in data["inputs"])
        coef = tuple(float(c) for c in data["coef"])
        unknown = [n for n in inputs if n not in INPUTS]
        if unknown or len(coef) != len(inputs):
            raise ValueError(
                f"score_map reads {list(inputs)!r} with {len(coef)} weights; this code computes "
                f"{list(INPUTS)}; refit with `python bench/fit/fusion_calibration.py --write`"
            )
        bands = tuple(Band.from_dict(b) for b in data.get("bands", []))
        for b in bands:
            if (
                len(b.x) != len(b.y)
                or not b.x
                or any(u > v for u, v in zip(b.x, b.x[1:], strict=False))
            ):
                raise ValueError(f"score_map band {b.start} has malformed knots")
        if [b.start for b in bands] != sorted({b.start for b in bands}):
            raise ValueError("score_map bands must start at increasing places")
        return cls(inputs, coef, float(data["intercept"]), bands)


def situation(
    inputs: Sequence[str], hits: Sequence[Hit], answerable: float, cosines: Sequence[float]
) -> list[list[float]]:
    """One row of ``inputs`` per hit (see :data:`INPUTS`)."""
    best, request = _request(answerable, cosines)
    rows = []
    for place in range(len(hits)):
        own = dict(zip(_OWN, _own(hits, place, best, request["cosine_crowd"]), strict=True))
        rows.append([own[n] if n in own else request[n] for n in inputs])
    return rows


#: The inputs that differ from hit to hit, in the order :func:`_own` gives them.
_OWN = ("product", "position", "relative", "gap_next", "cosine_gap", "cosine", "crowd_cosine")


def _request(answerable: float, cosines: Sequence[float]) -> tuple[float, dict[str, float]]:
    """The closest cosine and the inputs shared by every hit of the request."""
    best = cosines[0] if cosines else 0.0
    crowd = tight = 0
    for c in cosines[1:]:
        if c < best - COSINE_MARGIN:
            break
        crowd += 1
        tight += c >= best - TIGHT_MARGIN
    return best, {
        "answerable": _logit(answerable),
        "cosine_crowd": math.log1p(crowd),
        "tight_crowd": math.log1p(tight),
        "cosine_lead": best - cosines[1] if len(cosines) > 1 else best,
    }


def _own(hits: Sequence[Hit], place: int, best: float, crowd: float) -> tuple[float, ...]:
    """The :data:`_OWN` inputs of the hit at ``place``."""
    hit = hits[place]
    following = hits[place + 1].relative if place + 1 < len(hits) else hit.relative
    return (
        _logit(hit.product),
        math.log1p(place),
        hit.relative,
        hit.relative - following,
        best - hit.cosine,
        hit.cosine,
        crowd * hit.cosine,
    )


def _logit(p: float) -> float:
    q = min(max(p, 1e-6), 1.0 - 1e-6)
    return math.log(q / (1.0 - q))


def _interpolate(band: Band, p: float) -> float:
    """``numpy.interp(p, band.x, band.y)`` for one value, in plain Python."""
    xs, ys = band.x, band.y
    if p <= xs[0]:
        return ys[0]
    if p >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, p)
    x0, x1 = xs[i - 1], xs[i]
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (p - x0) / (x1 - x0) if x1 > x0 else ys[i]
