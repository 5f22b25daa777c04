"""The inputs of the learned ranker's score map that describe a candidate's situation in its
request (search/rankcal.py): :data:`DERIVED`, computed from the ranker's output and feature
rows for one request's candidates, and the map's logistic weights folded for one ranker
(:func:`fold`) so that a search computes only the columns it weighs, each once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

#: Inputs computed from the ranker's output for one request's candidates: the output itself,
#: its gap to the request's best, the candidate's place (log of 1 + its 0-based position), and
#: its lead over the best of the others (the first hit's margin over the second; for any other,
#: its gap to the first); each grows with the output within a request. Then the situation:
#: ``share``, the candidate's part of the softmaxed output of the first :data:`SOFTMAX_TOP`
#: candidates (a first hit among near-ties holds little of it); ``entropy``, that softmax's
#: entropy (request-level: how spread the top is); ``crowd``, log of 1 + how many other
#: candidates score within :data:`CROWD_MARGIN` of the first (near-identical tools tie);
#: ``gap_next``, the candidate's margin over the next one down (0 for the last);
#: ``legs_agree``, 1 when the lexical and vector legs put the same tool first (request-level;
#: read from the ranker's ``vector_rank`` and ``lexical_rank`` features); and two measures of
#: how close the crowd of candidates comes in cosine (the ranker's ``cosine`` feature),
#: request-level: ``cosine_crowd``, log of 1 + how many other candidates are within
#: :data:`COSINE_MARGIN` of the best cosine (near-identical tools), and ``cosine_spread``, the
#: best cosine's margin over the median of the other candidates' (over no others: the best
#: cosine itself). Both are counted over the candidates, never over the catalog, so a lone
#: clear match has no crowd at all rather than a crowd of itself; none of the inputs reads
#: the catalog's size.
DERIVED: tuple[str, ...] = (
    "raw",
    "raw_gap",
    "position",
    "lead",
    "share",
    "entropy",
    "crowd",
    "gap_next",
    "legs_agree",
    "cosine_crowd",
    "cosine_spread",
)

#: Candidates the softmax of ``share`` and ``entropy`` runs over (the first places).
SOFTMAX_TOP = 10
#: Raw-output distance from the first within which a candidate counts as a near-tie.
CROWD_MARGIN = 0.5
#: Cosine distance from the best within which another candidate counts as near-identical.
COSINE_MARGIN = 0.05
#: The ranker's features ``legs_agree`` reads (log of 1 + a leg's 1-based rank).
AGREE_FEATURES = ("vector_rank", "lexical_rank")
#: The ranker's feature the cosine crowd is read from.
COSINE_FEATURE = "cosine"


class Situation:
    """The :data:`DERIVED` columns of one request's candidates, each computed when asked: the
    per-candidate ones best first (``order``: the rows by falling output, ties in row order),
    where a place's neighbours are adjacent; :meth:`column` reads them in row order."""

    def __init__(
        self,
        raw: NDArray[np.float64],
        order: NDArray[np.intp],
        x: NDArray[np.float64],
        features: tuple[str, ...],
    ) -> None:
        self.raw, self.order, self.x, self.features = raw, order, x, features
        self.ranked: NDArray[np.float64] = raw.take(order)  # best first
        self._soft: tuple[NDArray[np.float64], float] | None = None
        self._cosines: NDArray[np.float64] | None = None
        self._place: NDArray[np.intp] | None = None

    @classmethod
    def placed(
        cls,
        raw: NDArray[np.float64],
        place: NDArray[np.int64],
        x: NDArray[np.float64],
        features: tuple[str, ...],
    ) -> Situation:
        """The situation of candidates whose 0-based places in the ranker's order are known."""
        order = np.empty(raw.size, dtype=np.intp)
        order[place] = np.arange(raw.size)
        out = cls(raw, order, x, features)
        out._place = np.asarray(place, dtype=np.intp)
        return out

    def place(self) -> NDArray[np.intp]:
        """Each row's 0-based place in the ranker's order (``order`` inverted, once)."""
        if self._place is None:
            self._place = np.empty(self.raw.size, dtype=np.intp)
            self._place[self.order] = np.arange(self.raw.size)
        return self._place

    def column(self, name: str) -> NDArray[np.float64] | float:
        """One input's column in row order, or its value for every candidate when it is the
        request's."""
        if name == "raw":
            return self.raw
        value = COLUMNS[name](self)
        if isinstance(value, float):
            return value
        out: NDArray[np.float64] = value.take(self.place())
        return out

    # The per-candidate inputs below are best first; the request's are one value.

    def raw_gap(self) -> NDArray[np.float64]:
        out: NDArray[np.float64] = self.ranked - self.ranked[0]
        return out

    def position(self) -> NDArray[np.float64]:
        return _log_places(self.raw.size)

    def lead(self) -> NDArray[np.float64]:
        ranked = self.ranked
        if ranked.size < 2:
            return np.zeros(ranked.size)
        first, second = ranked[:2].tolist()
        out: NDArray[np.float64] = ranked - first
        out[ranked >= first] = first - second
        return out

    def share(self) -> NDArray[np.float64]:
        return self.softmax()[0]

    def entropy(self) -> float:
        return self.softmax()[1]

    def crowd(self) -> float:
        near = int(np.count_nonzero(self.ranked >= self.ranked[0] - CROWD_MARGIN)) - 1
        return float(np.log1p(near))

    def gap_next(self) -> NDArray[np.float64]:
        ranked = self.ranked
        out = np.empty(ranked.size)
        np.subtract(ranked[:-1], ranked[1:], out=out[:-1])
        out[-1] = 0.0  # the last place's margin over itself
        return out

    def legs_agree(self) -> float:
        vector, lexical = _columns(self.features, AGREE_FEATURES)
        both = self.x[:, vector] < _FIRST_PLACE
        both &= self.x[:, lexical] < _FIRST_PLACE
        return float(both.any())

    def cosines(self) -> NDArray[np.float64]:
        """The candidates' cosines, ascending."""
        if self._cosines is None:
            (cosine,) = _columns(self.features, (COSINE_FEATURE,))
            self._cosines = np.sort(self.x[:, cosine])
        return self._cosines

    def cosine_crowd(self) -> float:
        cos = self.cosines()
        # How many are within the margin of the best: all but those below it.
        below = int(cos.searchsorted(cos[-1] - COSINE_MARGIN, side="left"))
        return float(np.log1p(cos.size - below - 1))

    def cosine_spread(self) -> float:
        cos = self.cosines()
        n = cos.size - 1  # the others: every candidate but the best
        if n == 0:
            return float(cos[-1])
        middle = (cos[(n - 1) // 2] + cos[n // 2]) / 2.0
        return float(cos[-1] - middle)

    def softmax(self) -> tuple[NDArray[np.float64], float]:
        """Each candidate's share of the softmax over the first places, and its entropy."""
        if self._soft is None:
            weights = np.exp(self.ranked - self.ranked[0])
            # np.add.reduce is what ``.sum()`` runs, without its Python wrapper.
            total = float(np.add.reduce(weights[:SOFTMAX_TOP]))
            q = weights[:SOFTMAX_TOP] / total
            entropy = float(-np.add.reduce(q * np.log(np.maximum(q, 1e-300))))
            weights /= total
            self._soft = (weights, entropy)
        return self._soft


COLUMNS: dict[str, Callable[[Situation], NDArray[np.float64] | float]] = {
    "raw_gap": Situation.raw_gap,
    "position": Situation.position,
    "lead": Situation.lead,
    "share": Situation.share,
    "entropy": Situation.entropy,
    "crowd": Situation.crowd,
    "gap_next": Situation.gap_next,
    "legs_agree": Situation.legs_agree,
    "cosine_crowd": Situation.cosine_crowd,
    "cosine_spread": Situation.cosine_spread,
}


#: A leg's first place is log(1 + 1); its second, log(1 + 2): the midpoint tells them apart.
_FIRST_PLACE = float(np.log(2.5))


@lru_cache(maxsize=64)
def _columns(features: tuple[str, ...], names: tuple[str, ...]) -> tuple[int, ...]:
    """Where ``names`` are among ``features``."""
    return tuple(features.index(n) for n in names)


@lru_cache(maxsize=16)
def _log_places(n: int) -> NDArray[np.float64]:
    """log(1 + place) of the 0-based places of ``n`` candidates (read-only)."""
    out = np.log1p(np.arange(n))
    out.flags.writeable = False
    return out


#: :data:`DERIVED` inputs with one value per request (the rest have one per candidate).
REQUEST_DERIVED = frozenset({"entropy", "crowd", "legs_agree", "cosine_crowd", "cosine_spread"})


@dataclass(frozen=True)
class Folded:
    """A map's logistic weights regrouped for one ranker's features: the feature columns it
    reads (``read``) and their weights, the weight of ``raw`` (with ``raw_gap``'s: the gap is the
    output less the request's best) and of ``raw_gap`` alone (for the best), the per-candidate
    derived inputs with theirs, and the request-level ones with theirs."""

    intercept: float
    read: NDArray[np.intp]
    columns: NDArray[np.float64]
    raw: float
    gap: float
    rows: tuple[tuple[str, float], ...]
    request: tuple[tuple[str, float], ...]

    def z(self, s: Situation) -> NDArray[np.float64]:
        """The logistic's argument for every candidate of the request ``s`` describes, best
        first (``s.order``)."""
        shift = self.intercept - self.gap * float(s.ranked[0])
        for name, w in self.request:
            shift += w * float(COLUMNS[name](s))
        # Gathered into a fresh array first, in row order: the product's rounding then does
        # not depend on how the caller's rows lie in memory (a search's are a transposed view)
        # or on their order.
        z: NDArray[np.float64] = (s.x.take(self.read, axis=1) @ self.columns).take(s.order)
        z += self.raw * s.ranked
        z += shift
        for name, w in self.rows:
            z += w * COLUMNS[name](s)
        return z


@lru_cache(maxsize=64)
def fold(
    inputs: tuple[str, ...], coef: tuple[float, ...], intercept: float, features: tuple[str, ...]
) -> Folded:
    """A map's weights (``inputs``, ``coef``, ``intercept``) folded for ``features``."""
    read: dict[int, float] = {}
    weight = dict.fromkeys(DERIVED, 0.0)
    for name, c in zip(inputs, coef, strict=True):
        if name in DERIVED:
            weight[name] += c
        else:
            column = features.index(name)
            read[column] = read.get(column, 0.0) + c
    rows = tuple((n, weight[n]) for n in DERIVED if n not in REQUEST_DERIVED and n in inputs)
    return Folded(
        intercept,
        np.array(list(read), dtype=np.intp),
        np.array(list(read.values()), dtype=np.float64),
        weight["raw"] + weight["raw_gap"],
        weight["raw_gap"],
        tuple((n, w) for n, w in rows if n not in ("raw", "raw_gap")),
        tuple((n, weight[n]) for n in DERIVED if n in REQUEST_DERIVED and n in inputs),
    )
