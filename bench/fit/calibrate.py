"""Re-fit the score calibration (src/toolscout/search/calibration.json) for the current model.

    python bench/fit/calibrate.py --write [--embed-model local:tool-minilm-l6] [--max-train 300]

With ``--write`` it then runs ``bench/fit/skill_scores.py --write`` for the same model (unless
``--no-skills``) and ``bench/fit/fusion_calibration.py --write`` (unless ``--no-score-map``:
then the packaged score map is kept as it is), so this one command refits every constant the
file holds: hit scores, their map to probabilities, ``no_match`` thresholds, skill scores and
the skill classifier.

The fit is for the embedding model the engine opens by default (or ``--embed-model``); the file
records its name and the sha256 of its graph, and a search with any other model reports its
scores as approximate (``metadata["calibration"]``). Re-run this after changing the default
model.

1. Collect rows from the **training** requests of data/natural (metatool, gorilla_apibench,
   bfcl; their tools and requests are disjoint from every dev and test split by construction):
   * "this hit is the one that serves the request": each training request is searched over its
     own catalog; its top 10 give rows (a hit is positive when it is gold), and the top 10
     without its gold tools give negative rows;
   * "some indexed tool serves the request" (``P(answerable)``): labelled answerable and
     no-match rows of training requests over their own catalogs and over catalogs of 100, 500
     and all 1,821 training tools, with gold tools and near-copies taken out for the no-match
     rows, and MetaTool's training requests that no tool or no offered tool serves
     (``bench/fit/answerable.py`` says how each row is made).
2. Fit, per search mode, the two logistic models on those rows (the request model once per
   feature set of ``CANDIDATES``). A hit's score is their product.
3. Choose ``no_match_below`` (a bound on ``P(answerable)``) per mode and request model on **dev**
   requests only (``no_match_rule.py``), then keep the request model that flags the most no-match
   dev requests on average (same-run baselines: the previous rule, the closest cosine alone):
   the highest threshold that flags at most 5 % of the answerable requests of every dev set
   separately (the odd ids of the paraphrase and single-intent sets, the dev splits of
   data/natural over their catalogs and over dev catalogs of 100, 500 and 2,500 data/natural
   tools, the multi-intent set); report the share of each dev set and of each no-match dev set
   it flags (tests/data/no_match odd ids, dev requests left out of the sized catalogs, MetaTool's
   dev requests that no tool or no offered tool serves).
4. With ``--write``, store the result beside the code.
5. Report what the choices flag on the held-out halves (even ids of tests/data/no_match and of
   tests/data/single_intent); nothing here chooses anything on them or on a test split.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

# The shared loaders (natural.py) live one folder up, beside the product benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from answerable import (
    PREVIOUS_RULE_COSINE,
    Row,
    collect_dev_no_match,
    fit_request_model,
    report_rows,
)
from calibration_rows import (
    MODES,
    TRAIN_SIZES,
    TRAIN_SOURCES,
    Rows,
    collect_dev,
    collect_training,
    dev_evidence,
    joined,
)
from no_match_rule import choose, flag_rates, print_choice, select_request_model

from natural import ROOT, datasets, db_folder
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.search.calibration import (
    CALIBRATION_FILE,
    Calibration,
    ModeModel,
    fit_logistic,
    load_calibration,
)

#: The request models tried per mode (features of ``RequestEvidence``); the one that flags the
#: most no-match dev requests at the precision bar is kept.
_VECTOR = (
    ("cosine",), ("cosine", "gap"), ("cosine", "lead"), ("cosine", "size"),
    ("cosine", "lead", "size"), ("cosine", "gap", "size", "cosine_size"),
)  # fmt: skip
CANDIDATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "hybrid": (*_VECTOR, ("cosine", "lexical"), ("cosine", "lead", "lexical", "size")),
    "vector": _VECTOR,
    "bm25": (("lexical",), ("lexical", "lexical_gap"), ("lexical", "size")),
}


def kept(data: dict[str, Any], packaged: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the packaged skill fit and each mode's score map, which other scripts fit."""
    data["skills"] = packaged.get("skills")
    for mode, row in packaged["models"].items():
        if "score_map" in row and mode in data["models"]:
            data["models"][mode]["score_map"] = row["score_map"]
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--natural", type=Path, default=ROOT / "data" / "natural")
    parser.add_argument("--max-train", type=int, default=300, help="per source; 0 = all")
    parser.add_argument(
        "--max-sized", type=int, default=150, help="per source, over the sized training catalogs"
    )
    parser.add_argument("--max-dev", type=int, default=300, help="per dev set; 0 = all")
    parser.add_argument(
        "--max-foreign", type=int, default=100, help="per source, searched over the others"
    )
    parser.add_argument("--embed-model", default=DEFAULT_MODEL, help="the model to fit for")
    parser.add_argument("--db-dir", type=Path, default=None, help="default: bench/out/natural/db")
    parser.add_argument("--write", action="store_true", help="write calibration.json")
    parser.add_argument(
        "--thresholds-only", action="store_true", help="keep the packaged fit, redo step 3"
    )
    parser.add_argument(
        "--no-skills", action="store_true", help="with --write: keep the packaged skill fit"
    )
    parser.add_argument(
        "--no-score-map", action="store_true", help="with --write: keep the packaged score map"
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    sets = datasets(args.natural)
    model = args.embed_model
    db_dir = args.db_dir or db_folder(ROOT / "bench" / "out" / "natural" / "db", model)

    # 1. training rows and dev evidence
    rows: Rows = {m: [] for m in MODES}
    request_rows: list[Row] = []
    models: dict[str, ModeModel] = {}
    if args.thresholds_only:
        packaged = load_calibration()
        models, embedder = dict(packaged.models), packaged.fitted_for
        digest = packaged.model_sha256
    else:
        rows, request_rows, embedder, digest = collect_training(sets, db_dir, model, args)
    answerable, builtin_no_match, held_out, single_held = collect_dev(
        sets, db_dir, model, args.max_dev, dev_evidence, joined
    )
    sized_yes, dev_no = collect_dev_no_match(sets, args.natural, db_dir, model, args.max_dev)
    answerable.update(sized_yes)
    no_match = {"tests/data/no_match (odd ids)": builtin_no_match, **dev_no}

    out = ROOT / "bench" / "out" / "natural"
    out.mkdir(parents=True, exist_ok=True)
    with (out / "answerable_rows.pkl").open("wb") as fh:  # for looking into the fit by hand
        pickle.dump({"train": request_rows, "answerable": answerable, "no_match": no_match,
                     "held_out": held_out}, fh)  # fmt: skip

    # 2. the fits on training rows; 3. the request model's features and threshold on dev rows
    if not args.thresholds_only:
        for kind, (yes, no) in sorted(report_rows(request_rows).items()):
            print(f"request rows {kind}: {yes} answerable, {no} no-match")
    for mode in MODES if not args.thresholds_only else ():
        x = np.array([f for f, _ in rows[mode]], dtype=np.float64)
        y = np.array([lab for _, lab in rows[mode]], dtype=np.float64)
        coef, intercept = fit_logistic(x, y)
        models[mode] = ModeModel(coef, intercept, 0.0)
        print(f"{mode}: {len(y)} hit rows, {int(y.sum())} positive; coef {coef} b {intercept:.3f}")
    report: dict[str, Any] = {}
    held = {"tests/data/no_match (even ids)": held_out}
    for mode in MODES:
        candidates = (
            [models[mode]]
            if args.thresholds_only
            else [
                replace(models[mode], request_coef=c, request_intercept=b, request_features=f)
                for f in CANDIDATES[mode]
                for c, b in [fit_request_model(request_rows, f)]
            ]
        )
        models[mode] = select_request_model(
            mode, candidates, (answerable, no_match, held, single_held), report
        )
    # Same-run baselines: the previous rule as shipped (the closest cosine below 0.293), and
    # the closest cosine alone with its threshold chosen by the same rule as above.
    closest = lambda ev: ev.cosine if ev is not None else -math.inf  # noqa: E731
    previous = PREVIOUS_RULE_COSINE
    report["baseline:previous rule"] = {
        "cut": previous,
        "answerable_flagged": flag_rates(closest, previous, answerable),
        "no_match_flagged_dev": flag_rates(closest, previous, no_match),
        "no_match_flagged_test": flag_rates(closest, previous, held),
    }
    print_choice("baseline: previous rule", previous, *[
        report["baseline:previous rule"][k]
        for k in ("answerable_flagged", "no_match_flagged_dev", "no_match_flagged_test")
    ])  # fmt: skip
    cut, flagged, caught = choose(closest, answerable, no_match)
    report["baseline:closest cosine, re-chosen"] = {
        "cut": cut, "answerable_flagged": flagged, "no_match_flagged_dev": caught,
        "no_match_flagged_test": flag_rates(closest, cut, held),
    }  # fmt: skip
    print_choice("baseline: closest cosine, re-chosen", cut, flagged, caught,
                  flag_rates(closest, cut, held))  # fmt: skip
    provenance = (
        f"bench/fit/calibrate.py --write --embed-model {model} --max-train {args.max_train} "
        f"--max-sized {args.max_sized} --max-dev {args.max_dev} --max-foreign {args.max_foreign}: "
        f"{sum(len(r) for r in rows.values())} hit rows and {len(request_rows)} request rows "
        f"({int(sum(r[1] for r in request_rows))} answerable) from the data/natural train splits "
        f"({', '.join(TRAIN_SOURCES)}, metatool_no_match; over their own catalogs and catalogs "
        f"of {', '.join(str(s or 'all') for s in TRAIN_SIZES)} training tools, gold tools and "
        "near-copies removed for no-match rows); thresholds chosen on dev requests: at most 5 % "
        "of the answerable requests of every dev set and dev catalog size flagged"
    )
    if args.thresholds_only:
        provenance = load_calibration().provenance
    calibration = Calibration(models, embedder, provenance, digest)
    if args.write:
        target = ROOT / "src" / "toolscout" / "search" / CALIBRATION_FILE
        data = kept(calibration.to_dict(), json.loads(target.read_text(encoding="utf-8")))
        target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {target}")
        for script, skip in (("skill_scores.py", args.no_skills), ("fusion_calibration.py",
                                                                   args.no_score_map)):  # fmt: skip
            if not skip:
                command = [sys.executable, str(Path(__file__).with_name(script)), "--write"]
                extra = ["--embed-model", model] if script == "skill_scores.py" else []
                subprocess.run([*command, *extra], check=True)
    (out / "calibrate.json").write_text(json.dumps(
        {"calibration": calibration.to_dict(), "report": report,
         "seconds": round(time.perf_counter() - t0, 1)}, indent=1
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
