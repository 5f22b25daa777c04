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
it from learning to punish a candidate for more evidence.

The model is LightGBM's own text dump (``ranker.txt``), evaluated with numpy
(search/forest.py), so serving needs no LightGBM. It is off by default
(``SearchConfig.learned_ranker``): on no dev set is it significantly worse than the hand-set
fusion and on average a little better, but its cost at 100k tools is measured against the
latency targets before it is (docs/benchmarks/ranking.md). ``ranker.json`` beside it
records the file's sha256 (checked at load), the feature names, the command that fitted it,
and a logistic calibration of the ranker's output and its context (:data:`CALIBRATION_INPUTS`).
The score map that replaces that logistic one when it was fitted for these trees
(search/rankcal.py, ``rankcal.json``) gives the probability that the candidate is a right tool.
Refit with ``python bench/fit/ranker.py --write --fixed-rounds 148``, then
``python bench/fit/ranker_calibration.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError
from toolscout.models import Scored, Tool
from toolscout.search.candidates import Candidate, candidate, missing
from toolscout.search.forest import Forest, parse_lightgbm
from toolscout.search.rankcal import RankCalibration, load_rank_calibration

MODEL_FILE = "ranker.txt"
META_FILE = "ranker.json"

#: The ranker's inputs, in column order (see the module docstring).
FEATURES: tuple[str, ...] = (
    "intents",
    "log_tools",
    "lexical_evidence",
    "best_cosine",
    "median_cosine",
    "query_tokens",
    "cosine",
    "cosine_gap",
    "cosine_z",
    "vector_rank",
    "lexical",
    "lexical_relative",
    "lexical_rank",
    "fused",
    "fused_rank",
    "name_overlap",
    "name_covered",
    "server_best_gap",
    "server_share",
    "rrf",
    "whole_cosine",
    "whole_gap",
    "whole_z",
    "whole_rank",
)

#: How each feature may move the ranker's output, in :data:`FEATURES` order (1: never down as
#: the feature grows, -1: never up, 0: free). Evidence for a candidate may only help it, so a
#: ranker cannot learn to punish a tool for matching the request better than its peers.
MONOTONE: tuple[int, ...] = (
    *(0, 0, 0, 0, 0, 0, 1, 1, 1, -1, 1, 1, -1, 1, -1, 1, 1, 0, 0, 1),
    *(1, 1, 1, -1),
)

#: The whole request's columns, last in :data:`FEATURES`.
WHOLE_COLUMNS = 4

#: The k of the reciprocal-rank feature, as in RRF.
RRF_K = 60.0


@dataclass(frozen=True)
class Legs:
    """What one hybrid search's legs returned, best first. ``whole``: the nearest tools to the
    whole request's row (for a request of one intent, the vector leg's run)."""

    lexical: Sequence[Scored]
    vector: Sequence[Scored]
    fused: Sequence[Scored]
    intents: int
    tools: int
    whole: Sequence[Scored] = ()


def features(
    legs: Legs, candidates: Sequence[str], tokens: Sequence[str], tools: Mapping[str, Tool]
) -> NDArray[np.float64]:
    """One row of :data:`FEATURES` per candidate. ``tokens``: the request's analysed tokens;
    ``tools``: the candidates' tools (a missing one counts as an empty tool)."""
    seen = {
        tid: candidate(tid, tools[tid].name, tools[tid].server) if tid in tools else missing(tid)
        for tid in candidates
    }
    return candidate_rows(legs, candidates, tokens, seen)


def candidate_rows(
    legs: Legs, candidates: Sequence[str], tokens: Sequence[str], seen: Mapping[str, Candidate]
) -> NDArray[np.float64]:
    """:func:`features` from the ranker's view of each candidate (search/candidates.py), which
    ``seen`` holds for every one of them."""
    idf = math.log(legs.tools + 1.0)
    crowd = np.array([h.score for h in legs.vector], dtype=np.float64)
    best_cos = float(crowd[0]) if crowd.size else 0.0
    floor_cos = float(crowd[-1]) if crowd.size else 0.0
    best_lex = legs.lexical[0].score if legs.lexical else 0.0
    query = set(tokens)
    rows = np.empty((len(candidates), len(FEATURES)), dtype=np.float64)
    rows[:, :6] = [
        float(legs.intents),
        math.log(legs.tools + 1.0),
        best_lex / idf,
        best_cos,
        float(np.median(crowd)) if crowd.size else 0.0,
        float(len(query)),
    ]
    cos, cos_rank = _lookup(legs.vector, candidates, floor_cos)
    lex, lex_rank = _lookup(legs.lexical, candidates, 0.0)
    mu = float(crowd.mean()) if crowd.size else 0.0
    sd = float(crowd.std()) if crowd.size > 1 else 1.0
    rows[:, 6] = cos
    rows[:, 7] = cos - best_cos
    rows[:, 8] = (cos - mu) / max(sd, 1e-6)
    rows[:, 9] = np.log1p(cos_rank)
    rows[:, 10] = lex / idf
    rows[:, 11] = lex / best_lex if best_lex > 0 else 0.0
    rows[:, 12] = np.log1p(lex_rank)
    fused, fused_rank = _lookup(legs.fused, candidates, 0.0)
    rows[:, 13] = fused
    rows[:, 14] = np.log1p(fused_rank)
    rows[:, 15:17] = _name_columns(candidates, query, seen)
    rows[:, 17:19] = _server_columns(legs.vector, candidates, cos, seen)
    # Reciprocal ranks as RRF sums them: a tool the lexical leg did not return adds nothing.
    rrf = 1.0 / (RRF_K + cos_rank)
    rrf += np.where(lex_rank <= len(legs.lexical), 1.0 / (RRF_K + lex_rank), 0.0)
    rows[:, 19] = rrf * RRF_K
    rows[:, -WHOLE_COLUMNS:] = _whole_columns(legs.whole, candidates)
    return rows


