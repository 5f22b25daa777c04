"""Re-fit the score calibration (src/toolscout/search/calibration.json) for the current model.

    python bench/calibrate.py --write [--embed-model local:tool-minilm-l6] [--max-train 300]

The fit is for the embedding model the engine opens by default (or ``--embed-model``); the file
records its name and the sha256 of its graph, and a search with any other model reports its
scores as approximate (``metadata["calibration"]``). Re-run this after changing the default
model.

1. Fit, per search mode, two logistic models on the **training** requests of data/natural
   (metatool, gorilla_apibench, bfcl; their tools and requests are disjoint from every dev and
   test split by construction):
   * "this hit is the one that serves the request": each training request is searched over its
     own catalog; its top 10 give rows (a hit is positive when it is gold), and the top 10
     without its gold tools give negative rows;
   * "some indexed tool serves the request", from the best hit's evidence: positive for each
     training request over its own catalog; negative for the same request with its gold tools
     taken out (a near miss) and for requests of the *other* training sources searched over this
     catalog (APIs of another domain; a rare accidental fit there is label noise).
   A hit's score is the product of the two.
2. Choose ``no_match_below`` (a bound on ``P(answerable)``) per mode on **dev** requests only:
   the highest threshold that flags
   at most 5 % of the answerable dev requests, pooled (the paraphrase set's odd ids, the dev
   splits of data/natural, the multi-intent set), then report the share of each dev set and of
   the no-match dev requests (tests/data/no_match, odd ids) it flags.
3. With ``--write``, store the result beside the code.
4. Only then, report what the chosen thresholds flag on the held-out no-match requests
   (tests/data/no_match, even ids); nothing here chooses anything on them or on a test split.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from natural import (
    DEFAULT_MODEL,
    ROOT,
    SHARED,
    TESTS,
    _odd_dev,
    datasets,
    db_folder,
    load_requests,
    open_index,
)
from toolscout.engine import Engine
from toolscout.models import SearchMode
from toolscout.search.calibration import (
    CALIBRATION_FILE,
    MODE_FEATURES,
    REQUEST_FEATURES,
    Calibration,
    Evidence,
    ModeModel,
    embedder_identity,
    fit_logistic,
    load_calibration,
)

MODES = ("hybrid", "vector", "bm25")
TRAIN_SOURCES = ("metatool", "gorilla_apibench", "bfcl")
MAX_FLAGGED = 0.05


def _train_requests(path: Path, limit: int) -> list[tuple[str, tuple[str, ...]]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    train = [(r["query"][:1000], tuple(r["gold"])) for r in rows if r.get("split") == "train"]
    step = max(1, -(-len(train) // limit)) if limit else 1
    return train[::step]


def _sample(items: list[Any], limit: int) -> list[Any]:
    step = max(1, -(-len(items) // limit)) if limit else 1
    return items[::step]


Rows = dict[str, list[tuple[list[float], float]]]


def training_rows(
    engine: Engine, requests: list[tuple[str, tuple[str, ...]]], request_rows: Rows
) -> Rows:
    """Feature rows per mode: the top 10 over the whole catalog (gold hits positive), and the
    top 10 once the gold tools are taken out (all negative; each hit's relative score is
    re-based on the best remaining hit, as if the gold tools were not indexed)."""
    rows: dict[str, list[tuple[list[float], float]]] = {m: [] for m in MODES}
    for text, gold in requests:
        gold_set = set(gold)
        for mode in MODES:
            names = MODE_FEATURES[mode]
            found = engine.searcher.search_evidence(
                text, mode=SearchMode(mode), limit=10 + len(gold_set)
            )
            for ranked, ev in found[:10]:
                rows[mode].append((ev.values(names), float(ranked.id in gold_set)))
            rest = [ev for ranked, ev in found if ranked.id not in gold_set][:10]
            best_names = REQUEST_FEATURES[mode]
            if found:
                request_rows[mode].append((found[0][1].values(best_names), 1.0))
            if rest:
                request_rows[mode].append((rest[0].values(best_names), 0.0))
            top = max((ev.relative for ev in rest), default=0.0)
            for ev in rest:
                rebased = replace(ev, relative=ev.relative / top if top > 0 else 0.0)
                rows[mode].append((rebased.values(names), 0.0))
    return rows


def foreign_rows(engine: Engine, texts: list[str], request_rows: Rows) -> None:
    """Negative request rows: the best hit of requests written for another catalog."""
    for text in texts:
        for mode in MODES:
            found = engine.searcher.search_evidence(text, mode=SearchMode(mode), limit=1)
            if found:
                request_rows[mode].append((found[0][1].values(REQUEST_FEATURES[mode]), 0.0))


def top_evidence(engine: Engine, texts: list[str]) -> dict[str, list[Evidence | None]]:
    """The best hit's evidence per request and mode (None: nothing found)."""
    out: dict[str, list[Evidence | None]] = {m: [] for m in MODES}
    for text in texts:
        for mode in MODES:
            found = engine.searcher.search_evidence(text, mode=SearchMode(mode), limit=1)
            out[mode].append(found[0][1] if found else None)
    return out


