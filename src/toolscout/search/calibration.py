"""Calibrated relevance: a hit's ``score`` is the probability that the tool serves the request.

The legs' raw evidence is comparable across requests, unlike a per-request rescaling (which gives
"zzzz qqqq" a top score of 1.0). The score is a product of two logistic models:
``P(answerable)``, that some indexed tool serves the request, and ``P(fits | answerable)``, that
this hit is the one, from the hit's own evidence. ``P(answerable)`` reads the legs as they
came back, before any fusion or re-ordering (:class:`RequestEvidence`: the vector leg's closest
cosine and how far it stands above the next ones, the best BM25 hit, the catalog's size); each
mode's model names the ones it reads in ``calibration.json``, chosen on dev requests. So a
search judges a request alike with and without the learned ranker. The hit features and the
request's are described in :mod:`toolscout.search.evidence`.

The models are fitted on the *training* requests of ``data/natural`` (their tools and catalogs
are disjoint from every reported test set), the request model also on labelled no-match rows (a
training request over catalogs of several sizes with its gold tools and their near-copies taken
out, and MetaTool's training requests that no tool or no offered tool serves), by
``python bench/fit/calibrate.py --write``, which writes ``calibration.json`` beside this module
with the embedding model's name and the sha256 of its graph. Cosines of another model mean
something else: with any other active model the scores still rank the same, but their
probabilities are approximate and a request is flagged ``no_match`` only when no hit is left at
all; :meth:`Calibration.status` says which case holds and every search reports it in
``metadata["calibration"]``.

``no_match_below``: a request whose ``P(answerable)`` is below it is flagged ``no_match``. It was
chosen on dev requests (at most 5 % of the answerable requests of every dev set and dev catalog
size flagged; bench/fit/calibrate.py).

The product ranks and flags well but runs far below the hit rate, so a mode's file may carry a
``score_map`` (search/scoremap.py) from the product to the probability that the hit is right:
then that is the hit's score, still never above the one before it. The packaged hybrid mode
carries one (``python bench/fit/fusion_calibration.py --write``); the learned ranker's scores
come from its own map (search/rankcal.py) and skip it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.errors import ConfigError
from toolscout.models import Ranked, Scored, SearchMode
from toolscout.search.evidence import (
    MODE_FEATURES,
    REQUEST_FIELDS,
    RequestEvidence,
    request_evidence,
)
from toolscout.search.evidence import Evidence as Evidence  # the searcher reads it from here
from toolscout.search.scoremap import Hit, ScoreMap

CALIBRATION_FILE = "calibration.json"


@dataclass(frozen=True)
class ModeModel:
    """One search mode's two logistic models: ``P(answerable)`` from the request's evidence
    (``request_coef``, ``request_intercept``; empty: always 1) and ``P(this hit fits | the
    request is answerable)`` from the hit's own evidence (``coef``, ``intercept``)."""

    coef: tuple[float, ...]
    intercept: float
    no_match_below: float
    request_coef: tuple[float, ...] = ()
    request_intercept: float = 0.0
    request_features: tuple[str, ...] = ()
    #: The map of the product to a probability (None: the product is the score).
    score_map: ScoreMap | None = None


