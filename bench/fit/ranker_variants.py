"""Ranker variants screened on every dev set beside the four same-model baselines.

    python bench/fit/ranker_variants.py --fit NAME [--features product|fusions] [--rounds 148]
                                        [--early] [--compose 600] [--compose3 0] [--balanced]
                                        [--param KEY=VALUE ...]
    python bench/fit/ranker_variants.py --measure packaged NAME ... [--split dev]

``--fit`` trains one LambdaRank model on the legs bench/fit/ranker.py cached (run it once first:
the same training requests, composed requests and settings; ``--compose3 N`` adds N three-part
requests per source, as ranker.py ``--compose3`` does) and writes it to
``bench/out/ranking/variants/NAME``. ``--features fusions`` adds the baselines' own evidence
beside the product's features (:func:`fusion_columns`): each candidate's place under RRF (k = 60)
of the two legs, the weighted RRF (0.3 lexical / 0.7 vector) and its place, and both fusions
again with the whole request's run in place of the vector leg's (what the baselines embed), so
that the ranker could fall back on any of them.

``--measure`` runs each named variant (``packaged``: the shipped ranker) through the product's
hybrid searcher (the learned ranker on; intent quotas and the exact-name rule as served) on every
set of bench/ranking.py and prints hit@3 / nDCG@10 beside the best of the four baselines, with
each variant's paired sign tests against the first named, then per variant the mean hit@3, the
mean margin over each set's best baseline and the sets where it misses a baseline by more than
0.5. Choose on ``--split dev`` only. Request embeddings are kept in the variants folder so that
each further variant costs only its searches.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ranker as fit_ranker
import ranker_data
from ranker_data import Searched

from natural import ROOT, Request, load_requests, open_index
from quality import peers
from ranking import all_sets
from toolscout.eval.metrics import mean, score_query, sign_test
from toolscout.models import Scored
from toolscout.search.forest import parse_lightgbm
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rank import (
    CALIBRATION_INPUTS,
    FEATURES,
    MONOTONE,
    RRF_K,
    Legs,
    Ranker,
    features,
    load_ranker,
    rerank,
)

OUT = ROOT / "bench" / "out" / "ranking" / "variants"
LEGS = ROOT / "bench" / "out" / "ranking" / "legs"
DB = ROOT / "bench" / "out" / "ranking" / "db"
BASELINES = ("cosine", "bm25s", "rrf", "weighted_rrf")
Extra = Callable[[Legs, list[str]], NDArray[np.float64]]
Rows = list[dict[str, float]]


def _ranks(run: list[Scored] | tuple[Scored, ...], ids: list[str]) -> NDArray[np.float64]:
    at = {h.id: r for r, h in enumerate(run, 1)}
    return np.array([at.get(t, len(run) + 1) for t in ids], dtype=np.float64)


def _place(value: NDArray[np.float64]) -> NDArray[np.float64]:
    """log(1 + place) of each candidate by ``value``, best first (ties: candidate order)."""
    out = np.empty(value.size)
    out[np.argsort(-value, kind="stable")] = np.arange(1, value.size + 1)
    return np.log1p(out)


def fusion_columns(legs: Legs, ids: list[str]) -> NDArray[np.float64]:
    """The baselines' evidence per candidate: its place under RRF of the legs, weighted RRF
    (0.3 lexical, 0.7 vector) and its place, and RRF and weighted RRF of the lexical leg with
    the whole request's run, each with its place."""
    lex = _ranks(list(legs.lexical), ids)
    lex_rr = np.where(lex <= len(legs.lexical), 1.0 / (RRF_K + lex), 0.0)
    vec_rr = 1.0 / (RRF_K + _ranks(list(legs.vector), ids))
    whole_rr = 1.0 / (RRF_K + _ranks(list(legs.whole or legs.vector), ids))
    rrf, wrrf = vec_rr + lex_rr, 0.7 * vec_rr + 0.3 * lex_rr
    w_rrf, w_wrrf = whole_rr + lex_rr, 0.7 * whole_rr + 0.3 * lex_rr
    cols = [_place(rrf), wrrf * RRF_K, _place(wrrf), w_rrf * RRF_K, _place(w_rrf)]
    return np.column_stack([*cols, w_wrrf * RRF_K, _place(w_wrrf)])


FUSION_NAMES = ("rrf_place", "wrrf", "wrrf_place", "whole_rrf", "whole_rrf_place")
FUSION_NAMES += ("whole_wrrf", "whole_wrrf_place")
FUSION_MONOTONE = (-1, 1, -1, 1, -1, 1, -1)
GROUPS: dict[str, tuple[Extra | None, tuple[str, ...], tuple[int, ...]]] = {
    "product": (None, (), ()),
    "fusions": (fusion_columns, FUSION_NAMES, FUSION_MONOTONE),
}