def _prob(model: ModeModel, mode: str, ev: Evidence | None) -> float:
    if ev is None:
        return 0.0
    return Calibration({mode: model}, "-").answerable(mode, ev)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--natural", type=Path, default=ROOT / "data" / "natural")
    parser.add_argument("--max-train", type=int, default=300, help="per source; 0 = all")
    parser.add_argument("--max-dev", type=int, default=300, help="per dev set; 0 = all")
    parser.add_argument(
        "--max-foreign", type=int, default=100, help="per source, searched over the others"
    )
    parser.add_argument("--embed-model", default=DEFAULT_MODEL, help="the model to fit for")
    parser.add_argument("--db-dir", type=Path, default=None, help="default: bench/out/natural/db")
    parser.add_argument("--write", action="store_true", help="write calibration.json")
    parser.add_argument(
        "--thresholds-only", action="store_true", help="keep the packaged fit, redo step 2"
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    sets = datasets(args.natural)
    model = args.embed_model
    db_dir = args.db_dir or db_folder(ROOT / "bench" / "out" / "natural" / "db", model)

    # 1. fit on training requests
    rows: Rows = {m: [] for m in MODES}
    request_rows: Rows = {m: [] for m in MODES}
    embedder, digest = "", None
    sources = TRAIN_SOURCES if not args.thresholds_only else ()
    requests = {src: _train_requests(sets[src].queries, args.max_train) for src in sources}
    for source in sources:
        ds = sets[source]
        engine, _ = open_index(db_dir / f"{source}.db", ds.tools, source, model)
        embedder, digest = embedder_identity(engine.embedder)
        reqs = requests[source]
        for mode, part in training_rows(engine, reqs, request_rows).items():
            rows[mode].extend(part)
        foreign = [
            text
            for other in sources
            if other != source
            for text, _ in _sample(requests[other], args.max_foreign)
        ]
        foreign_rows(engine, foreign, request_rows)
        print(f"{source}: {len(reqs)} training requests, {len(foreign)} foreign", flush=True)
        engine.close()
    models: dict[str, ModeModel] = {}
    if args.thresholds_only:
        packaged = load_calibration()
        models, embedder = dict(packaged.models), packaged.fitted_for
        digest = packaged.model_sha256
    for mode in MODES if not args.thresholds_only else ():
        x = np.array([f for f, _ in rows[mode]], dtype=np.float64)
        y = np.array([lab for _, lab in rows[mode]], dtype=np.float64)
        coef, intercept = fit_logistic(x, y)
        rx = np.array([f for f, _ in request_rows[mode]], dtype=np.float64)
        ry = np.array([lab for _, lab in request_rows[mode]], dtype=np.float64)
        rcoef, rintercept = fit_logistic(rx, ry)
        models[mode] = ModeModel(coef, intercept, 0.0, rcoef, rintercept)
        print(f"{mode}: {len(y)} hit rows, {int(y.sum())} positive; coef {coef} b {intercept:.3f}")
        print(f"{mode}: {len(ry)} request rows, {int(ry.sum())} answerable; coef {rcoef} "
              f"b {rintercept:.3f}")  # fmt: skip

    # 2. thresholds on dev requests
    answerable: dict[str, dict[str, list[Evidence | None]]] = {}
    dev_sets = ["livemcp_paraphrase", *TRAIN_SOURCES]
    for name in dev_sets:
        ds = sets[name]
        reqs = [r for r in load_requests(ds, args.max_dev) if r.split == "dev"]
        engine, _ = open_index(db_dir / f"{name}.db", ds.tools, name, model)
        answerable[name] = top_evidence(engine, [r.text for r in reqs])
        engine.close()
    catalogs = {
        "builtin": ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
        "livemcpbench": SHARED / "livemcpbench" / "tools.jsonl",
    }
    nm_rows = [
        json.loads(x) for x in (TESTS / "no_match" / "queries.jsonl").read_text().splitlines()
    ]
    mi_rows = [
        json.loads(x) for x in (TESTS / "multi_intent" / "queries.jsonl").read_text().splitlines()
    ]
    unanswerable: dict[str, list[Evidence | None]] = {m: [] for m in MODES}
    held_out: dict[str, list[Evidence | None]] = {m: [] for m in MODES}
    for name, path in catalogs.items():
        engine, _ = open_index(db_dir / f"no_match_{name}.db", path, name, model)
        part = top_evidence(engine, [r["query"] for r in nm_rows if _odd_dev(r) == "dev"])
        test = top_evidence(engine, [r["query"] for r in nm_rows if _odd_dev(r) == "test"])
        for mode in MODES:
            unanswerable[mode].extend(part[mode])
            held_out[mode].extend(test[mode])
        answerable[f"multi_intent:{name}"] = top_evidence(
            engine, [r["query"] for r in mi_rows if r["group"] == name]
        )
        engine.close()
    report: dict[str, Any] = {}
    for mode in MODES:
        fit = models[mode]
        # At most 5 % of all answerable dev requests flagged (pooled over the dev sets).
        pooled = [_prob(fit, mode, e) for evs in answerable.values() for e in evs[mode]]
        cut = float(np.quantile(pooled, MAX_FLAGGED))
        models[mode] = replace(fit, no_match_below=round(cut, 6))
        flagged = {
            name: float(np.mean([_prob(fit, mode, e) < cut for e in evs[mode]]))
            for name, evs in answerable.items()
        }
        caught = float(np.mean([_prob(fit, mode, e) < cut for e in unanswerable[mode]]))
        # Reported only: the held-out half chose nothing.
        caught_test = float(np.mean([_prob(fit, mode, e) < cut for e in held_out[mode]]))
        report[mode] = {
            "no_match_below": cut,
            "answerable_flagged": flagged,
            "answerable_flagged_pooled": float(np.mean([p < cut for p in pooled])),
            "no_match_flagged_dev": caught,
            "no_match_flagged_test": caught_test,
        }
        print(
            f"{mode}: no_match_below {cut:.3f}; no-match dev flagged {100 * caught:.1f} %, "
            f"held-out (even ids) {100 * caught_test:.1f} %; answerable dev flagged: "
            + ", ".join(f"{k} {100 * v:.1f} %" for k, v in flagged.items()),
            flush=True,
        )
    # Same-run baselines, by the same rule (5 % of the pooled answerable dev requests flagged):
    # the best hit's raw cosine alone, and the hit-level probability alone (no request model).
    fit = models["hybrid"]
    hit_only = Calibration({"hybrid": replace(fit, request_coef=())}, "-")
    baselines: dict[str, Any] = {
        "best_cosine": lambda e: e.cosine or 0.0,
        "hit_probability": lambda e: hit_only.probability("hybrid", e),
    }
    for name, judge in baselines.items():
        pooled = [judge(e) if e else 0.0 for evs in answerable.values() for e in evs["hybrid"]]
        cut = float(np.quantile(pooled, MAX_FLAGGED))
        dev = float(np.mean([(judge(e) if e else 0.0) < cut for e in unanswerable["hybrid"]]))
        test = float(np.mean([(judge(e) if e else 0.0) < cut for e in held_out["hybrid"]]))
        report[f"baseline:{name}"] = {"cut": cut, "no_match_flagged_dev": dev,
                                      "no_match_flagged_test": test}  # fmt: skip
        print(f"baseline {name}: cut {cut:.3f}; no-match dev flagged {100 * dev:.1f} %, "
              f"held-out {100 * test:.1f} %", flush=True)  # fmt: skip
    provenance = (
        f"bench/calibrate.py --write --embed-model {model} --max-train {args.max_train} "
        f"--max-dev {args.max_dev} --max-foreign {args.max_foreign}: "
        f"{sum(len(r) for r in rows.values())} hit rows and "
        f"{sum(len(r) for r in request_rows.values())} request rows from the data/natural "
        f"train splits ({', '.join(TRAIN_SOURCES)}; requests also searched over the other "
        "sources' catalogs as unanswerable); thresholds: at most 5 % of the pooled answerable "
        "dev requests flagged"
    )
    if args.thresholds_only:
        provenance = load_calibration().provenance
    calibration = Calibration(models, embedder, provenance, digest)
    if args.write:
        target = ROOT / "src" / "toolscout" / "search" / CALIBRATION_FILE
        target.write_text(json.dumps(calibration.to_dict(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {target}")
    out = ROOT / "bench" / "out" / "natural"
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibrate.json").write_text(json.dumps(
        {"calibration": calibration.to_dict(), "report": report,
         "seconds": round(time.perf_counter() - t0, 1)}, indent=1
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