@dataclass(frozen=True)
class Calibration:
    """One logistic model per search mode, fitted for the embedding model ``fitted_for``."""

    models: dict[str, ModeModel]
    fitted_for: str
    provenance: str = ""
    #: The sha256 of the fitted model's graph (None: not recorded).
    model_sha256: str | None = None
    #: Why this calibration cannot be trusted whatever the model (None: it can).
    stale: str | None = None

    def fits(self, embedder: Embedder) -> bool:
        """Whether this calibration was fitted for ``embedder`` (same name, same graph)."""
        if self.stale:
            return False
        name, digest = embedder_identity(embedder)
        if name != self.fitted_for:
            return False
        return self.model_sha256 is None or digest is None or digest == self.model_sha256

    def status(self, embedder: Embedder) -> str:
        """``"fitted"``, or what the calibration was fitted for instead of ``embedder``."""
        if self.fits(embedder):
            return "fitted"
        if self.stale:
            return f"approximate: {self.stale}"
        name, digest = embedder_identity(embedder)
        mine = f"{self.fitted_for} sha256 {(self.model_sha256 or '?')[:12]}"
        theirs = f"{name} sha256 {(digest or '?')[:12]}"
        return f"approximate: fitted for {mine}, active {theirs}"

    def probability(self, mode: str, evidence: Evidence, answerable: float = 1.0) -> float:
        """The probability that the hit serves the request (0..1): ``answerable`` (see
        :meth:`answerable`) times the probability that it is the fitting hit if one exists."""
        model = self.models[mode]
        x = evidence.values(MODE_FEATURES[mode])
        return answerable * _sigmoid(model.intercept, model.coef, x)

    def answerable(self, mode: str, request: RequestEvidence) -> float:
        """The probability that some indexed tool serves the request, from the legs' evidence
        about it (:func:`request_evidence`)."""
        model = self.models[mode]
        if not model.request_coef:
            return 1.0
        x = request.values(model.request_features)
        return _sigmoid(model.request_intercept, model.request_coef, x)

    def no_match_below(self, mode: str) -> float:
        """A request whose :meth:`answerable` is below this is flagged ``no_match``."""
        return self.models[mode].no_match_below

    def to_dict(self) -> dict[str, Any]:
        return {
            "fitted_for": self.fitted_for,
            "model_sha256": self.model_sha256,
            "provenance": self.provenance,
            "models": {
                mode: {
                    "features": list(MODE_FEATURES[mode]),
                    "coef": [round(c, 6) for c in m.coef],
                    "intercept": round(m.intercept, 6),
                    "no_match_below": round(m.no_match_below, 6),
                    "request": {
                        "features": list(m.request_features),
                        "coef": [round(c, 6) for c in m.request_coef],
                        "intercept": round(m.request_intercept, 6),
                    },
                    **({"score_map": m.score_map.to_dict()} if m.score_map else {}),
                }
                for mode, m in sorted(self.models.items())
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        """Raises: ConfigError when a mode is missing or its features differ from this code."""
        try:
            models: dict[str, ModeModel] = {}
            stale: str | None = None
            for mode, names in MODE_FEATURES.items():
                row = data["models"][mode]
                if list(row["features"]) != list(names):
                    raise ConfigError(
                        f"calibration features for {mode} are {row['features']!r}, this code "
                        f"computes {list(names)}; re-fit with `python bench/fit/calibrate.py`"
                    )
                coef = tuple(float(c) for c in row["coef"])
                if len(coef) != len(names):
                    raise ValueError(f"{mode}: {len(coef)} coefficients for {len(names)} features")
                request = row.get("request") or {"features": [], "coef": [], "intercept": 0.0}
                request_coef = tuple(float(c) for c in request["coef"])
                request_names = tuple(str(n) for n in request["features"])
                unknown = [n for n in request_names if n not in REQUEST_FIELDS]
                if request_coef and (unknown or len(request_names) != len(request_coef)):
                    # Hits still rank and score by their own model; only "is anything here
                    # answerable" is unknown, so no request is flagged until a re-fit.
                    stale = (
                        f"the request model for {mode} uses {list(request_names)!r}, this code "
                        f"computes {list(REQUEST_FIELDS)}; re-fit with "
                        "`python bench/fit/calibrate.py --write`"
                    )
                    request_coef = ()
                models[mode] = ModeModel(
                    coef,
                    float(row["intercept"]),
                    float(row["no_match_below"]),
                    request_coef,
                    float(request["intercept"]),
                    request_names if request_coef else (),
                    ScoreMap.from_dict(row["score_map"]) if row.get("score_map") else None,
                )
            digest = data.get("model_sha256")
            return cls(
                models,
                str(data["fitted_for"]),
                str(data.get("provenance", "")),
                str(digest) if digest else None,
                stale,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"calibration file is malformed: {exc}") from exc


def _sigmoid(intercept: float, coef: Sequence[float], x: Sequence[float]) -> float:
    z = intercept + sum(c * f for c, f in zip(coef, x, strict=True))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def embedder_identity(embedder: Embedder) -> tuple[str, str | None]:
    """The model's name and its graph's sha256 (None when the embedder does not say), seen
    through wrappers (caches, batching)."""
    inner: object = embedder
    while hasattr(inner, "inner"):
        inner = inner.inner
    digest = getattr(inner, "graph_sha256", None)
    return embedder.name, digest if isinstance(digest, str) else None


def load_calibration(path: Path | None = None) -> Calibration:
    """The packaged calibration (or the file at ``path``).

    Raises:
        ConfigError: missing or malformed file.
    """
    try:
        text = (
            path.read_text(encoding="utf-8")
            if path is not None
            else resources.files("toolscout.search").joinpath(CALIBRATION_FILE).read_text("utf-8")
        )
        data = json.loads(text)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the calibration file: {exc}") from exc
    return Calibration.from_dict(data)


def fit_logistic(
    features: NDArray[np.float64],
    labels: NDArray[np.float64],
    *,
    weights: NDArray[np.float64] | None = None,
    l2: float = 1e-3,
    iterations: int = 50,
) -> tuple[tuple[float, ...], float]:
    """Weighted L2-regularised logistic regression by Newton's method: ``(coef, intercept)``."""
    n, d = features.shape
    x = np.hstack([features, np.ones((n, 1))])
    w = np.ones(n) if weights is None else weights
    beta = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -50, 50)))
        grad = x.T @ (w * (p - labels)) + reg * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(reg)
        step = np.linalg.solve(hess + 1e-9 * np.eye(d + 1), grad)
        beta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return tuple(float(b) for b in beta[:-1]), float(beta[-1])


