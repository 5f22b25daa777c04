"""Fit the learned ranker (search/rank.py) and its probability calibration.

    python bench/fit/ranker.py [--write] [--compose 600] [--fixed-rounds 148] [--max-train 6000]
                               [--db-dir DIR] [--whole ROW] [--extra GROUP ... --folder DIR]

The packaged ranker: ``--write --fixed-rounds 148`` (early stopping on the dev requests chose
148 rounds; ``--compose`` is 600 and ``--whole`` the product's row, the intents' rows averaged,
unless given; ``--whole embedded`` fits for the whole text embedded beside the intents, written
to ``--folder DIR`` and measured with ``bench/ranking.py --ranker DIR --whole embedded``).

Data: the ``train`` requests of ``data/natural``, each searched over its source's whole
catalog: MetaTool's at most ``--max-train`` (an even stride) of those the packaged embedder did
*not* learn from (train_embedder.py took 25 per tool; on those its cosine is nearly always
right, which taught an earlier ranker to trust it blindly), Gorilla APIBench's and BFCL's all.
Candidates are the first 100 hits of the hand-set fusion (the hard negatives the legs mine
themselves), labelled 1 when the tool is a gold tool. Splits are by tool
(data/natural/README.md), so no dev tool is the gold of a training request. ``--compose N``
adds N two-part requests per source, each two training requests for different tools joined as
"A. B" with both gold: the training splits hold few requests of several intents each served by
its own tool, and without them the whole request's cosine taught the ranker to lose the second
tool of such requests (ToolBench G2/G3, Seal-Tools: docs/benchmarks/ranking.md).

Model: LightGBM LambdaRank with monotone constraints (search/rank.py ``MONOTONE``: evidence
for a candidate never lowers it), early-stopped on the ``dev`` requests of the same sources
(nDCG@3). Calibration: a logistic map of the ranker's output and context
(search/rank.py ``CALIBRATION_INPUTS``) over each request's first ten candidates, on
out-of-fold predictions: the training requests in three folds, each scored by a model fitted
on the other two with the chosen number of rounds; requests whose gold the legs missed count
too. ``--write`` puts ``ranker.txt`` and ``ranker.json`` (sha256, features, calibration, this
command) beside search/rank.py, then runs ``bench/fit/ranker_calibration.py --write``, which fits
the score map that replaces that logistic calibration (search/rankcal.py) for the new ranker
(``--no-score-map``: keep the packaged ``rankcal.json``, which then no longer matches and is set
aside at load). So one command refits everything the ranker ships from a fresh clone:
``python bench/fit/ranker.py --write --fixed-rounds 148``.
Requires ``pip install lightgbm==4.7.0`` (training only; serving reads the text model itself).
Each request's legs are cached in ``--cache``, so changing the features needs no new searches
(delete it after changing the legs or the model).

``--extra`` adds feature groups the product does not compute (bench/fit/peer_view.py: the
peer text's cosine, ``name: description``'s, field-wise BM25); such a refit is written to
``--folder`` and measured with ``bench/ranking.py --candidate DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_view import (
    GROUPS,
    ToolViews,
    build_views,
    extra_features,
    extra_monotone,
    extra_names,
)
from ranker_data import CANDIDATES, SOURCES, Searched, catalog, collect

from natural import ROOT, datasets, open_index
from toolscout.search.calibration import fit_logistic
from toolscout.search.config import SearchConfig, WholeRequest
from toolscout.search.rank import (
    CALIBRATION_INPUTS,
    FEATURES,
    META_FILE,
    MODEL_FILE,
    MONOTONE,
    calibration_inputs,
    features,
)

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
Rows = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]
#: Where the packaged ranker's files live.
PACKAGED = ROOT / "src" / "toolscout" / "search"
#: Extra feature groups (peer_view.py GROUPS) and each source's tool views, set by main().
EXTRA: tuple[str, ...] = ()
#: The whole request's row the legs are searched with (``--whole``), set by main().
WHOLE: WholeRequest = SearchConfig().whole_request
VIEWS: dict[str, ToolViews] = {}


def names() -> tuple[str, ...]:
    return FEATURES + extra_names(EXTRA)


def views_of(source: str, db_dir: Path, cache: Path) -> ToolViews:
    ds = datasets(ROOT / "data" / "natural")[source]
    engine, tools = open_index(db_dir / f"{source}.db", ds.tools, source)
    views = build_views(tools, engine.embedder, cache)
    engine.close()
    return views


def rows_of(searched: list[Searched], weights: dict[str, float], every: bool = False) -> Rows:
    """Feature rows, labels, group sizes and per-request weights. Requests without a gold
    candidate teach a ranker nothing and are left out, unless ``every`` (the calibration must
    see them: their first hits are all wrong)."""
    tools = {s: catalog(s) for s in {r.source for r in searched}}
    xs: list[NDArray[np.float64]] = []
    ys: list[NDArray[np.float64]] = []
    groups: list[int] = []
    w: list[float] = []
    for r in searched:
        ids = [h.id for h in r.legs.fused[:CANDIDATES]]
        y = np.array([float(i in r.gold) for i in ids])
        if not (every or y.any()):
            continue
        x = features(r.legs, ids, r.tokens, tools[r.source])
        if EXTRA:
            extra = extra_features(VIEWS[r.source], EXTRA, r.request, ids)
            x = np.hstack([x, extra])
        xs.append(x)
        ys.append(y), groups.append(len(ids)), w.append(weights.get(r.source, 1.0))
    return np.vstack(xs), np.concatenate(ys), np.array(groups, dtype=np.int64), np.array(w)


def stack(parts: list[Rows]) -> Rows:
    x = np.vstack([p[0] for p in parts])
    y, g, w = (np.concatenate([p[k] for p in parts]) for k in (1, 2, 3))
    return x, y, g, w


def train(rows: Rows, dev: Rows | None, rounds: int, params: dict[str, Any]) -> lgb.Booster:
    """A LambdaRank model, early-stopped on ``dev`` (nDCG@3) when given; each request's rows
    weigh its source's weight."""
    weight = np.repeat(rows[3], rows[2])
    data = lgb.Dataset(rows[0], rows[1], weight=weight, group=rows[2], feature_name=list(names()))
    valid = [lgb.Dataset(dev[0], dev[1], group=dev[2], reference=data)] if dev else []
    stop = [lgb.early_stopping(50, first_metric_only=True, verbose=False)] if dev else []
    return lgb.train(params, data, num_boost_round=rounds, valid_sets=valid, callbacks=stop)


