"""Fit the learned ranker (search/rank.py) and its probability calibration.

    python bench/fit/ranker.py [--write] [--max-train 3000] [--db-dir DIR]

Data: the ``train`` requests of ``data/natural`` (MetaTool at most ``--max-train`` of them, an
even stride; Gorilla APIBench and BFCL all), each searched over its source's whole catalog;
candidates are the first 100 hits of the hand-set fusion (the hard negatives the legs mine
themselves), labelled 1 when the tool is a gold tool. Requests whose gold is not among them
teach nothing to a ranker and are left out. Splits are by tool (data/natural/README.md), so no
dev tool is the gold of a training request.

Model: LightGBM LambdaRank, early-stopped on the ``dev`` requests of the same sources (nDCG@3).
Calibration: Platt scaling of the ranker's output (raw score and its gap to the request's best)
over each request's first ten candidates, on out-of-fold predictions: the training requests in
three folds, each scored by a model fitted on the other two with the chosen number of rounds.
``--write`` puts ``ranker.txt`` and ``ranker.json`` (sha256, features, calibration, this
command) beside search/rank.py.
Requires ``pip install lightgbm==4.7.0`` (training only; serving reads the text model itself).
Feature rows are cached in ``--cache`` (delete it after changing the features).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from natural import ROOT, datasets, open_index
from toolscout.search.calibration import fit_logistic
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rank import FEATURES, META_FILE, MODEL_FILE

SOURCES = ("metatool", "gorilla_apibench", "bfcl")
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [3, 10],
    "lambdarank_truncation_level": 20,
    "num_leaves": 15,
    "min_data_in_leaf": 50,
    "learning_rate": 0.05,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "seed": 7,
    "verbose": -1,
}
Rows = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]


def requests(source: str, split: str, cap: int) -> list[tuple[str, tuple[str, ...]]]:
    path = ROOT / "data" / "natural" / source / "queries.jsonl"
    rows = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    picked = [(str(r["query"])[:1000], tuple(r["gold"])) for r in rows
              if r.get("split") == split and r.get("gold")]  # fmt: skip
    step = max(1, -(-len(picked) // cap)) if cap else 1
    return picked[::step]


def collect(source: str, split: str, cap: int, db_dir: Path, cache: Path) -> Rows:
    """Feature rows, labels and group sizes of one source's split (cached)."""
    path = cache / f"{source}_{split}_{cap}.npz"
    if path.is_file():
        z = np.load(path)
        return z["x"], z["y"], z["g"]
    ds = datasets(ROOT / "data" / "natural")[source]
    engine, _ = open_index(db_dir / f"{source}.db", ds.tools, source)
    searcher = HybridSearcher(
        engine.store, engine.embedder, replace(engine.searcher.config, learned_ranker=False)
    )
    xs: list[NDArray[np.float64]] = []
    ys: list[NDArray[np.float64]] = []
    groups: list[int] = []
    for text, gold in requests(source, split, cap):
        legs, tokens = searcher.legs(text)
        ids, x = searcher.candidate_features(legs, tokens)
        y = np.array([float(i in gold) for i in ids])
        if not y.any():
            continue
        xs.append(x), ys.append(y), groups.append(len(ids))
    searcher.close()
    engine.close()
    out = (np.vstack(xs), np.concatenate(ys), np.array(groups, dtype=np.int64))
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, x=out[0], y=out[1], g=out[2])
    print(f"{source} {split}: {len(groups)} requests with a gold candidate", flush=True)
    return out


def stack(parts: list[Rows]) -> Rows:
    return (np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))  # fmt: skip


def train(rows: Rows, dev: Rows | None, rounds: int) -> lgb.Booster:
    data = lgb.Dataset(rows[0], rows[1], group=rows[2], feature_name=list(FEATURES))
    valid = [lgb.Dataset(dev[0], dev[1], group=dev[2], reference=data)] if dev else []
    stop = [lgb.early_stopping(50, first_metric_only=True, verbose=False)] if dev else []
    return lgb.train(PARAMS, data, num_boost_round=rounds, valid_sets=valid, callbacks=stop)


def hits_at_3(raw: NDArray[np.float64], rows: Rows) -> float:
    """Share of requests with a gold candidate in the first three by ``raw`` (ties: fused order,
    which is the candidates' stored order)."""
    out, start = [], 0
    for size in rows[2]:
        order = np.argsort(-raw[start : start + size], kind="stable")[:3]
        out.append(float(rows[1][start : start + size][order].any()))
        start += size
    return float(np.mean(out))


def platt(raw: NDArray[np.float64], rows: Rows, top: int = 10) -> tuple[float, float, float]:
    """Fit ``sigmoid(a * raw + b * (raw - request best) + c)`` to the labels of each request's
    first ``top`` candidates by ``raw``: the hits a caller reads, not the bulk of the 100."""
    x: list[tuple[float, float]] = []
    y: list[float] = []
    start = 0
    for size in rows[2]:
        part = raw[start : start + size]
        for i in np.argsort(-part, kind="stable")[:top]:
            x.append((float(part[i]), float(part[i] - part.max())))
            y.append(float(rows[1][start + i]))
        start += size
    coef, intercept = fit_logistic(np.array(x), np.array(y))
    return coef[0], coef[1], intercept