def scored_hits(
    calibration: Calibration,
    mode: SearchMode,
    top: Sequence[Scored],
    lexical: Sequence[Scored],
    vector: Sequence[Scored],
    *,
    tools: int,
    crowd: int,
    chances: dict[str, float] | None = None,
) -> list[tuple[Ranked, Evidence]]:
    """Each of the ``top`` fused hits with its evidence and calibrated score, over an index of
    ``tools`` tools; ``crowd``: how many vector candidates the standout is measured against;
    ``chances``: the learned ranker's probabilities, which then are the scores. A hit never
    scores above the one ranked before it, so the scores and the order tell one story."""
    # Each leg's rank and score by id, one dict per leg (the hot path of every search).
    lex = {h.id: (r, h.score) for r, h in enumerate(lexical, 1)}
    vec = {h.id: (r, h.score) for r, h in enumerate(vector, 1)}
    floor_cos = vector[-1].score if vector else 0.0
    near = vector[:crowd]  # the configured number of candidates, whatever the limit
    median = _median([h.score for h in near]) if near else 0.0
    idf = math.log(tools + 1.0)
    # Relative to the request's best hit in every mode (a vector run holds raw cosines).
    best = max((h.score for h in top), default=0.0)
    scale = 1.0 / best if mode is SearchMode.VECTOR and best > 0 else 1.0
    evidence: list[Evidence] = []
    for hit in top:
        c = vec[hit.id][1] if hit.id in vec else floor_cos
        evidence.append(
            Evidence(
                cosine=c if mode is not SearchMode.BM25 else None,
                standout=c - median if mode is not SearchMode.BM25 else None,
                lexical=(
                    (lex[hit.id][1] if hit.id in lex else 0.0) / idf
                    if mode is not SearchMode.VECTOR
                    else None
                ),
                relative=min(1.0, max(0.0, hit.score * scale)),
            )
        )
    # How likely it is that any tool serves the request: from the legs as they came back,
    # whatever the fusion or the ranker put first.
    request = request_evidence(lexical, vector, tools)
    answerable = calibration.answerable(mode.value, request) if request else 0.0
    ceiling = 1.0
    scores: list[float] = []
    for hit, ev in zip(top, evidence, strict=True):
        chance = (
            chances.get(hit.id, 0.0)
            if chances is not None
            else calibration.probability(mode.value, ev, answerable)
        )
        ceiling = min(ceiling, chance)
        scores.append(ceiling)
    mapping = calibration.models[mode.value].score_map if chances is None else None
    if mapping is not None and scores:
        seen = [Hit(s, e.relative, e.cosine or 0.0) for s, e in zip(scores, evidence, strict=True)]
        mapped = mapping.scores(seen, answerable, [h.score for h in vector])
        scores = list(itertools.accumulate(mapped, min))
    return [
        (Ranked(hit.id, s, _rank(lex, hit.id), _rank(vec, hit.id), answerable), ev)
        for hit, ev, s in zip(top, evidence, scores, strict=True)
    ]


def _median(values: list[float]) -> float:
    """``numpy.median``'s value (the middle one, or the mean of the middle two: the same
    operations on the same floats) without building an array: a fifth of its time on the 100
    cosines of every search."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _rank(leg: dict[str, tuple[int, float]], tool_id: str) -> int | None:
    found = leg.get(tool_id)
    return None if found is None else found[0]