def hits_at_3(raw: NDArray[np.float64], rows: Rows) -> float:
    """Share of requests with a gold candidate in the first three by ``raw`` (ties: fused order,
    which is the candidates' stored order)."""
    out, start = [], 0
    for size in rows[2]:
        order = np.argsort(-raw[start : start + size], kind="stable")[:3]
        out.append(float(rows[1][start : start + size][order].any()))
        start += size
    return float(np.mean(out))


def calibrate(raw: NDArray[np.float64], rows: Rows, top: int = 10) -> list[float]:
    """Fit the logistic map of search/rank.py (weights of CALIBRATION_INPUTS, then the
    intercept) to the labels of each request's first ``top`` candidates by ``raw``: the hits a
    caller reads, not the bulk of the 100."""
    xs: list[NDArray[np.float64]] = []
    ys: list[NDArray[np.float64]] = []
    start = 0
    for size in rows[2]:
        part = raw[start : start + size]
        first = np.argsort(-part, kind="stable")[:top]
        xs.append(calibration_inputs(part, rows[0][start : start + size])[first])
        ys.append(rows[1][start : start + size][first])
        start += size
    coef, intercept = fit_logistic(np.vstack(xs), np.concatenate(ys))
    return [*coef, intercept]


def has_gold(rows: Rows) -> NDArray[np.bool_]:
    """Row mask of the requests with a gold candidate."""
    request_of = np.repeat(np.arange(rows[2].size), rows[2])
    return np.bincount(request_of, weights=rows[1], minlength=rows[2].size)[request_of] > 0


def folds(rows: Rows, k: int) -> list[NDArray[np.bool_]]:
    """Row masks of ``k`` folds of whole requests (request i goes to fold i % k)."""
    request_of = np.repeat(np.arange(rows[2].size), rows[2])
    return [request_of % k == f for f in range(k)]


def subset(rows: Rows, mask: NDArray[np.bool_]) -> Rows:
    request_of = np.repeat(np.arange(rows[2].size), rows[2])
    kept = np.unique(request_of[mask])
    return rows[0][mask], rows[1][mask], rows[2][kept], rows[3][kept]


def params(args: argparse.Namespace) -> dict[str, Any]:
    out = dict(PARAMS, num_leaves=args.leaves, min_data_in_leaf=args.min_leaf)
    if args.monotone:
        mono = list(MONOTONE + extra_monotone(EXTRA))
        out |= {"monotone_constraints": mono, "monotone_constraints_method": "advanced"}
    return out


