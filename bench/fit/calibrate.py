"""Re-fit the score calibration (src/toolscout/search/calibration.json) for the current model.

    python bench/fit/calibrate.py --write [--embed-model local:tool-minilm-l6] [--max-train 300]

With ``--write`` it then runs ``bench/fit/skill_scores.py --write`` for the same model (unless
``--no-skills``), so this one command refits every constant the file holds: hit scores,
``no_match`` thresholds, skill scores and the skill classifier.

The fit is for the embedding model the engine opens by default (or ``--embed-model``); the file
records its name and the sha256 of its graph, and a search with any other model reports its
scores as approximate (``metadata["calibration"]``). Re-run this after changing the default
model.

1. Collect rows from the **training** requests of data/natural (metatool, gorilla_apibench,
   bfcl; their tools and requests are disjoint from every dev and test split by construction):
   * "this hit is the one that serves the request": each training request is searched over its
     own catalog; its top 10 give rows (a hit is positive when it is gold), and the top 10
     without its gold tools give negative rows;
   * "some indexed tool serves the request", from the cosine of the vector leg's closest tool
     (BM25 for ``bm25``): positive for each training request over its own catalog; negative for
     the same request with its gold tools taken out (a near miss) and for requests of the
     *other* training sources searched over this catalog (APIs of another domain; a rare
     accidental fit there is label noise).
2. Fit, per search mode, the two logistic models on those rows. A hit's score is their product.
   (Other request-level signals were measured and not used; see git history.)
3. Choose ``no_match_below`` (a bound on ``P(answerable)``) per mode on **dev** requests only:
   the highest threshold that flags at most 5 % of the answerable requests of every dev set (the
   odd ids of the paraphrase and single-intent sets, the dev splits of data/natural, the
   multi-intent set); report the share of each dev set and of the no-match dev requests
   (tests/data/no_match, odd ids) it flags.
4. With ``--write``, store the result beside the code.
5. Report what the choices flag on the held-out halves (even ids of tests/data/no_match and of
   tests/data/single_intent); nothing here chooses anything on them or on a test split.
"""

from __future__ import annotations

import argparse
import json
import math
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