class VariantSearcher(HybridSearcher):
    """The product's hybrid searcher with request embeddings kept across variants and the
    variant's extra columns beside the product's features."""

    extra: Extra | None = None
    memo: ClassVar[dict[tuple[str, bool], Any]] = {}

    def embed_request(self, query: str, whole: bool) -> Any:
        key = (query, whole)
        if key not in self.memo:
            self.memo[key] = super().embed_request(query, whole)
        return self.memo[key]

    def _rerank(self, ranker: Ranker, legs: Legs, tokens: list[str], version: Any) -> Any:
        ids, x = self.candidate_features(legs, tokens, version)
        if self.extra is not None:
            x = np.hstack([x, self.extra(legs, ids)])
        return rerank(ranker, legs, ids, x)


def training(compose: int, compose3: int) -> tuple[list[Searched], list[Searched]]:
    """The cached legs of ranker.py's training and dev requests (ranker.py searches them)."""
    train: list[Searched] = []
    dev: list[Searched] = []
    for s in ranker_data.SOURCES:
        cap = 6000 if s == "metatool" else 0
        train += ranker_data.collect(s, "train", cap, DB, LEGS)
        dev += ranker_data.collect(s, "dev", 600, DB, LEGS)
        if compose:
            train += ranker_data.collect(s, "train", cap, DB, LEGS, compose)
        if compose3:
            train += ranker_data.collect(s, "train", cap, DB, LEGS, compose3, 3)
    return train, dev


