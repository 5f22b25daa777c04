"""The learned ranker's scores as probabilities: P(this candidate is a right tool for the request).

The ranker's raw output orders one request's candidates but means nothing across requests. The
map has two stages, both fitted on training requests only (``bench/fit/ranker_calibration.py``,
which refits it for whatever ranker is packaged, and records that ranker's sha256):

1. a logistic model over :data:`DERIVED` inputs, which describe the candidate's situation in
   its request (the raw output, its gap to the request's best, its place, how crowded the top
   is, how much of the softmaxed output it holds, whether the legs agree on the first place),
   and any of the ranker's own features by name (the candidate's cosine, the request's BM25
   evidence, the catalog's size, its intents ...); which ones is in the file;
2. per band of places (first hit, second to fifth, ...), an isotonic (non-decreasing) map of the
   logistic output, read by linear interpolation between its knots: it corrects the shape a
   logistic cannot take without ever turning a higher output into a lower probability.

Within one request a hit never scores above the one ranked before it (``scored_hits`` caps each
score at its predecessor's), so the map never re-orders the ranker's answer. A file fitted for
another ranker is not used (:func:`load_rank_calibration` says so); the ranker then falls back
to the logistic calibration its own metadata carries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError

CALIBRATION_FILE = "rankcal.json"

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


@dataclass(frozen=True)
class Band:
    """The isotonic map of the candidates whose 0-based place is ``start`` or more (up to the
    next band's start): knots ``x`` (logistic output, increasing) and ``y`` (probability,
    non-decreasing)."""

    start: int
    x: tuple[float, ...]
    y: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "x": [round(v, 6) for v in self.x],
            "y": [round(v, 6) for v in self.y],
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Band:
        return cls(int(raw["start"]), tuple(map(float, raw["x"])), tuple(map(float, raw["y"])))


@dataclass(frozen=True)
class RankCalibration:
    """The fitted map of the module docstring, for the ranker whose model file has sha256
    ``ranker_sha256``."""

    inputs: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    bands: tuple[Band, ...]
    ranker_sha256: str
    provenance: str = ""

    def logistic(
        self,
        raw: NDArray[np.float64],
        x: NDArray[np.float64],
        features: Sequence[str],
        place: NDArray[np.int64] | None = None,
    ) -> NDArray[np.float64]:
        """Stage 1 for one request's candidates (``x``: rows of ``features``)."""
        z = design(self.inputs, raw, x, features, place) @ np.asarray(self.coef) + self.intercept
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
        return out

    def probabilities(
        self, raw: NDArray[np.float64], x: NDArray[np.float64], features: Sequence[str]
    ) -> NDArray[np.float64]:
        """The probability that each of one request's candidates is a right tool."""
        if raw.size == 0:
            return np.zeros(0)
        order = np.argsort(-raw, kind="stable")
        place = np.empty(raw.size, dtype=np.int64)
        place[order] = np.arange(raw.size)
        p = self.logistic(raw, x, features, place)
        if not self.bands:
            return p
        out = p.copy()  # places before the first band (none as fitted) keep stage 1
        ends = [b.start for b in self.bands[1:]] + [raw.size]
        for band, end in zip(self.bands, ends, strict=True):
            rows = order[band.start : end]  # the band's places, as rows
            knots_x, knots_y = _knots(band)
            out[rows] = np.interp(p[rows], knots_x, knots_y)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "ranker_sha256": self.ranker_sha256,
            "inputs": list(self.inputs),
            "coef": [round(c, 6) for c in self.coef],
            "intercept": round(self.intercept, 6),
            "bands": [b.to_dict() for b in self.bands],
            "provenance": self.provenance,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], features: Sequence[str]) -> RankCalibration:
        """Raises: ConfigError when the file is malformed or reads an input that neither
        :data:`DERIVED` nor ``features`` (the ranker's) holds."""
        try:
            inputs = tuple(str(n) for n in data["inputs"])
            coef = tuple(float(c) for c in data["coef"])
            bands = tuple(Band.from_dict(b) for b in data.get("bands", []))
            out = cls(
                inputs,
                coef,
                float(data["intercept"]),
                bands,
                str(data["ranker_sha256"]),
                str(data.get("provenance", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{CALIBRATION_FILE} is malformed: {exc}") from exc
        unknown = [n for n in inputs if n not in DERIVED and n not in features]
        if "legs_agree" in inputs:
            unknown += [n for n in AGREE_FEATURES if n not in features]
        if {"cosine_crowd", "cosine_spread"} & set(inputs) and COSINE_FEATURE not in features:
            unknown.append(COSINE_FEATURE)
        if unknown or len(coef) != len(inputs):
            raise ConfigError(
                f"{CALIBRATION_FILE} reads {list(inputs)!r} with {len(coef)} weights"
                + (f" (needing {unknown!r}, which the ranker lacks)" if unknown else "")
                + f"; the ranker computes {list(DERIVED) + list(features)}; refit with "
                "`python bench/fit/ranker_calibration.py --write`"
            )
        for b in bands:
            if len(b.x) != len(b.y) or not b.x or np.any(np.diff(b.x) < 0):
                raise ConfigError(f"{CALIBRATION_FILE}: band {b.start} has malformed knots")
        return out


def positions(raw: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each candidate's 0-based place in the ranker's order (ties: the earlier row first)."""
    place = np.empty(raw.size, dtype=np.int64)
    place[np.argsort(-raw, kind="stable")] = np.arange(raw.size)
    return place


def design(
    inputs: Sequence[str],
    raw: NDArray[np.float64],
    x: NDArray[np.float64],
    features: Sequence[str],
    place: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """One row of ``inputs`` per candidate of one request (``x``: its rows of ``features``,
    ``raw``: the ranker's output for them; ``place``: their :func:`positions`, if known)."""
    out = np.empty((raw.size, len(inputs)))
    if raw.size == 0:
        return out
    at, take, derived = _plan(tuple(inputs), tuple(features))
    if take:
        out[:, list(at)] = x[:, list(take)]
    situation = _Situation(raw, positions(raw) if place is None else place, x, tuple(features))
    for j, name in derived:
        out[:, j] = situation.column(name)
    return out


class _Situation:
    """The :data:`DERIVED` columns of one request's candidates, each computed when asked."""

    def __init__(
        self,
        raw: NDArray[np.float64],
        place: NDArray[np.int64],
        x: NDArray[np.float64],
        features: tuple[str, ...],
    ) -> None:
        self.raw, self.place, self.x, self.features = raw, place, x, features
        self.ranked = np.empty(raw.size)
        self.ranked[place] = raw  # best first
        self._soft: tuple[NDArray[np.float64], float] | None = None

    def column(self, name: str) -> NDArray[np.float64] | float:
        """One input's column, or its value for every candidate when it is the request's."""
        if name == "raw":
            return self.raw
        return _COLUMNS[name](self)

    def raw_gap(self) -> NDArray[np.float64]:
        out: NDArray[np.float64] = self.raw - self.ranked[0]
        return out

    def position(self) -> NDArray[np.float64]:
        out: NDArray[np.float64] = np.log1p(self.place)
        return out

    def lead(self) -> NDArray[np.float64]:
        return _lead(self.raw)

    def share(self) -> NDArray[np.float64]:
        return self.softmax()[0]

    def entropy(self) -> float:
        return self.softmax()[1]

    def crowd(self) -> float:
        near = int(np.count_nonzero(self.ranked >= self.ranked[0] - CROWD_MARGIN)) - 1
        return float(np.log1p(near))

    def gap_next(self) -> NDArray[np.float64]:
        following = np.empty(self.raw.size)
        following[:-1] = self.ranked[1:]
        following[-1] = self.ranked[-1]
        out: NDArray[np.float64] = self.raw - following[self.place]
        return out

    def legs_agree(self) -> float:
        vector, lexical = (self.features.index(n) for n in AGREE_FEATURES)
        # A leg's first place is log(1 + 1); its second, log(1 + 2): the midpoint tells them apart.
        first = np.log(2.5)
        return float(np.any((self.x[:, vector] < first) & (self.x[:, lexical] < first)))

    def cosine_crowd(self) -> float:
        cos = self.x[:, self.features.index(COSINE_FEATURE)]
        near = int(np.count_nonzero(cos >= cos.max() - COSINE_MARGIN)) - 1
        return float(np.log1p(near))

    def cosine_spread(self) -> float:
        cos = np.sort(self.x[:, self.features.index(COSINE_FEATURE)])
        n = cos.size - 1  # the others: every candidate but the best
        if n == 0:
            return float(cos[-1])
        middle = (cos[(n - 1) // 2] + cos[n // 2]) / 2.0
        return float(cos[-1] - middle)

    def softmax(self) -> tuple[NDArray[np.float64], float]:
        """Each candidate's share of the softmax over the first places, and its entropy."""
        if self._soft is None:
            top = np.exp(self.ranked[:SOFTMAX_TOP] - self.ranked[0])
            total = float(top.sum())
            q = top / total
            entropy = float(-(q * np.log(np.maximum(q, 1e-300))).sum())
            self._soft = (np.exp(self.raw - self.ranked[0]) / total, entropy)
        return self._soft


_COLUMNS: dict[str, Callable[[_Situation], NDArray[np.float64] | float]] = {
    "raw_gap": _Situation.raw_gap,
    "position": _Situation.position,
    "lead": _Situation.lead,
    "share": _Situation.share,
    "entropy": _Situation.entropy,
    "crowd": _Situation.crowd,
    "gap_next": _Situation.gap_next,
    "legs_agree": _Situation.legs_agree,
    "cosine_crowd": _Situation.cosine_crowd,
    "cosine_spread": _Situation.cosine_spread,
}


@lru_cache(maxsize=64)
def _plan(
    inputs: tuple[str, ...], features: tuple[str, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, str], ...]]:
    """Where each input comes from: the positions of those read from ``features`` and their
    columns there, then the positions and names of the :data:`DERIVED` ones."""
    read = [(j, features.index(n)) for j, n in enumerate(inputs) if n not in DERIVED]
    derived = tuple((j, n) for j, n in enumerate(inputs) if n in DERIVED)
    return tuple(j for j, _ in read), tuple(c for _, c in read), derived


@lru_cache(maxsize=64)
def _knots(band: Band) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return np.asarray(band.x), np.asarray(band.y)


def _lead(raw: NDArray[np.float64]) -> NDArray[np.float64]:
    if raw.size < 2:
        return np.zeros(raw.size)
    first, second = np.partition(raw, raw.size - 2)[-1:-3:-1]
    out: NDArray[np.float64] = raw - first
    out[raw >= first] = first - second
    return out


def load_rank_calibration(
    ranker_sha256: str, features: Sequence[str], folder: Path | None = None
) -> tuple[RankCalibration | None, str]:
    """The packaged map (or the one in ``folder``) if it was fitted for the ranker with
    ``ranker_sha256``, and ``"fitted"``; else None and why not (a missing file, another
    ranker's).

    Raises:
        ConfigError: the file is there but malformed.
    """
    try:
        if folder is not None:
            text = (folder / CALIBRATION_FILE).read_text("utf-8")
        else:
            text = resources.files("toolscout.search").joinpath(CALIBRATION_FILE).read_text("utf-8")
    except OSError:
        return None, f"no {CALIBRATION_FILE}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{CALIBRATION_FILE} is malformed: {exc}") from exc
    cal = RankCalibration.from_dict(data, features)
    if cal.ranker_sha256 != ranker_sha256:
        return None, (
            f"{CALIBRATION_FILE} was fitted for ranker sha256 {cal.ranker_sha256[:12]}, the "
            f"ranker is {ranker_sha256[:12]}; refit with "
            "`python bench/fit/ranker_calibration.py --write`"
        )
    return cal, "fitted"