def _sample(items: list[Any], limit: int) -> list[Any]:
    step = max(1, -(-len(items) // limit)) if limit else 1
    return items[::step]


def _train_requests(path: Path, limit: int) -> list[tuple[str, tuple[str, ...]]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    train = [(r["query"][:1000], tuple(r["gold"])) for r in rows if r.get("split") == "train"]
    return _sample(train, limit)


Rows = dict[str, list[tuple[list[float], float]]]
RequestRows = dict[str, list[tuple[Evidence, float]]]
Found = dict[SearchMode, list[tuple[Ranked, Evidence]]]


def request_evidence(
    engine: Engine, text: str, exclude: frozenset[str] = frozenset()
) -> dict[str, Evidence | None]:
    """What each mode's request model reads, as search/hybrid.py computes it, with the tools in
    ``exclude`` taken out as if they were not indexed: the vector leg's closest remaining tool
    (``hybrid`` and ``vector`` alike) and the best remaining BM25 hit (``bm25``). None: no hit."""
    search = engine.searcher.search_evidence
    legs = (SearchMode.BM25, SearchMode.VECTOR)
    return evidence_without(
        {m: search(text, mode=m, limit=10 + len(exclude)) for m in legs}, exclude
    )


def evidence_without(found: Found, exclude: frozenset[str]) -> dict[str, Evidence | None]:
    """:func:`request_evidence` from searches already made (``found``: each leg's hits, at
    least ten more than ``exclude`` holds)."""

    def remaining(leg: SearchMode) -> list[Evidence]:
        return [ev for ranked, ev in found[leg] if ranked.id not in exclude]

    lexical, vector = remaining(SearchMode.BM25), remaining(SearchMode.VECTOR)
    closest = max(vector, key=lambda ev: ev.cosine or 0.0) if vector else None
    near = Evidence(closest.cosine, closest.standout, None, 1.0) if closest else None
    return {"hybrid": near, "vector": near, "bm25": lexical[0] if lexical else None}


def training_rows(
    engine: Engine, requests: list[tuple[str, tuple[str, ...]]], request_rows: RequestRows
) -> Rows:
    """Feature rows per mode: the top 10 over the whole catalog (gold hits positive), and the
    top 10 once the gold tools are taken out (all negative; each hit's relative score is
    re-based on the best remaining hit, as if the gold tools were not indexed). Request rows:
    the request over the whole catalog (answerable) and without its gold tools (not)."""
    rows: dict[str, list[tuple[list[float], float]]] = {m: [] for m in MODES}
    for text, gold in requests:
        gold_set = set(gold)
        searched: Found = {
            SearchMode(mode): engine.searcher.search_evidence(
                text, mode=SearchMode(mode), limit=10 + len(gold_set)
            )
            for mode in MODES
        }
        for label, exclude in ((1.0, frozenset[str]()), (0.0, frozenset(gold_set))):
            for mode, request in evidence_without(searched, exclude).items():
                if request is not None:
                    request_rows[mode].append((request, label))
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


def foreign_rows(engine: Engine, texts: list[str], request_rows: RequestRows) -> None:
    """Negative request rows: requests written for another catalog."""
    for text in texts:
        for mode, request in request_evidence(engine, text).items():
            if request is not None:
                request_rows[mode].append((request, 0.0))


def dev_evidence(engine: Engine, texts: list[str]) -> dict[str, list[Evidence | None]]:
    """Per request: what each mode's request model reads, and (``"top"``) the evidence of the
    default search's first hit, for the baselines (None: nothing found)."""
    out: dict[str, list[Evidence | None]] = {m: [] for m in (*MODES, "top")}
    for text in texts:
        for mode, request in request_evidence(engine, text).items():
            out[mode].append(request)
        found = engine.searcher.search_evidence(text, mode=SearchMode.HYBRID, limit=1)
        out["top"].append(found[0][1] if found else None)
    return out


def crowd(ev: Evidence) -> float:
    """The median cosine of the vector leg's candidates (the hit's cosine minus its standout)."""
    return (ev.cosine or 0.0) - (ev.standout or 0.0)


def flag_rates(
    judge: Callable[[Evidence], float],
    answerable: list[list[Evidence | None]],
    *unanswerable: list[Evidence | None],
) -> tuple[float, list[float]]:
    """The rule "flag at most 5 % of each answerable set": the strictest set's 5 % quantile of
    the values, and the share of each ``unanswerable`` list it flags (a request with no hit is
    flagged)."""

    def value(ev: Evidence | None) -> float:
        return judge(ev) if ev is not None else -math.inf

    cut = min(
        float(np.quantile([value(e) for e in part], MAX_FLAGGED, method="lower"))
        for part in answerable
        if part
    )
    return cut, [float(np.mean([value(e) < cut for e in part])) for part in unanswerable]


def _prob(model: ModeModel, mode: str, ev: Evidence | None) -> float:
    if ev is None:
        return 0.0
    return Calibration({mode: model}, "-").answerable(mode, ev)


def collect_training(
    sets: dict[str, Any], db_dir: Path, model: str, args: argparse.Namespace
) -> tuple[Rows, RequestRows, str, str | None]:
    """Step 1's rows: hit rows and request rows per mode, and the model's name and digest."""
    rows: Rows = {m: [] for m in MODES}
    request_rows: RequestRows = {m: [] for m in MODES}
    embedder, digest = "", None
    requests = {src: _train_requests(sets[src].queries, args.max_train) for src in TRAIN_SOURCES}
    for source in TRAIN_SOURCES:
        ds = sets[source]
        engine, _ = open_index(db_dir / f"{source}.db", ds.tools, source, model)
        embedder, digest = embedder_identity(engine.embedder)
        reqs = requests[source]
        for mode, part in training_rows(engine, reqs, request_rows).items():
            rows[mode].extend(part)
        foreign = [
            text
            for other in TRAIN_SOURCES
            if other != source
            for text, _ in _sample(requests[other], args.max_foreign)
        ]
        foreign_rows(engine, foreign, request_rows)
        print(f"{source}: {len(reqs)} training requests, {len(foreign)} foreign", flush=True)
        engine.close()
    return rows, request_rows, embedder, digest


Evidences = dict[str, list[Evidence | None]]
T = TypeVar("T")


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
        "--thresholds-only", action="store_true", help="keep the packaged fit, redo step 3"
    )
    parser.add_argument(
        "--no-skills", action="store_true", help="with --write: keep the packaged skill fit"
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    sets = datasets(args.natural)
    model = args.embed_model
    db_dir = args.db_dir or db_folder(ROOT / "bench" / "out" / "natural" / "db", model)

    # 1. training rows and dev evidence
    rows: Rows = {m: [] for m in MODES}
    request_rows: RequestRows = {m: [] for m in MODES}
    models: dict[str, ModeModel] = {}
    if args.thresholds_only:
        packaged = load_calibration()
        models, embedder = dict(packaged.models), packaged.fitted_for
        digest = packaged.model_sha256
    else:
        rows, request_rows, embedder, digest = collect_training(sets, db_dir, model, args)
    answerable, unanswerable, held_out, single_held = collect_dev(
        sets, db_dir, model, args.max_dev, dev_evidence, _joined
    )

    # 2. the fits on training rows
    for mode in MODES if not args.thresholds_only else ():
        x = np.array([f for f, _ in rows[mode]], dtype=np.float64)
        y = np.array([lab for _, lab in rows[mode]], dtype=np.float64)
        coef, intercept = fit_logistic(x, y)
        rx = np.array([ev.values(REQUEST_FEATURES[mode]) for ev, _ in request_rows[mode]])
        ry = np.array([label for _, label in request_rows[mode]], dtype=np.float64)
        rcoef, rintercept = fit_logistic(rx, ry)
        models[mode] = ModeModel(coef, intercept, 0.0, rcoef, rintercept)
        answerable_rows = int(sum(lab for _, lab in request_rows[mode]))
        print(f"{mode}: {len(y)} hit rows, {int(y.sum())} positive; coef {coef} b {intercept:.3f}")
        print(f"{mode}: {len(request_rows[mode])} request rows, {answerable_rows} answerable; "
              f"coef {rcoef} b {rintercept:.3f}")  # fmt: skip

    # 3. thresholds on dev requests (4. write, 5. held-out figures: below)
    report: dict[str, Any] = {}
    for mode in MODES:
        fit = models[mode]
        # Precision first: at most 5 % of the answerable requests of *each* dev set flagged
        # (the strictest set's 5 % quantile), then as many no-match requests as that allows.
        pooled = [_prob(fit, mode, e) for evs in answerable.values() for e in evs[mode]]
        cut = min(
            # "lower": a small set's quantile must not interpolate past its 5 % (4 of 62).
            float(
                np.quantile([_prob(fit, mode, e) for e in evs[mode]], MAX_FLAGGED, method="lower")
            )
            for evs in answerable.values()
            if evs[mode]
        )
        models[mode] = replace(fit, no_match_below=round(cut, 6))
        flagged = {
            name: float(np.mean([_prob(fit, mode, e) < cut for e in evs[mode]]))
            for name, evs in answerable.items()
        }
        caught = float(np.mean([_prob(fit, mode, e) < cut for e in unanswerable[mode]]))
        # Reported only: the held-out halves chose nothing.
        caught_test = float(np.mean([_prob(fit, mode, e) < cut for e in held_out[mode]]))
        single_test = float(np.mean([_prob(fit, mode, e) < cut for e in single_held[mode]]))
        report[mode] = {
            "no_match_below": cut,
            "answerable_flagged": flagged,
            "answerable_flagged_pooled": float(np.mean([p < cut for p in pooled])),
            "no_match_flagged_dev": caught,
            "no_match_flagged_test": caught_test,
            "single_intent_flagged_test": single_test,
        }
        print(
            f"{mode}: no_match_below {cut:.3f}; no-match dev flagged {100 * caught:.1f} %, "
            f"held-out (even ids) {100 * caught_test:.1f} %; held-out single-intent (answerable) "
            f"flagged {100 * single_test:.1f} %; answerable dev flagged: "
            + ", ".join(f"{k} {100 * v:.1f} %" for k, v in flagged.items()),
            flush=True,
        )
    # Same-run baselines, by the same rule (at most 5 % of each answerable dev set flagged):
    # the default search's first hit's cosine, cosine and crowd weighed by the training rows
    # (a two-feature logistic), and the hit-level probability alone (no request model).
    hit_only = Calibration({"hybrid": replace(models["hybrid"], request_coef=())}, "-")
    baselines: dict[str, tuple[str, Callable[[Evidence], float]]] = {
        "first_hit_cosine": ("top", lambda e: e.cosine or 0.0),
        "hit_probability": ("top", lambda e: hit_only.probability("hybrid", e)),
    }
    if not args.thresholds_only:
        (a, b), _ = fit_logistic(
            np.array([[ev.cosine or 0.0, crowd(ev)] for ev, _ in request_rows["vector"]]),
            np.array([label for _, label in request_rows["vector"]]),
        )
        baselines["cosine_and_crowd_on_training_rows"] = (
            "vector", lambda e: a * (e.cosine or 0.0) + b * crowd(e)
        )  # fmt: skip
    for name, (key, judge) in baselines.items():
        per_set = [evs[key] for evs in answerable.values()]
        cut, (dev, test) = flag_rates(judge, per_set, unanswerable[key], held_out[key])
        report[f"baseline:{name}"] = {"cut": cut, "no_match_flagged_dev": dev,
                                      "no_match_flagged_test": test}  # fmt: skip
        print(f"baseline {name}: cut {cut:.3f}; no-match dev flagged {100 * dev:.1f} %, "
              f"held-out {100 * test:.1f} %", flush=True)  # fmt: skip
    provenance = (
        f"bench/fit/calibrate.py --write --embed-model {model} --max-train {args.max_train} "
        f"--max-dev {args.max_dev} --max-foreign {args.max_foreign}: "
        f"{sum(len(r) for r in rows.values())} hit rows and "
        f"{sum(len(r) for r in request_rows.values())} request rows from the data/natural "
        f"train splits ({', '.join(TRAIN_SOURCES)}; requests also searched over the other "
        f"sources' catalogs as unanswerable); thresholds chosen on dev requests: at most 5 % "
        "of the answerable requests of every dev set flagged"
    )
    if args.thresholds_only:
        provenance = load_calibration().provenance
    calibration = Calibration(models, embedder, provenance, digest)
    if args.write:
        target = ROOT / "src" / "toolscout" / "search" / CALIBRATION_FILE
        data = calibration.to_dict()
        data["skills"] = json.loads(target.read_text(encoding="utf-8")).get("skills")
        target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {target}")
        if not args.no_skills:
            script = Path(__file__).with_name("skill_scores.py")
            subprocess.run(
                [sys.executable, str(script), "--write", "--embed-model", model], check=True
            )
    out = ROOT / "bench" / "out" / "natural"
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibrate.json").write_text(json.dumps(
        {"calibration": calibration.to_dict(), "report": report,
         "seconds": round(time.perf_counter() - t0, 1)}, indent=1
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
