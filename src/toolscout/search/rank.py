"""The learned ranker: re-scores the fused candidates of a hybrid search from every leg's signals.

A LightGBM LambdaRank model over per-(request, candidate) features (:data:`FEATURES`): the
candidate's cosine to the request and where it stands among the vector leg's candidates (gap to
the best, z-score, rank), its BM25 score in IDF units, relative to the best and its rank, the
hand-set fusion's score and rank, the legs' reciprocal ranks summed as RRF does, how much of
its name the request says, and its cosine to the *whole* request (the vector leg embeds each
intent of a request apart and keeps a tool's best, which costs requests that spread one need
over several sentences): by default the intents' rows averaged by length, no embedding
(``SearchConfig.whole_request``), with its gap, z-score and rank in that row's own run of
nearest tools; plus request-level context (intents, catalog size, the best cosine and
BM25 evidence). Gradient-boosted trees were chosen over a linear
model because the legs' value depends on context (BM25 counts when the request restates rare
words, not when it shares one stray term), which trees learn without hand-made interactions;
LambdaRank optimises the first places directly. Monotone constraints (:data:`MONOTONE`) keep
it from learning to punish a candidate for more evidence. The rows are built in
search/rankrows.py (the names are re-exported here).

The model is LightGBM's own text dump (``ranker.txt``), evaluated with numpy
(search/forest.py), so serving needs no LightGBM. It is on by default
(``SearchConfig.learned_ranker``): on no dev set is it significantly worse than the hand-set
fusion and on average a little better (docs/benchmarks/ranking.md); :func:`serving_ranker`
says when it cannot serve (another embedding model or fusion). ``ranker.json`` beside it
records the file's sha256 (checked at load), the feature names, the command that fitted it,
and a logistic calibration of the ranker's output and its context (:data:`CALIBRATION_INPUTS`).
The score map that replaces that logistic one when it was fitted for these trees
(search/rankcal.py, ``rankcal.json``) gives the probability that the candidate is a right tool.
Refit both with one command, ``python bench/fit/ranker.py --write --fixed-rounds 148`` (it runs
``bench/fit/ranker_calibration.py --write`` for the new trees).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError
from toolscout.models import Scored
from toolscout.search.config import SearchConfig
from toolscout.search.forest import Copies, Forest, parse_lightgbm
from toolscout.search.rankcal import RankCalibration, load_rank_calibration
from toolscout.search.rankrows import FEATURES as FEATURES
from toolscout.search.rankrows import REQUEST_COLUMNS as REQUEST_COLUMNS
from toolscout.search.rankrows import RRF_K as RRF_K
from toolscout.search.rankrows import WHOLE_COLUMNS as WHOLE_COLUMNS
from toolscout.search.rankrows import Legs as Legs
from toolscout.search.rankrows import candidate_rows as candidate_rows
from toolscout.search.rankrows import copied_columns as copied_columns
from toolscout.search.rankrows import features as features

log = logging.getLogger("toolscout.search")

MODEL_FILE = "ranker.txt"
META_FILE = "ranker.json"

#: How each feature may move the ranker's output, in :data:`FEATURES` order (1: never down as
#: the feature grows, -1: never up, 0: free). Evidence for a candidate may only help it, so a
#: ranker cannot learn to punish a tool for matching the request better than its peers.
MONOTONE: tuple[int, ...] = (
    *(0, 0, 0, 0, 0, 0, 1, 1, 1, -1, 1, 1, -1, 1, -1, 1, 1, 0, 0, 1),
    *(1, 1, 1, -1),
)

#: The calibration's inputs per candidate: the ranker's output, its gap to the request's best,
#: the candidate's place (log of 1 + its 0-based position), and evidence that means the same
#: in any catalog (the cosine and its gap, BM25 in IDF units, the catalog's size).
CALIBRATION_INPUTS: tuple[str, ...] = (
    "raw",
    "raw_gap",
    "position",
    "cosine",
    "cosine_gap",
    "lexical_evidence",
    "log_tools",
)


def calibration_inputs(raw: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """One row of :data:`CALIBRATION_INPUTS` per candidate of one request (``x``: its rows of
    :data:`FEATURES`, ``raw``: the ranker's output for them)."""
    if raw.size == 0:
        return np.zeros((0, len(CALIBRATION_INPUTS)))
    position = np.empty(raw.size)
    position[np.argsort(-raw, kind="stable")] = np.arange(raw.size)
    col = FEATURES.index
    return np.column_stack(
        [
            raw,
            raw - raw.max(),
            np.log1p(position),
            x[:, col("cosine")],
            x[:, col("cosine_gap")],
            x[:, col("lexical_evidence")],
            x[:, col("log_tools")],
        ]
    )


@dataclass(frozen=True)
class Ranker:
    """The packaged model: trees, the features they read, and the map from the ranker's output
    and its context to the probability that a candidate is a right tool: ``rankcal``
    (search/rankcal.py) when one was fitted for these trees, else the logistic map of
    ``calibration``."""

    trees: Forest
    features: tuple[str, ...]
    #: Weights of :data:`CALIBRATION_INPUTS`, then the intercept (``ranker.json``'s own map).
    calibration: tuple[float, ...]
    provenance: str = ""
    rankcal: RankCalibration | None = None
    #: ``"fitted"`` when ``rankcal`` maps the scores, else why ``calibration`` does.
    calibration_status: str = "fitted"

    def scores(
        self, x: NDArray[np.float64], shared: int = 0, copies: Copies = ()
    ) -> NDArray[np.float64]:
        """The ranker's raw output per row (higher is better; not a probability); ``shared``:
        how many leading columns every row shares (:data:`REQUEST_COLUMNS` for one request's
        rows), ``copies``: pairs (column, original) of columns that hold the same values
        (:func:`copied_columns`)."""
        return self.trees.predict(x, shared, copies)

    def probabilities(
        self,
        raw: NDArray[np.float64],
        x: NDArray[np.float64],
        order: NDArray[np.intp] | None = None,
    ) -> NDArray[np.float64]:
        """The probability that each candidate is a right tool, from one request's raw scores
        and feature rows (``order``: the rows by falling ``raw``, ties in row order, if known)."""
        if raw.size == 0:
            return raw
        if self.rankcal is not None:
            return self.rankcal.probabilities(raw, x, self.features, order)
        coef = np.asarray(self.calibration[:-1])
        z = calibration_inputs(raw, x) @ coef + self.calibration[-1]
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
        return out


def rerank(
    ranker: Ranker, legs: Legs, ids: Sequence[str], x: NDArray[np.float64]
) -> tuple[list[Scored], dict[str, float]]:
    """The candidates ``ids`` (rows of ``x``, one request's: :func:`candidate_rows`) in the
    ranker's order (ties by id), scored by their probability of being a right tool, then the
    rest of the fused run in its order, scored 0 (the probability the hits report for them);
    and each candidate's probability. The run's scores are then on one scale: a step that adds
    to them and sorts again (what was learned from use) cannot lift the fusion's own scores of
    the tail above the ranker's probabilities."""
    raw = ranker.scores(x, REQUEST_COLUMNS, copied_columns(legs))
    by_raw = (-raw).argsort(kind="stable")
    chance = ranker.probabilities(raw, x, by_raw).tolist()
    head = [Scored(ids[i], chance[i]) for i in _order(raw, ids, by_raw)]
    tail = [Scored(h.id, 0.0) for h in legs.fused[len(ids) :]]
    return head + tail, dict(zip(ids, chance, strict=True))


def _order(raw: NDArray[np.float64], ids: Sequence[str], by_raw: NDArray[np.intp]) -> list[int]:
    """The rows by falling ``raw``, ties by id (``by_raw``: by falling ``raw``, ties in row
    order)."""
    out: list[int] = by_raw.tolist()
    ranked = raw.take(by_raw)
    if (ranked[1:] == ranked[:-1]).any():
        # Already by falling output: the sort only reorders runs of ties, in about one
        # comparison a row.
        keys = list(zip((-raw).tolist(), ids, strict=True))
        out.sort(key=keys.__getitem__)
    return out


def load_ranker(folder: Path | None = None) -> Ranker:
    """The packaged ranker (or the one in ``folder``), its model file checked against the sha256
    its metadata records, with the score map fitted for it (search/rankcal.py) when there is one.

    Raises:
        ConfigError: missing, altered or malformed files, or features this code does not compute.
    """
    try:
        if folder is not None:
            model = (folder / MODEL_FILE).read_bytes()
            meta: dict[str, Any] = json.loads((folder / META_FILE).read_text("utf-8"))
        else:
            here = resources.files("toolscout.search")
            model = here.joinpath(MODEL_FILE).read_bytes()
            meta = json.loads(here.joinpath(META_FILE).read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the ranker: {exc}") from exc
    digest = hashlib.sha256(model).hexdigest()
    if digest != meta.get("sha256"):
        raise ConfigError(
            f"{MODEL_FILE} has sha256 {digest[:12]}, {META_FILE} records "
            f"{str(meta.get('sha256'))[:12]}; refit with `python bench/fit/ranker.py --write`"
        )
    if tuple(meta.get("features", ())) != FEATURES:
        raise ConfigError(
            f"the ranker reads {meta.get('features')!r}, this code computes {list(FEATURES)}; "
            "refit with `python bench/fit/ranker.py --write`"
        )
    try:
        calibration = meta["calibration"]
        inputs = tuple(calibration["inputs"])
        weights = tuple(float(v) for v in [*calibration["coef"], calibration["intercept"]])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{META_FILE} is malformed: {exc}") from exc
    if inputs != CALIBRATION_INPUTS or len(weights) != len(inputs) + 1:
        raise ConfigError(
            f"the ranker's calibration reads {list(inputs)!r}, this code computes "
            f"{list(CALIBRATION_INPUTS)}; refit with `python bench/fit/ranker.py --write`"
        )
    trees = parse_lightgbm(model.decode("utf-8"))
    rankcal, status = load_rank_calibration(digest, FEATURES, folder)
    return Ranker(trees, FEATURES, weights, str(meta.get("provenance", "")), rankcal, status)


#: Reasons the ranker is off already logged (once per process each).
_LOGGED: set[str] = set()


def config_blocks(config: SearchConfig) -> str | None:
    """Why a search with ``config`` cannot run the learned ranker, or None when it can."""
    if not config.learned_ranker:
        return "learned_ranker = false"
    if config.fusion != "adaptive":
        # Its features include the adaptive fusion's score and rank: another fusion's are not
        # what it learned from.
        return f"fusion = {config.fusion!r}: the ranker reads the adaptive fusion's scores"
    return None


def serving_ranker(
    config: SearchConfig, calibration_status: str, given: Ranker | None = None
) -> tuple[Ranker | None, str | None]:
    """The ranker a searcher with ``config`` uses (``given``, else the packaged one), or None
    and why the fusion's order stands instead. ``calibration_status``: the hand-set fusion's
    (search/calibration.py); anything but ``"fitted"`` means another embedding model than the
    one whose cosines the packaged ranker learned from."""
    blocked = config_blocks(config)
    if blocked is not None:
        return None, blocked
    if given is not None:
        return given, None
    if calibration_status != "fitted":
        reason = (
            f"fitted with the packaged model's cosines (scores are {calibration_status}); "
            "the hand-set fusion ranks instead"
        )
        level = logging.INFO  # another model is an expected case, and metadata says so
    else:
        try:
            return load_ranker(), None
        except ConfigError as exc:
            reason, level = str(exc), logging.WARNING
    if reason not in _LOGGED:
        _LOGGED.add(reason)
        log.log(level, "learned ranker off: %s", reason)
    return None, reason