def rows(
    searched: list[Searched], extra: Extra | None, balanced: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Feature rows, labels and group sizes of the requests whose candidates hold a gold tool,
    and a weight per row: 1, or (``balanced``) such that every source weighs as much as the
    mean source (ranker.py's ``--balanced``)."""
    catalogs = {s: ranker_data.catalog(s) for s in {r.source for r in searched}}
    sizes = {s: sum(r.source == s for r in searched) for s in catalogs}
    mean_size = sum(sizes.values()) / max(1, len(sizes))
    xs, ys, groups, weights = [], [], [], []
    for r in searched:
        ids = [h.id for h in r.legs.fused[: ranker_data.CANDIDATES]]
        y = np.array([float(i in r.gold) for i in ids])
        if not y.any():
            continue
        x = features(r.legs, ids, r.tokens, catalogs[r.source])
        xs.append(x if extra is None else np.hstack([x, extra(r.legs, ids)]))
        ys.append(y)
        groups.append(len(ids))
        weights.append(mean_size / sizes[r.source] if balanced else 1.0)
    weight = np.repeat(np.array(weights), groups)
    return np.vstack(xs), np.concatenate(ys), np.array(groups), weight


def fit(args: argparse.Namespace) -> None:
    extra, names, monotone = GROUPS[args.features]
    train, dev = training(args.compose, args.compose3)
    tx, ty, tg, tw = rows(train, extra, args.balanced)
    dx, dy, dg, _ = rows(dev, extra)
    params = dict(fit_ranker.PARAMS) | dict(json.loads(v) for v in args.param)
    params |= {
        "monotone_constraints": list(MONOTONE + monotone),
        "monotone_constraints_method": "advanced",
    }
    data = lgb.Dataset(tx, ty, weight=tw, group=tg, feature_name=list(FEATURES + names))
    valid = [lgb.Dataset(dx, dy, group=dg, reference=data)] if args.early else []
    stop = [lgb.early_stopping(50, first_metric_only=True, verbose=False)] if args.early else []
    t0 = time.perf_counter()
    model = lgb.train(params, data, num_boost_round=args.rounds, valid_sets=valid, callbacks=stop)
    best = (model.best_iteration or args.rounds) if args.early else args.rounds
    folder = OUT / args.fit
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ranker.txt").write_text(model.model_to_string(num_iteration=best), "utf-8")
    meta = {"features": args.features, "rounds": best, "params": args.param,
            "compose": args.compose, "compose3": args.compose3,
            "balanced": args.balanced}  # fmt: skip
    (folder / "variant.json").write_text(json.dumps(meta), "utf-8")
    print(f"{args.fit}: {tg.size} requests, {best} rounds, {time.perf_counter() - t0:.0f} s")


def variant(name: str) -> tuple[Ranker, Extra | None]:
    if name == "packaged":
        return load_ranker(), None
    meta = json.loads((OUT / name / "variant.json").read_text("utf-8"))
    extra, names, _ = GROUPS[meta["features"]]
    trees = parse_lightgbm((OUT / name / "ranker.txt").read_text("utf-8"))
    # Only the order is measured: the probabilities' map is left at zero.
    return Ranker(trees, FEATURES + names, (0.0,) * (len(CALIBRATION_INPUTS) + 1)), extra


def baselines(name: str, reqs: list[Request], engine: Any, tools: Any) -> dict[str, Rows]:
    """Per request, the four baselines' metrics (bench/ranking.py's), cached per set."""
    path = OUT / "baselines" / f"{name}_{reqs[0].split}.pkl"
    if path.is_file():
        cached: dict[str, Rows] = pickle.loads(path.read_bytes())
        return cached
    peer = peers(engine, tools)
    out: dict[str, Rows] = {b: [] for b in BASELINES}
    for r in reqs:
        runs = {"bm25s": peer["peer_bm25s"](r.text), "cosine": peer["peer_vector"](r.text)}
        for fused, w in (("rrf", (1.0, 1.0)), ("weighted_rrf", (0.3, 0.7))):
            score: dict[str, float] = {}
            for run, weight in ((runs["bm25s"], w[0]), (runs["cosine"], w[1])):
                for rank, tid in enumerate(run, 1):
                    score[tid] = score.get(tid, 0.0) + weight / (60 + rank)
            runs[fused] = sorted(score, key=lambda t: (-score[t], t))
        for b in BASELINES:
            out[b].append(score_query(runs[b][:10], r.gold))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(out))
    return out


def measure(names: list[str], split: str) -> dict[str, dict[str, Rows]]:
    report: dict[str, dict[str, Rows]] = {}
    memo = OUT / "embeddings.pkl"
    if memo.is_file():
        VariantSearcher.memo.update(pickle.loads(memo.read_bytes()))
    for set_name, ds in all_sets(ROOT / "data" / "natural").items():
        reqs = [r for r in load_requests(ds, 400) if r.split == split]
        if not reqs or not ds.tools.is_file():
            continue
        engine, tools = open_index(DB / f"{set_name}.db", ds.tools, set_name)
        by = baselines(set_name, reqs, engine, tools)
        for name in names:
            ranker, extra = variant(name)
            config = replace(engine.searcher.config, learned_ranker=True)
            searcher = VariantSearcher(engine.store, engine.embedder, config, ranker=ranker)
            searcher.extra = extra
            by[name] = [score_query([h.id for h in searcher.search(r.text)], r.gold) for r in reqs]
        engine.close()
        report[set_name] = by
        print(_line(set_name, split, by, names), flush=True)
    memo.write_bytes(pickle.dumps(VariantSearcher.memo))
    return report


def _pct(rows: Rows, metric: str) -> float:
    return 100 * mean(rows)[metric]


def _line(set_name: str, split: str, by: dict[str, Rows], names: list[str]) -> str:
    bh = max(BASELINES, key=lambda b: _pct(by[b], "hit@3"))
    bn = max(BASELINES, key=lambda b: _pct(by[b], "ndcg@10"))
    out = [f"{set_name} {split} (n={len(by[names[0]])}): best baseline hit@3 {bh} "
           f"{_pct(by[bh], 'hit@3'):.1f}, nDCG@10 {bn} {_pct(by[bn], 'ndcg@10'):.1f}"]  # fmt: skip
    for name in names:
        signs = []
        for metric in ("hit@3", "ndcg@10"):
            won, lost, p = sign_test(
                [r[metric] for r in by[name]], [r[metric] for r in by[names[0]]]
            )
            signs.append(f"+{won}/-{lost} (p={p:.2g})")
        out.append(f"  {name:24s} {_pct(by[name], 'hit@3'):5.1f} / {_pct(by[name], 'ndcg@10'):5.1f}"
                   f"  vs {names[0]}: {' / '.join(signs)}")  # fmt: skip
    return "\n".join(out)


def summary(report: dict[str, dict[str, Rows]], names: list[str]) -> None:
    print(
        "variant: mean hit@3, mean margin over each set's best baseline, misses (> 0.5), each "
        "with the paired sign test against the best baseline: requests better / worse (p)"
    )
    for name in names:
        hits, margins, misses = [], [], []
        for set_name, by in report.items():
            for metric in ("hit@3", "ndcg@10"):
                mine = _pct(by[name], metric)
                best = max(BASELINES, key=lambda b: _pct(by[b], metric))
                if metric == "hit@3":
                    hits.append(mine)
                    margins.append(mine - _pct(by[best], metric))
                if mine < _pct(by[best], metric) - 0.5:
                    misses.append(_miss(set_name, metric, by[name], by[best], best))
        print(f"  {name:24s} {np.mean(hits):.2f}  {np.mean(margins):+.2f}  {'; '.join(misses)}")


def _miss(set_name: str, metric: str, mine: Rows, theirs: Rows, baseline: str) -> str:
    """One set where a variant misses its best baseline, with the paired sign test."""
    won, lost, p = sign_test([r[metric] for r in mine], [r[metric] for r in theirs])
    return (
        f"{set_name} {metric} {_pct(mine, metric):.1f} < {baseline} {_pct(theirs, metric):.1f} "
        f"({won} / {lost}, p = {p:.2g})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--fit", default=None, help="fit a variant under this name")
    add("--features", choices=list(GROUPS), default="product")
    add("--rounds", type=int, default=148)
    add("--early", action="store_true", help="early stopping on ranker.py's dev requests")
    add("--compose", type=int, default=600)
    add("--compose3", type=int, default=0)
    add("--balanced", action="store_true", help="every source weighs the same")
    add("--param", nargs="*", default=[], help='LightGBM settings as JSON pairs, e.g. ["a", 1]')
    add("--measure", nargs="*", default=[], help="variants to measure, the reference first")
    add("--split", choices=("dev", "test"), default="dev")
    args = parser.parse_args()
    if args.fit:
        fit(args)
    if args.measure:
        summary(measure(args.measure, args.split), args.measure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