def _lookup(
    run: Sequence[Scored], candidates: Sequence[str], missing: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each candidate's score in ``run`` (``missing`` when it is not there) and its place from
    1 (one past the run's end when it is not there)."""
    at = {h.id: (r, h.score) for r, h in enumerate(run, 1)}
    absent = (len(run) + 1, missing)
    both = np.array([at.get(t, absent) for t in candidates], dtype=np.float64).reshape(-1, 2)
    return both[:, 1], both[:, 0]


def _name_columns(
    candidates: Sequence[str], query: set[str], seen: Mapping[str, Candidate]
) -> NDArray[np.float64]:
    """How much of each candidate's name the request says, and how much of the request its
    name covers."""
    out = np.zeros((len(candidates), 2), dtype=np.float64)
    if not query:
        return out
    names = [seen[tid].name for tid in candidates]
    shared = [len(name & query) for name in names]
    out[:, 0] = shared
    out[:, 0] /= [len(name) or 1 for name in names]
    out[:, 1] = shared
    out[:, 1] /= len(query)
    return out


def _server_columns(
    vector: Sequence[Scored],
    candidates: Sequence[str],
    cos: NDArray[np.float64],
    seen: Mapping[str, Candidate],
) -> NDArray[np.float64]:
    """A tool's server peers: the best cosine among them (a request for one API often fits
    several of its endpoints), as a gap to the vector leg's best, and their share of the
    vector leg's first ten."""
    servers = [seen[tid].server for tid in candidates]
    server = dict(zip(candidates, servers, strict=True))
    best: dict[str, float] = {}
    for s, c in zip(servers, cos.tolist(), strict=True):
        best[s] = max(best.get(s, -1.0), c)
    top = Counter(server.get(h.id, h.id) for h in vector[:10])
    size = max(1, min(10, len(vector)))
    best_cos = vector[0].score if vector else 0.0
    out = np.empty((len(candidates), 2), dtype=np.float64)
    out[:, 0] = [best[s] - best_cos for s in servers]
    out[:, 1] = [top[s] / size for s in servers]
    return out


def _whole_columns(run: Sequence[Scored], candidates: Sequence[str]) -> NDArray[np.float64]:
    """Per candidate: its cosine in the whole request's run (one outside it takes the run's
    last cosine), the gap to the run's best, its z-score and log rank in the run; zeros
    without a run."""
    out = np.zeros((len(candidates), WHOLE_COLUMNS), dtype=np.float64)
    if not run:
        return out
    crowd = np.array([h.score for h in run], dtype=np.float64)
    sims, rank = _lookup(run, candidates, float(crowd[-1]))
    sd = float(crowd.std()) if crowd.size > 1 else 1.0
    out[:, 0] = sims
    out[:, 1] = sims - crowd[0]
    out[:, 2] = (sims - crowd.mean()) / max(sd, 1e-6)
    out[:, 3] = np.log1p(rank)
    return out


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

    def scores(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """The ranker's raw output per row (higher is better; not a probability)."""
        return self.trees.predict(x)

    def probabilities(
        self, raw: NDArray[np.float64], x: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The probability that each candidate is a right tool, from one request's raw scores
        and feature rows."""
        if raw.size == 0:
            return raw
        if self.rankcal is not None:
            return self.rankcal.probabilities(raw, x, self.features)
        coef = np.asarray(self.calibration[:-1])
        z = calibration_inputs(raw, x) @ coef + self.calibration[-1]
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
        return out


def rerank(
    ranker: Ranker, legs: Legs, ids: Sequence[str], x: NDArray[np.float64]
) -> tuple[list[Scored], dict[str, float]]:
    """The candidates ``ids`` (rows of ``x``) in the ranker's order (ties by id), then the rest
    of the fused run as it was; and each candidate's probability of being a right tool."""
    raw = ranker.scores(x)
    chance = ranker.probabilities(raw, x).tolist()
    keys = [(-r, tid) for r, tid in zip(raw.tolist(), ids, strict=True)]
    order = sorted(range(len(ids)), key=keys.__getitem__)
    head = [Scored(ids[i], chance[i]) for i in order]
    return head + list(legs.fused[len(ids) :]), {h.id: h.score for h in head}


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
