"""The learned ranker's stage built the plain way, to check the product's against: each
candidate's row looked up run by run through a dict per run, every tree walked node by node as
LightGBM walks it, and the candidates sorted in Python. The product (search/rank.py,
search/forest.py) builds the same rows column by column and finds each tree's leaf from bit
masks; both must give the same answers to the bit. :func:`previous_rerank` is the product's stage as
it was before (rows a run at a time, masks a feature at a time), which ``bench/search_stages.py``
times beside it (its ``row_ranker`` variant)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Scored
from toolscout.search.candidates import Candidate
from toolscout.search.forest import _LOWEST, Forest
from toolscout.search.rank import FEATURES, RRF_K, WHOLE_COLUMNS, Legs, Ranker

#: One tree as LightGBM writes it: split features, thresholds, children (leaf j is ``~j``) and
#: leaf values.
Tree = tuple[list[int], list[float], list[int], list[int], list[float]]


def reference_rows(
    legs: Legs, candidates: Sequence[str], tokens: Sequence[str], seen: Mapping[str, Candidate]
) -> NDArray[np.float64]:
    """One row of FEATURES per candidate, a run at a time through a dict."""
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
    names = [seen[tid].name for tid in candidates]
    if query:
        shared = [len(name & query) for name in names]
        rows[:, 15] = [s / (len(name) or 1) for s, name in zip(shared, names, strict=True)]
        rows[:, 16] = [s / len(query) for s in shared]
    else:
        rows[:, 15:17] = 0.0
    rows[:, 17:19] = _server_columns(legs.vector, candidates, cos, seen)
    rrf = 1.0 / (RRF_K + cos_rank)
    rrf += np.where(lex_rank <= len(legs.lexical), 1.0 / (RRF_K + lex_rank), 0.0)
    rows[:, 19] = rrf * RRF_K
    rows[:, -WHOLE_COLUMNS:] = _whole_columns(legs.whole, candidates)
    return rows


def _lookup(
    run: Sequence[Scored], candidates: Sequence[str], missing: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    at = {h.id: (r, h.score) for r, h in enumerate(run, 1)}
    absent = (len(run) + 1, missing)
    both = np.array([at.get(t, absent) for t in candidates], dtype=np.float64).reshape(-1, 2)
    return both[:, 1], both[:, 0]


def _server_columns(
    vector: Sequence[Scored],
    candidates: Sequence[str],
    cos: NDArray[np.float64],
    seen: Mapping[str, Candidate],
) -> NDArray[np.float64]:
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


def read_trees(text: str) -> list[Tree]:
    """The trees of LightGBM's text model, as written."""
    trees: list[Tree] = []
    for block in text.split("\n\n"):
        if not block.strip().startswith("Tree="):
            continue
        kv = dict(line.split("=", 1) for line in block.strip().splitlines() if "=" in line)

        def ints(key: str, kv: dict[str, str] = kv) -> list[int]:
            return [int(v) for v in kv.get(key, "").split()]

        thresholds = [float(v) for v in kv.get("threshold", "").split()]
        values = [float(v) for v in kv["leaf_value"].split()]
        trees.append(
            (ints("split_feature"), thresholds, ints("left_child"), ints("right_child"), values)
        )
    return trees


def walk(trees: Sequence[Tree], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row's leaf value in every tree, found node by node (a value at or below a split's
    threshold goes left), summed over the trees as the product sums them."""
    leaves = np.zeros((x.shape[0], len(trees)), dtype=np.float64)
    for i, row in enumerate(x.tolist()):
        for t, (feature, threshold, left, right, values) in enumerate(trees):
            node = 0
            while feature and node >= 0:
                node = left[node] if row[feature[node]] <= threshold[node] else right[node]
            leaves[i, t] = values[~node] if feature else values[0]
    out: NDArray[np.float64] = leaves.sum(axis=1)
    return out


def reference_rerank(
    ranker: Ranker,
    trees: Sequence[Tree],
    legs: Legs,
    ids: Sequence[str],
    x: NDArray[np.float64],
) -> tuple[list[Scored], dict[str, float]]:
    """search/rank.py's ``rerank`` with the trees walked node by node and the order sorted in
    Python (ties by id)."""
    raw = walk(trees, x)
    chance = ranker.probabilities(raw, x).tolist()
    order = sorted(range(len(ids)), key=lambda i: (-raw[i], ids[i]))
    head = [Scored(ids[i], chance[i]) for i in order]
    return head + [Scored(h.id, 0.0) for h in legs.fused[len(ids) :]], {h.id: h.score for h in head}


def previous_predict(forest: Forest, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The product's trees as they were evaluated before: one bisection per feature over every
    row, and the masks of the trees gathered and combined a feature at a time, 16 bits a tree."""
    if not forest.features:
        return np.full(x.shape[0], forest.values.reshape(-1, forest.leaves)[:, 0].sum())
    rows = np.empty((len(forest.features), x.shape[0]), dtype=np.int64)
    for j, (f, cut) in enumerate(zip(forest.features, forest.thresholds, strict=True)):
        rows[j] = np.searchsorted(cut, x[:, f], side="left")
    rows += forest.offsets[:, None]
    masks = forest.table.take(rows[0], axis=0)
    for row in rows[1:]:
        masks &= forest.table.take(row, axis=0)
    leaf = _LOWEST.take(masks).astype(np.int64)
    leaf += forest.starts
    out: NDArray[np.float64] = forest.values.take(leaf).sum(axis=1)
    return out


def previous_rerank(
    ranker: Ranker, legs: Legs, ids: Sequence[str], x: NDArray[np.float64]
) -> tuple[list[Scored], dict[str, float]]:
    """:func:`reference_rerank` with the trees evaluated as :func:`previous_predict` does (the
    product's stage before it was built a column at a time)."""
    raw = previous_predict(ranker.trees, x)
    chance = ranker.probabilities(raw, x).tolist()
    keys = [(-r, tid) for r, tid in zip(raw.tolist(), ids, strict=True)]
    order = sorted(range(len(ids)), key=keys.__getitem__)
    head = [Scored(ids[i], chance[i]) for i in order]
    return head + [Scored(h.id, 0.0) for h in legs.fused[len(ids) :]], {h.id: h.score for h in head}
