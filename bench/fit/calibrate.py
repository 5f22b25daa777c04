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
from collections.abc import Callable
from dataclasses import replace
from functools import reduce
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

# The shared loaders (natural.py) live one folder up, beside the product benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from answerable import (
    PREVIOUS_RULE_COSINE,
    Catalog,
    Evidences,
    Row,
    catalog_rows,
    collect_dev_no_match,
    fit_request_model,
    labelled,
    natural_index,
    no_match_requests,
    not_offered,
    report_rows,
    seeded_sample,
    sized,
    unanswerable,
)
from no_match_rule import choose, flag_rates, print_choice, select_request_model

from natural import (
    ROOT,
    SHARED,
    TESTS,
    _odd_dev,
    datasets,
    db_folder,
    load_requests,
    open_index,
)
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.models import Ranked, SearchMode
from toolscout.search.calibration import (
    CALIBRATION_FILE,
    Calibration,
    ModeModel,
    embedder_identity,
    fit_logistic,
    load_calibration,
)
from toolscout.search.evidence import MODE_FEATURES, Evidence, RequestEvidence, request_evidence

MODES = ("hybrid", "vector", "bm25")
TRAIN_SOURCES = ("metatool", "gorilla_apibench", "bfcl")


TRAIN_SIZES = (100, 500, 0)
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


