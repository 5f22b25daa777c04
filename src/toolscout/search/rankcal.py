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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError
from toolscout.search.rankinputs import AGREE_FEATURES as AGREE_FEATURES
from toolscout.search.rankinputs import COSINE_FEATURE as COSINE_FEATURE
from toolscout.search.rankinputs import COSINE_MARGIN as COSINE_MARGIN
from toolscout.search.rankinputs import CROWD_MARGIN as CROWD_MARGIN
from toolscout.search.rankinputs import DERIVED as DERIVED
from toolscout.search.rankinputs import SOFTMAX_TOP as SOFTMAX_TOP
from toolscout.search.rankinputs import Situation, fold

CALIBRATION_FILE = "rankcal.json"


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
        self,
        raw: NDArray[np.float64],
        x: NDArray[np.float64],
        features: Sequence[str],
        order: NDArray[np.intp] | None = None,
    ) -> NDArray[np.float64]:
        """The probability that each of one request's candidates is a right tool (``order``:
        the rows by falling ``raw``, ties in row order, when the caller has it).

        Stage 1 is :meth:`logistic`'s, its weights folded once per ranker (search/rankinputs.py):
        one product of the feature rows with a weight per feature, the request's own inputs
        summed into the intercept, and the few per-candidate derived columns added in turn,
        instead of a design matrix of every input (equal to within rounding)."""
        if raw.size == 0:
            return np.zeros(0)
        if order is None:
            order = np.argsort(-raw, kind="stable")
        out = np.empty(raw.size)
        out[order] = self.ranked_probabilities(raw, x, features, order)
        return out

    def ranked_probabilities(
        self,
        raw: NDArray[np.float64],
        x: NDArray[np.float64],
        features: Sequence[str],
        order: NDArray[np.intp],
    ) -> NDArray[np.float64]:
        """:meth:`probabilities` best first (``order``: the rows by falling ``raw``, ties in row
        order; at least one row): each band is then a slice."""
        folded = fold(self.inputs, self.coef, self.intercept, tuple(features))
        p = folded.z(Situation(raw, order, x, tuple(features)))
        # 1 / (1 + exp(-clip(z))), in place (the clip as its two ufuncs: np.clip's wrapper
        # costs more than both).
        np.maximum(p, -50.0, out=p)
        np.minimum(p, 50.0, out=p)
        np.negative(p, out=p)
        np.exp(p, out=p)
        p += 1.0
        np.divide(1.0, p, out=p)
        if not self.bands:
            return p
        out = p.copy()  # places before the first band (none as fitted) keep stage 1
        for start, end, knots_x, knots_y in self._knots:
            out[start:end] = np.interp(p[start:end], knots_x, knots_y)
        return out

    @cached_property
    def _knots(
        self,
    ) -> tuple[tuple[int, int | None, NDArray[np.float64], NDArray[np.float64]], ...]:
        """Each band's places (from its start to the next band's, the last to the end) and
        its knots as arrays."""
        ends = [b.start for b in self.bands[1:]] + [None]
        return tuple(
            (b.start, end, np.asarray(b.x), np.asarray(b.y))
            for b, end in zip(self.bands, ends, strict=True)
        )

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
    situation = Situation.placed(
        raw, positions(raw) if place is None else place, x, tuple(features)
    )
    for j, name in derived:
        out[:, j] = situation.column(name)
    return out


@lru_cache(maxsize=64)
def _plan(
    inputs: tuple[str, ...], features: tuple[str, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, str], ...]]:
    """Where each input comes from: the positions of those read from ``features`` and their
    columns there, then the positions and names of the :data:`DERIVED` ones."""
    read = [(j, features.index(n)) for j, n in enumerate(inputs) if n not in DERIVED]
    derived = tuple((j, n) for j, n in enumerate(inputs) if n in DERIVED)
    return tuple(j for j, _ in read), tuple(c for _, c in read), derived


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
