"""The learned ranker: re-scores the fused candidates of a hybrid search from every leg's signals.

A LightGBM LambdaRank model over per-(request, candidate) features (:data:`FEATURES`): the
candidate's cosine to the request and where it stands among the vector leg's candidates (gap to
the best, z-score, rank), its BM25 score in IDF units, relative to the best and its rank, the
hand-set fusion's score and rank, the legs' reciprocal ranks summed as RRF does, how much of
its name the request says; plus request-level context (intents, catalog
size, the best cosine and BM25 evidence). Gradient-boosted trees were chosen over a linear
model because the legs' value depends on context (BM25 counts when the request restates rare
words, not when it shares one stray term), which trees learn without hand-made interactions;
LambdaRank optimises the first places directly. Monotone constraints (:data:`MONOTONE`) keep
it from learning to punish a candidate for more evidence.

The model is LightGBM's own text dump (``ranker.txt``), evaluated here with numpy (every tree
walked at once, one step per level), so serving needs no LightGBM. It is off by default
(``SearchConfig.learned_ranker``): it does not beat every same-model baseline on every dev
set (docs/benchmarks/ranking.md). ``ranker.json`` beside it records the file's sha256 (checked
at load), the feature names, the command that fitted it, and the logistic calibration that
maps the ranker's output and its context (:data:`CALIBRATION_INPUTS`) to the probability that
the candidate is a right tool. Refit both with ``python bench/fit/ranker.py --write``, then the
score map that replaces that logistic one (search/rankcal.py, ``rankcal.json``) with
``python bench/fit/ranker_calibration.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError
from toolscout.models import Scored, Tool
from toolscout.search.rankcal import RankCalibration, load_rank_calibration
from toolscout.search.text import analyze

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
)

#: How each feature may move the ranker's output, in :data:`FEATURES` order (1: never down as
#: the feature grows, -1: never up, 0: free). Evidence for a candidate may only help it, so a
#: ranker cannot learn to punish a tool for matching the request better than its peers.
MONOTONE: tuple[int, ...] = (0, 0, 0, 0, 0, 0, 1, 1, 1, -1, 1, 1, -1, 1, -1, 1, 1, 0, 0, 1)

#: The k of the reciprocal-rank feature, as in RRF.
RRF_K = 60.0


@dataclass(frozen=True)
class Legs:
    """What one hybrid search's legs returned, best first."""

    lexical: Sequence[Scored]
    vector: Sequence[Scored]
    fused: Sequence[Scored]
    intents: int
    tools: int


def features(
    legs: Legs, candidates: Sequence[str], tokens: Sequence[str], tools: Mapping[str, Tool]
) -> NDArray[np.float64]:
    """One row of :data:`FEATURES` per candidate. ``tokens``: the request's analysed tokens;
    ``tools``: the candidates' tools (a missing one counts as an empty tool)."""
    idf = math.log(legs.tools + 1.0)
    cos = {h.id: h.score for h in legs.vector}
    cos_rank = {h.id: r for r, h in enumerate(legs.vector, 1)}
    lex = {h.id: h.score for h in legs.lexical}
    lex_rank = {h.id: r for r, h in enumerate(legs.lexical, 1)}
    fused = {h.id: h.score for h in legs.fused}
    fused_rank = {h.id: r for r, h in enumerate(legs.fused, 1)}
    crowd = np.array([h.score for h in legs.vector], dtype=np.float64)
    best_cos = float(crowd[0]) if crowd.size else 0.0
    floor_cos = float(crowd[-1]) if crowd.size else 0.0
    median = float(np.median(crowd)) if crowd.size else 0.0
    mu = float(crowd.mean()) if crowd.size else 0.0
    sd = float(crowd.std()) if crowd.size > 1 else 1.0
    best_lex = legs.lexical[0].score if legs.lexical else 0.0
    query = set(tokens)
    server = {tid: tools[tid].server or tid if tid in tools else tid for tid in candidates}
    # A tool's server peers: the best cosine among them (a request for one API often fits
    # several of its endpoints) and their share of the vector leg's first ten.
    server_best: dict[str, float] = {}
    for tid in candidates:
        s = server[tid]
        server_best[s] = max(server_best.get(s, -1.0), cos.get(tid, floor_cos))
    top_servers = [server.get(h.id, h.id) for h in legs.vector[:10]]
    context = [
        float(legs.intents),
        math.log(legs.tools + 1.0),
        best_lex / idf,
        best_cos,
        median,
        float(len(query)),
    ]
    rows = np.empty((len(candidates), len(FEATURES)), dtype=np.float64)
    for i, tid in enumerate(candidates):
        c = cos.get(tid, floor_cos)
        lx = lex.get(tid, 0.0)
        tool = tools.get(tid)
        name = _token_set(tool.name if tool else "")
        shared = len(name & query)
        rrf = 1.0 / (RRF_K + cos_rank.get(tid, len(legs.vector) + 1))
        if tid in lex_rank:
            rrf += 1.0 / (RRF_K + lex_rank[tid])
        rows[i] = [
            *context,
            c,
            c - best_cos,
            (c - mu) / max(sd, 1e-6),
            math.log1p(cos_rank.get(tid, len(legs.vector) + 1)),
            lx / idf,
            lx / best_lex if best_lex > 0 else 0.0,
            math.log1p(lex_rank.get(tid, len(legs.lexical) + 1)),
            fused.get(tid, 0.0),
            math.log1p(fused_rank.get(tid, len(legs.fused) + 1)),
            shared / len(name) if name else 0.0,
            shared / len(query) if query else 0.0,
            server_best[server[tid]] - best_cos,
            top_servers.count(server[tid]) / max(1, len(top_servers)),
            rrf * RRF_K,
        ]
    return rows