def folds(rows: Rows, k: int) -> list[NDArray[np.bool_]]:
    """Row masks of ``k`` folds of whole requests (request i goes to fold i % k)."""
    request_of = np.repeat(np.arange(rows[2].size), rows[2])
    return [request_of % k == f for f in range(k)]


def subset(rows: Rows, mask: NDArray[np.bool_]) -> Rows:
    request_of = np.repeat(np.arange(rows[2].size), rows[2])
    kept = np.unique(request_of[mask])
    return rows[0][mask], rows[1][mask], rows[2][kept]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="write the packaged ranker files")
    parser.add_argument("--max-train", type=int, default=3000, help="MetaTool training requests")
    parser.add_argument("--max-dev", type=int, default=600, help="dev requests per source")
    parser.add_argument("--rounds", type=int, default=600)
    parser.add_argument("--fixed-rounds", type=int, default=0, help="skip early stopping")
    parser.add_argument(
        "--calibrate-on", choices=("train", "dev"), default="train",
        help="train: out-of-fold predictions of the training requests; dev: the dev requests",
    )  # fmt: skip
    parser.add_argument(
        "--folder", type=Path, default=ROOT / "src" / "toolscout" / "search",
        help="where --write puts the files (default: the packaged ranker's)",
    )  # fmt: skip
    parser.add_argument("--db-dir", type=Path, default=ROOT / "bench" / "out" / "ranking" / "db")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / "out" / "ranking" / "rows")
    parser.add_argument(
        "--train-on", choices=("train", "dev"), default="train",
        help="dev: learn from the dev requests, rounds chosen by 3-fold cross-validation",
    )  # fmt: skip
    args = parser.parse_args()
    t0 = time.perf_counter()
    caps = {"metatool": args.max_train}
    dev = stack([collect(s, "dev", args.max_dev, args.db_dir, args.cache) for s in SOURCES])
    if args.train_on == "train":
        tr = stack([collect(s, "train", caps.get(s, 0), args.db_dir, args.cache) for s in SOURCES])
        model = train(tr, None if args.fixed_rounds else dev, args.fixed_rounds or args.rounds)
        best = args.fixed_rounds or model.best_iteration or args.rounds
    else:
        tr = dev
        stops = [train(subset(tr, ~m), subset(tr, m), args.rounds).best_iteration
                 for m in folds(tr, 3)]  # fmt: skip
        best = max(1, int(np.mean(stops)))
        model = train(tr, None, best)
        print(f"cross-validated rounds {stops}")
    print(f"rows: train {tr[2].size} requests / {tr[0].shape[0]} candidates, dev {dev[2].size}")
    fused = -np.log1p(np.concatenate([np.arange(1, s + 1) for s in dev[2]]).astype(np.float64))
    learned = model.predict(dev[0], num_iteration=best)
    print(f"rounds {best}; dev hit@3 of the candidates: fusion {100 * hits_at_3(fused, dev):.1f}"
          f", ranker {100 * hits_at_3(learned, dev):.1f}")  # fmt: skip
    if args.calibrate_on == "dev":
        # The dev requests are held out from the ranker and from the embedder behind its
        # cosines; the training requests' cosines come from a model trained on them.
        calibration = platt(learned, dev)
    else:
        oof = np.empty(tr[0].shape[0])
        for mask in folds(tr, 3):
            part = train(subset(tr, ~mask), None, best)
            oof[mask] = part.predict(tr[0][mask])
        print(f"out-of-fold hit@3: {100 * hits_at_3(oof, tr):.1f}")
        calibration = platt(oof, tr)
    print(f"platt {calibration}; fitted in {time.perf_counter() - t0:.0f} s")
    gain = model.feature_importance("gain", iteration=best)
    for name, g in sorted(zip(FEATURES, gain, strict=True), key=lambda kv: -kv[1]):
        print(f"  {name:18s} {g:10.0f}")
    if args.write:
        folder = args.folder
        text = model.model_to_string(num_iteration=best)
        (folder / MODEL_FILE).write_text(text, encoding="utf-8")
        meta = {
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "features": list(FEATURES),
            "platt": [round(v, 6) for v in calibration],
            "rounds": best,
            "provenance": (
                f"bench/fit/ranker.py --write --max-train {args.max_train} --max-dev "
                f"{args.max_dev} --train-on {args.train_on} --fixed-rounds {best} "
                f"--calibrate-on {args.calibrate_on}: LightGBM {lgb.__version__} LambdaRank "
                f"on {tr[2].size} {args.train_on} requests of data/natural ({', '.join(SOURCES)}), "
                f"{best} rounds; Platt on the {args.calibrate_on} requests' first ten candidates"
            ),
        }
        (folder / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {folder / MODEL_FILE} ({len(text)} bytes) and {META_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