def _sample(items: list[Any], limit: int) -> list[Any]:
    step = max(1, -(-len(items) // limit)) if limit else 1
    return items[::step]


def _train_requests(path: Path, limit: int) -> list[tuple[str, tuple[str, ...]]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    train = [(r["query"][:1000], tuple(r["gold"])) for r in rows if r.get("split") == "train"]
    return _sample(train, limit)


Rows = dict[str, list[tuple[list[float], float]]]
Found = dict[SearchMode, list[tuple[Ranked, Evidence]]]
T = TypeVar("T")


def training_rows(engine: Engine, requests: list[tuple[str, tuple[str, ...]]]) -> Rows:
    """Hit rows per mode: the top 10 over the whole catalog (gold hits positive), and the top
    10 once the gold tools are taken out (all negative; each hit's relative score is re-based
    on the best remaining hit, as if the gold tools were not indexed)."""
    rows: dict[str, list[tuple[list[float], float]]] = {m: [] for m in MODES}
    for text, gold in requests:
        gold_set = set(gold)
        searched: Found = {
            SearchMode(mode): engine.searcher.search_evidence(
                text, mode=SearchMode(mode), limit=10 + len(gold_set)
            )
            for mode in MODES
        }
        for mode in MODES:
            names = MODE_FEATURES[mode]
            found = searched[SearchMode(mode)]
            for ranked, ev in found[:10]:
                rows[mode].append((ev.values(names), float(ranked.id in gold_set)))
            rest = [ev for ranked, ev in found if ranked.id not in gold_set][:10]
            top = max((ev.relative for ev in rest), default=0.0)
            for ev in rest:
                rebased = replace(ev, relative=ev.relative / top if top > 0 else 0.0)
                rows[mode].append((rebased.values(names), 0.0))
    return rows


def dev_evidence(engine: Engine, texts: list[str]) -> Evidences:
    """Per request: what the request model reads over the whole index, as a search computes
    it (None: no hit)."""
    out: list[RequestEvidence | None] = []
    for text in texts:
        legs, _ = engine.searcher.legs(text)
        out.append(request_evidence(legs.lexical, legs.vector, legs.tools))
    return {"request": out}


def collect_training(
    sets: dict[str, Any], db_dir: Path, model: str, args: argparse.Namespace
) -> tuple[Rows, list[Row], str, str | None]:
    """Step 1's rows: hit rows per mode, request rows, and the model's name and digest."""
    rows: Rows = {m: [] for m in MODES}
    request_rows: list[Row] = []
    embedder, digest = "", None
    requests = {src: _train_requests(sets[src].queries, args.max_train) for src in TRAIN_SOURCES}
    no_match = no_match_requests(args.natural / "metatool_no_match" / "queries.jsonl", "train")
    no_tool = [r["query"] for r in no_match["no_tool"]]
    for source in TRAIN_SOURCES:
        ds = sets[source]
        engine, _ = open_index(db_dir / f"{source}.db", ds.tools, source, model)
        embedder, digest = embedder_identity(engine.embedder)
        reqs = requests[source]
        for mode, part in training_rows(engine, reqs).items():
            rows[mode].extend(part)
        cat = Catalog(engine, catalog_rows(ds.tools))
        request_rows += labelled(cat, reqs, source)
        copies = [len(cat.near(gold)) - len(set(gold)) for _, gold in reqs]
        print(f"{source}: near-copies of the gold tools, mean {np.mean(copies):.2f}; "
              f"{np.mean([c > 0 for c in copies]):.1%} of the requests have one")  # fmt: skip
        foreign = [
            text
            for other in TRAIN_SOURCES
            if other != source
            for text, _ in _sample(requests[other], args.max_foreign)
        ]
        request_rows += unanswerable(cat, foreign, f"{source}:foreign")
        request_rows += unanswerable(cat, no_tool, f"{source}:metatool no_tool")
        if source == "metatool":
            request_rows += not_offered(cat, no_match["not_offered"])
        print(f"{source}: {len(reqs)} training requests, {len(foreign)} foreign", flush=True)
        engine.close()
    engine, pool_rows = natural_index(args.natural, db_dir, model)
    cat = Catalog(engine, pool_rows)
    pool = [str(t["id"]) for t in pool_rows if t.get("split") == "train"]
    every = [r for src in TRAIN_SOURCES for r in _sample(requests[src], args.max_sized)]
    request_rows += sized(cat, every, pool, TRAIN_SIZES, "training pool")
    for text in no_tool:  # each request embedded once: its catalogs one after the other
        for size in TRAIN_SIZES:
            within = seeded_sample(pool, size or len(pool), f"{size}\x00{text}", [])
            request_rows += unanswerable(cat, [text], f"pool@{size}:no_tool", within)
    engine.close()
    print(f"request rows: {len(request_rows)}, {int(sum(r[1] for r in request_rows))} answerable")
    return rows, request_rows, embedder, digest


def collect_dev(
    sets: dict[str, Any],
    db_dir: Path,
    model: str,
    max_dev: int,
    measure: Callable[[Engine, list[str]], T],
    merge: Callable[[T, T], T],
) -> tuple[dict[str, T], T, T, T]:
    """Step 3's requests, each list of them measured over its catalog by ``measure``: per
    answerable dev set, the no-match requests' dev (odd ids) and held-out (even ids) halves
    over both catalogs (joined by ``merge``), and the held-out half of the single-intent
    requests over the built-in catalog (answerable; reported only)."""
    answerable: dict[str, T] = {}
    for name in ["livemcp_paraphrase", *TRAIN_SOURCES]:
        ds = sets[name]
        reqs = [r for r in load_requests(ds, max_dev) if r.split == "dev"]
        engine, _ = open_index(db_dir / f"{name}.db", ds.tools, name, model)
        answerable[name] = measure(engine, [r.text for r in reqs])
        engine.close()
    catalogs = {
        "builtin": ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
        "livemcpbench": SHARED / "livemcpbench" / "tools.jsonl",
    }
    nm_rows, mi_rows, si_rows = (
        [json.loads(x) for x in (TESTS / name / "queries.jsonl").read_text().splitlines()]
        for name in ("no_match", "multi_intent", "single_intent")
    )
    dev: list[T] = []
    held_out: list[T] = []
    for name, path in catalogs.items():
        engine, _ = open_index(db_dir / f"no_match_{name}.db", path, name, model)
        dev.append(measure(engine, [r["query"] for r in nm_rows if _odd_dev(r) == "dev"]))
        held_out.append(measure(engine, [r["query"] for r in nm_rows if _odd_dev(r) == "test"]))
        answerable[f"multi_intent:{name}"] = measure(
            engine, [r["query"] for r in mi_rows if r["group"] == name]
        )
        if name == "builtin":
            single = {split: [r["query"] for r in si_rows if _odd_dev(r) == split]
                      for split in ("dev", "test")}  # fmt: skip
            answerable["single_intent"] = measure(engine, single["dev"])
            single_held = measure(engine, single["test"])
        engine.close()
    return answerable, reduce(merge, dev), reduce(merge, held_out), single_held


def _joined(a: Evidences, b: Evidences) -> Evidences:
    return {key: a[key] + b[key] for key in a}


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
        sets, db_dir, model, args.max_dev, dev_evidence, _joined
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