def weights(parts: dict[str, list[Searched]], balanced: bool) -> dict[str, float]:
    """Per-request weight of each source: 1, or (balanced) such that every source weighs as
    much as the mean source, so that MetaTool's thousands of requests do not decide alone."""
    if not balanced:
        return {}
    mean_size = sum(len(v) for v in parts.values()) / len(parts)
    return {s: mean_size / max(1, len(v)) for s, v in parts.items()}


def report(model: lgb.Booster, rounds: int, dev: dict[str, Rows]) -> None:
    """Per dev source: hit@3 of the candidates in the fusion's order and in the ranker's."""
    for source, rows in dev.items():
        fused = -np.log1p(np.concatenate([np.arange(1, s + 1) for s in rows[2]]).astype(float))
        learned = model.predict(rows[0], num_iteration=rounds)
        before, after = 100 * hits_at_3(fused, rows), 100 * hits_at_3(learned, rows)
        print(f"  dev {source:17s} n={rows[2].size:4d} hit@3 {before:5.1f} -> {after:5.1f}")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--write", action="store_true", help="write the packaged ranker files")
    add("--max-train", type=int, default=6000, help="MetaTool training requests")
    add("--max-dev", type=int, default=600, help="dev requests per source")
    add("--rounds", type=int, default=600)
    add("--fixed-rounds", type=int, default=0, help="skip early stopping")
    add("--leaves", type=int, default=PARAMS["num_leaves"])
    add("--min-leaf", type=int, default=PARAMS["min_data_in_leaf"])
    flag = argparse.BooleanOptionalAction
    add("--monotone", action=flag, default=True, help="evidence may only raise a candidate")
    add("--balanced", action=flag, default=False, help="every source weighs the same")
    add("--score-map", action=flag, default=True,
        help="with --write to the packaged folder: refit rankcal.json for it")  # fmt: skip
    add("--calibrate-on", choices=("train", "dev"), default="train",
        help="train: out-of-fold predictions of the training requests; dev: dev ones")  # fmt: skip
    add("--folder", type=Path, default=PACKAGED,
        help="where --write puts the files (default: the packaged ranker's)")  # fmt: skip
    add("--db-dir", type=Path, default=ROOT / "bench" / "out" / "ranking" / "db")
    add("--cache", type=Path, default=ROOT / "bench" / "out" / "ranking" / "legs")
    add("--compose", type=int, default=600,
        help="two-part requests composed of training requests, per source")  # fmt: skip
    add("--compose3", type=int, default=0,
        help="three-part requests composed of training requests, per source")  # fmt: skip
    add("--whole", choices=("embedded", "intents_mean"), default=WHOLE,
        help="the whole request's row (default: SearchConfig.whole_request)")  # fmt: skip
    add("--extra", nargs="*", default=[], choices=list(GROUPS),
        help="extra feature groups (bench/fit/peer_view.py): second views of tools")  # fmt: skip
    args = parser.parse_args()
    packaged = args.write and args.folder == parser.get_default("folder")
    if packaged and args.extra:
        parser.error("--extra: the product computes no extra features; write to --folder DIR")
    if packaged and args.whole != WHOLE:
        parser.error(
            f"--whole {args.whole}: the product's whole-request row is {WHOLE} "
            "(SearchConfig.whole_request); write to --folder DIR"
        )
    return args