@lru_cache(maxsize=65536)
def _token_set(name: str) -> frozenset[str]:
    # Analysing a name costs more than the rest of its row; names repeat across requests.
    return frozenset(analyze(name))


@dataclass(frozen=True)
class Trees:
    """A forest packed for level-wise evaluation: every node of every tree in flat arrays; a
    leaf points to itself. Trees are ordered deepest first and ``active[level]`` says how many
    still have splits at that level, so shallow trees stop being walked once they are done."""

    feature: NDArray[np.int64]
    threshold: NDArray[np.float64]
    #: A node's left child at ``child[node]``, its right one at ``child[node + nodes]``.
    child: NDArray[np.int64]
    value: NDArray[np.float64]
    roots: NDArray[np.int64]
    active: tuple[int, ...]

    def predict(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """The sum of the trees' leaf values for each row of ``x``."""
        if x.shape[0] == 0:
            return np.zeros(0)
        # Flat gathers: a row's feature value is flat[row offset + feature].
        flat = np.ascontiguousarray(x, dtype=np.float64).ravel()
        offset = (np.arange(x.shape[0]) * x.shape[1])[:, None]
        nodes = self.value.size
        node = np.repeat(self.roots[None, :], x.shape[0], axis=0)
        for k in self.active:
            part = node[:, :k]
            right = flat[offset + self.feature[part]] > self.threshold[part]
            node[:, :k] = self.child[part + right * nodes]
        out: NDArray[np.float64] = self.value[node].sum(axis=1)
        return out


def parse_lightgbm(text: str) -> Trees:
    """Read LightGBM's text model (numerical splits only, as the fit script trains them).

    Raises:
        ConfigError: the text is not such a model.
    """
    blocks = [b.strip() for b in text.split("\n\n") if b.strip().startswith("Tree=")]
    if not blocks:
        raise ConfigError("ranker model holds no trees")
    # Columns: feature, threshold, left, right, value; one row per node of every tree.
    nodes: list[tuple[int, float, int, int, float]] = []
    roots: list[tuple[int, int]] = []  # (levels, root node)
    for block in blocks:
        kv = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if any(int(d) & 1 for d in kv.get("decision_type", "").split()):
            raise ConfigError("ranker model has categorical splits; this code reads numerical ones")
        tree, levels = _tree(kv, len(nodes))
        roots.append((levels, len(nodes)))
        nodes.extend(tree)
    roots.sort(key=lambda r: -r[0])
    cols = list(zip(*nodes, strict=True))
    return Trees(
        np.array(cols[0], dtype=np.int64),
        np.array(cols[1], dtype=np.float64),
        np.array(cols[2] + cols[3], dtype=np.int64),
        np.array(cols[4], dtype=np.float64),
        np.array([r for _, r in roots], dtype=np.int64),
        tuple(sum(1 for lv, _ in roots if lv > level) for level in range(roots[0][0])),
    )


def _tree(kv: dict[str, str], base: int) -> tuple[list[tuple[int, float, int, int, float]], int]:
    """One tree's nodes numbered from ``base`` (internal nodes keep LightGBM's numbers, leaf j
    becomes node ``inner + j``; a leaf points to itself), and its depth."""
    leaves = [float(v) for v in kv["leaf_value"].split()]
    split = [int(v) for v in kv.get("split_feature", "").split()]
    left = [int(v) for v in kv.get("left_child", "").split()]
    right = [int(v) for v in kv.get("right_child", "").split()]
    threshold = [float(v) for v in kv.get("threshold", "").split()]
    inner = len(split)

    def node(child: int) -> int:
        return base + (child if child >= 0 else inner + ~child)

    out = [(split[i], threshold[i], node(left[i]), node(right[i]), 0.0) for i in range(inner)]
    out.extend((0, math.inf, base + inner + j, base + inner + j, v) for j, v in enumerate(leaves))
    return out, _depth(left, right) if inner else 0


def _depth(left: list[int], right: list[int]) -> int:
    """The longest root-to-leaf path of one tree (children < 0 are leaves)."""
    deepest, stack = 0, [(0, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((c, level + 1) for c in (left[node], right[node]) if c >= 0)
    return deepest


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

    trees: Trees
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
    chance = ranker.probabilities(raw, x)
    order = sorted(range(len(ids)), key=lambda i: (-raw[i], ids[i]))
    head = [Scored(ids[i], float(chance[i])) for i in order]
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