def main() -> int:
    args = parse()
    global EXTRA, WHOLE
    EXTRA = tuple(args.extra)
    WHOLE = args.whole
    t0 = time.perf_counter()
    caps = {"metatool": args.max_train}
    folders = (args.db_dir, args.cache)
    train_parts = {s: collect(s, "train", caps.get(s, 0), *folders, whole=WHOLE) for s in SOURCES}
    dev_parts = {s: collect(s, "dev", args.max_dev, *folders, whole=WHOLE) for s in SOURCES}
    if args.compose:
        for s in SOURCES:
            train_parts[s] = train_parts[s] + collect(
                s, "train", caps.get(s, 0), *folders, args.compose, whole=WHOLE
            )
    if args.compose3:
        for s in SOURCES:
            train_parts[s] = train_parts[s] + collect(
                s, "train", caps.get(s, 0), *folders, args.compose3, 3, whole=WHOLE
            )
    if EXTRA:
        VIEWS.update({s: views_of(s, args.db_dir, args.cache) for s in SOURCES})
    w = weights(train_parts, args.balanced)
    every = stack([rows_of(v, w, every=True) for v in train_parts.values()])
    tr = subset(every, has_gold(every))
    devs = {s: rows_of(v, {}) for s, v in dev_parts.items()}
    dev = stack(list(devs.values()))
    config = params(args)
    model = train(tr, None if args.fixed_rounds else dev, args.fixed_rounds or args.rounds, config)
    best = args.fixed_rounds or model.best_iteration or args.rounds
    print(f"rows: train {tr[2].size} requests / {tr[0].shape[0]} candidates, dev {dev[2].size}"
          f"; {best} rounds")  # fmt: skip
    report(model, best, devs)
    if args.calibrate_on == "dev":
        full = stack([rows_of(v, {}, every=True) for v in dev_parts.values()])
        calibration = calibrate(model.predict(full[0], num_iteration=best), full)
    else:
        # Out of fold: each third of the training requests scored by a model fitted on the
        # other two, every request kept (a request whose gold the legs missed counts too).
        oof = np.empty(every[0].shape[0])
        for mask in folds(every, 3):
            part = train(subset(every, ~mask & has_gold(every)), None, best, config)
            oof[mask] = part.predict(every[0][mask])
        print(f"out-of-fold hit@3: {100 * hits_at_3(oof, every):.1f}")
        calibration = calibrate(oof, every)
    print(f"calibration {[round(v, 3) for v in calibration]}; "
          f"fitted in {time.perf_counter() - t0:.0f} s")  # fmt: skip
    gain = model.feature_importance("gain", iteration=best)
    for name, g in sorted(zip(names(), gain, strict=True), key=lambda kv: -kv[1]):
        print(f"  {name:20s} {g:10.0f}")
    if args.write:
        write(args, model, best, calibration, tr[2].size)
        fit_score_map(args, t0)
    return 0


def fit_score_map(args: argparse.Namespace, t0: float) -> None:
    """The packaged score map refitted for the ranker just written (ranker_calibration.py),
    unless ``--no-score-map`` or the ranker went to another folder."""
    print(f"ranker fitted in {time.perf_counter() - t0:.0f} s")
    if not args.score_map or args.folder != PACKAGED:
        return
    script = Path(__file__).with_name("ranker_calibration.py")
    command = [sys.executable, str(script), "--write", "--db-dir", str(args.db_dir)]
    subprocess.run(command, check=True)
    print(f"ranker and its score map fitted in {time.perf_counter() - t0:.0f} s")


def write(
    args: argparse.Namespace,
    model: lgb.Booster,
    best: int,
    calibration: list[float],
    requests: int,
) -> None:
    folder = args.folder
    folder.mkdir(parents=True, exist_ok=True)
    text = model.model_to_string(num_iteration=best)
    (folder / MODEL_FILE).write_text(text, encoding="utf-8")
    flags = " ".join(
        f"--{'' if on else 'no-'}{name}"
        for name, on in (("monotone", args.monotone), ("balanced", args.balanced))
    )
    meta = {
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "features": list(names()),
        "extra_groups": list(EXTRA),
        "whole_request": WHOLE,
        "calibration": {
            "inputs": list(CALIBRATION_INPUTS),
            "coef": [round(v, 6) for v in calibration[:-1]],
            "intercept": round(calibration[-1], 6),
        },
        "rounds": best,
        "provenance": (
            f"bench/fit/ranker.py --write --max-train {args.max_train} --max-dev {args.max_dev} "
            f"--leaves {args.leaves} --min-leaf {args.min_leaf} {flags} --fixed-rounds {best} "
            f"--calibrate-on {args.calibrate_on} --compose {args.compose}"
            f"{f' --compose3 {args.compose3}' if args.compose3 else ''}"
            f"{' --extra ' + ' '.join(EXTRA) if EXTRA else ''}"
            f"{' --whole ' + WHOLE if WHOLE != 'embedded' else ''}"
            f": LightGBM {lgb.__version__} LambdaRank on "
            f"{requests} train requests of data/natural ({', '.join(SOURCES)}; MetaTool's "
            f"without those the embedder learned from), {best} rounds; logistic calibration on "
            f"the {args.calibrate_on} requests' first ten candidates"
        ),
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {folder / MODEL_FILE} ({len(text)} bytes) and {META_FILE}")


if __name__ == "__main__":
    sys.exit(main())
