"""Refit the skill constants: the ``skills`` section of src/toolscout/search/calibration.json.

    python bench/fit/skill_scores.py [--write] [--max-train 600] [--max-dev 300]

``python bench/fit/calibrate.py --write`` runs this too, so one command refits the whole file.

1. Catalogs: per training source of data/natural (metatool, gorilla_apibench, bfcl) an index of
   its **training** tools only, skills seeded and classified as ``toolscout index`` does.
2. Classifier (``skills/classify.py``): one row per (tool, skill): the cosine of the tool to the
   skill's profile and its margin over the other skills; soft label: the share of the tool's
   training requests whose closest skill profile is that skill (a tool belongs where the
   requests it serves point; data/natural has no skill labels).
3. Stage 1 (``search/hierarchical.py``): the training tools re-classified with that fit; each
   training request gives one row per skill (the features as served,
   ``SkillStage.features``), label: the skill holds one of its gold tools.
   Logistic fits with the positive rows weighted 1, 3, 10 and 30, for each ``keep_floor`` (the
   confidence a tool's second and third skills need) of 0.15, 0.1 and 0.05.
4. Choice, on **dev** requests only: the floor and weight that route the most dev requests (a
   skill of a gold tool among the first three skills scoring at least 0.4; mean over the dev
   sets, to 0.1 point; ties: the higher floor, then fewer skills matched). Dev sets: each
   source's dev requests over its whole catalog, the paraphrase set's odd ids over
   LiveMCPBench, the single-intent set's odd ids over the built-in catalog.
5. Coverage (``search/skillstage.py``): for the chosen stage 1, each training request gives one
   row per prefix of its skills in score order (the first 1..12), label: the prefix holds a gold
   tool's skill; a plain logistic fit, so its output is the probability that a hierarchical
   search's matched skills hold the request's tool. A grid over the request's
   ``skill_coverage``, ``skill_limit`` and ``skill_threshold`` on the dev sets (routing, skills
   matched, share of the catalog the matched skills hold) is printed; the defaults (0.99, 10,
   0.1) were chosen from it by hand: the lowest coverage, then the highest threshold, that
   routes at least 95 % on every dev set.
6. Report per dev set, for the choice: routing share, skills matched, how often
   ``hierarchical`` fell back, and hierarchical against direct hit@3 (limit 10). ``tooleyes_dev``
   (--unseen) is reported only; nothing is chosen on it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# ``fit.`` as bench/skills.py, which imports this module, names the folder: one routing module
# whether this runs as a script or is imported from there.
from fit.skill_routing import (
    DEFAULTS,
    LIMIT,
    THRESHOLD,
    Pairs,
    Routed,
    catalog_share,
    prefixes,
    routed,
    routing,
    strategies,
)
from natural import ROOT, SHARED, datasets, db_folder, load_requests, open_index
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.search.calibration import CALIBRATION_FILE, embedder_identity, fit_logistic
from toolscout.search.skillfit import (
    CLASSIFIER_FEATURES,
    COVERAGE_FEATURES,
    COVERAGE_TEMPERATURE,
    STAGE1_FEATURES,
    Logistic,
    SkillFit,
    load_skill_fit,
)

TRAIN_SOURCES = ("metatool", "gorilla_apibench", "bfcl")
WEIGHTS = (1.0, 3.0, 10.0, 30.0)
FLOORS = (0.15, 0.1, 0.05)
COVERAGE_DEPTH = 12  # prefixes per training request for the coverage fit
#: (skill_limit, skill_coverage, skill_threshold) cells of the printed grid.
GRID = [(c, t, s) for c in (8, 10) for t in (0.98, 0.985, 0.99, 0.995) for s in (0.4, 0.2, 0.1)]
TARGET = ROOT / "src" / "toolscout" / "search" / CALIBRATION_FILE


def _stride(items: list[Any], limit: int) -> list[Any]:
    return items[:: max(1, -(-len(items) // limit))] if limit else items


def train_pairs(source: str, limit: int) -> Pairs:
    path = ROOT / "data" / "natural" / source / "queries.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    pairs = [(r["query"][:1000], tuple(r["gold"])) for r in rows if r.get("split") == "train"]
    return _stride(pairs, limit)


def train_catalog(source: str, out: Path) -> Path:
    """The source's training tools as a catalog file of their own."""
    path = ROOT / "data" / "natural" / source / "tools.jsonl"
    keep = [x for x in path.read_text(encoding="utf-8").splitlines()
            if x.strip() and json.loads(x).get("split") == "train"]  # fmt: skip
    target = out / f"{source}_train.jsonl"
    target.write_text("\n".join(keep) + "\n", encoding="utf-8")
    return target


def classifier_rows(engine: Engine, pairs: Pairs) -> tuple[np.ndarray, np.ndarray]:
    """Step 2's rows for one catalog: (sim, margin) per (tool, skill) and the soft labels."""
    clf = engine.skill_service.offline
    clf.prepare()
    skills = {sid: i for i, sid in enumerate(clf._ids)}
    votes: dict[str, np.ndarray] = {}
    for text, gold in pairs:
        sims = clf._matrix @ engine.searcher.embed_query(text)[0]
        for tool_id in gold:
            votes.setdefault(tool_id, np.zeros(len(skills)))[int(np.argmax(sims))] += 1.0
    vectors = engine.store.vectors(sorted(votes))
    xs, ys = [], []
    for tool_id, vote in votes.items():
        if tool_id not in vectors:
            continue
        sims = (clf._matrix @ vectors[tool_id]).astype(np.float64)
        order = np.sort(sims)
        other = np.where(sims >= order[-1], order[-2], order[-1])
        xs.append(np.stack([sims, sims - other], axis=1))
        ys.append(vote / vote.sum())
    return np.concatenate(xs), np.concatenate(ys)


def fit_coverage(stage1: Logistic, rows: list[Routed]) -> Logistic:
    """P(the first k skills hold the request's tool), fitted on training requests."""
    xs, ys = [], []
    for r in rows:
        _, _, x, held = prefixes(stage1, r)
        xs.append(x[:COVERAGE_DEPTH])
        ys.append(held[:COVERAGE_DEPTH])
    x, y = np.concatenate(xs), np.concatenate(ys).astype(np.float64)
    coef, intercept = fit_logistic(x, y)
    print(f"coverage: {len(x)} (request, prefix) rows; coef {np.round(coef, 3)} b {intercept:.3f}")
    return Logistic(COVERAGE_FEATURES, coef, intercept)


def dev_sets(max_dev: int, unseen: bool) -> dict[str, tuple[Path, Pairs]]:
    sets = datasets(ROOT / "data" / "natural")
    out: dict[str, tuple[Path, Pairs]] = {}
    for name in (*TRAIN_SOURCES, "livemcp_paraphrase", "single_intent"):
        ds = sets[name]
        reqs = [r for r in load_requests(ds, max_dev) if r.split == "dev"]
        out[name] = (ds.tools, [(r.text, r.gold) for r in reqs])
    if unseen:
        rows = [json.loads(x) for x in (SHARED / "tooleyes_dev" / "queries.jsonl").open()]
        pairs = [(str(r["query"])[:1000], tuple(r["gold"])) for r in rows if r.get("gold")]
        out["tooleyes_dev (unseen)"] = (SHARED / "tooleyes_dev" / "tools.jsonl", pairs)
    return out


def with_fit(engine: Engine, fit: SkillFit) -> None:
    """Serve ``fit`` in this engine (classifier and stage 1) and re-classify every tool."""
    engine.skill_fits.use(fit)
    engine.classify(all=True)


def fit_classifier(db: Path, out: Path, model: str, max_train: int) -> Logistic:
    xs, ys = [], []
    for source in TRAIN_SOURCES:
        engine, _ = open_index(db / f"{source}_train.db", train_catalog(source, out), source, model)
        x, y = classifier_rows(engine, train_pairs(source, max_train))
        xs.append(x)
        ys.append(y)
        engine.close()
    x, y = np.concatenate(xs), np.concatenate(ys)
    coef, intercept = fit_logistic(x, y)
    print(f"classifier: {len(x)} (tool, skill) rows; coef {np.round(coef, 3)} b {intercept:.3f}")
    return Logistic(CLASSIFIER_FEATURES, coef, intercept)


@dataclass
class Floor:
    """One ``keep_floor``'s requests: training rows, dev rows and each dev catalog's share
    function."""

    train: list[Routed]
    dev: dict[str, list[Routed]]
    shares: dict[str, Callable[[list[str]], float]]
    #: The embedding model's name and graph sha256.
    identity: tuple[str, str | None]


def floor_rows(base: SkillFit, db: Path, out: Path, model: str, args: Any) -> Floor:
    """The training and dev requests' evidence with ``base`` (its classifier and floor)."""
    train: list[Routed] = []
    for source in TRAIN_SOURCES:
        engine, _ = open_index(db / f"{source}_train.db", train_catalog(source, out), source, model)
        with_fit(engine, base)
        identity = embedder_identity(engine.embedder)
        train += routed(engine, train_pairs(source, args.max_train))
        engine.close()
    dev: dict[str, list[Routed]] = {}
    shares: dict[str, Callable[[list[str]], float]] = {}
    for set_name, (tools, pairs) in dev_sets(args.max_dev, unseen=False).items():
        engine, _ = open_index(db / f"{set_name}.db", tools, set_name, model)
        with_fit(engine, base)
        dev[set_name] = routed(engine, pairs)
        shares[set_name] = catalog_share(engine)
        engine.close()
    return Floor(train, dev, shares, identity)


def print_grid(stage1: Logistic, coverage: Logistic, rows: Floor) -> None:
    """Dev routing, skills matched and catalog share for the previous rule and each cell of
    ``GRID`` (means over the dev sets; the lowest set's routing)."""
    print("| rule | routed (mean) | routed (lowest set) | sets ≥ 95 % | skills matched | "
          "catalog share |\n|---|---|---|---|---|---|")  # fmt: skip
    rules = [("three skills (previous)", None, LIMIT, 1.0, THRESHOLD)]
    rules += [
        (f"skill_limit {c}, skill_coverage {t:g}, skill_threshold {s:g}", coverage, c, t, s)
        for c, t, s in GRID
    ]
    for label, model, limit, target, threshold in rules:
        runs = {
            n: routing(stage1, r, model, limit=limit, target=target, threshold=threshold)
            for n, r in rows.dev.items()
        }
        share = [float(np.mean([rows.shares[n](c) for c in run.chosen])) for n, run in runs.items()]
        routed_ = [run.share for run in runs.values()]
        cells = [
            label,
            f"{100 * np.mean(routed_):.1f}",
            f"{100 * min(routed_):.1f}",
            f"{sum(r >= 0.95 for r in routed_)} of {len(routed_)}",
            f"{np.mean([run.matched for run in runs.values()]):.2f}",
            f"{100 * np.mean(share):.1f} %",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)


def report_sets(fit: SkillFit, db: Path, model: str, args: Any) -> dict[str, Any]:
    """Per dev set, with ``fit`` served: routing by the previous rule and by the defaults,
    skills matched, catalog share, fallbacks, direct and hierarchical hit@3."""
    sets: dict[str, Any] = {}
    print("| dev set (requests) | routed, three skills → **adaptive** | skills matched | "
          "catalog share | fell back | direct hit@3 | hierarchical hit@3 |\n"
          "|---|---|---|---|---|---|---|")  # fmt: skip
    for set_name, (tools, pairs) in dev_sets(args.max_dev, args.unseen).items():
        engine, _ = open_index(db / f"{set_name.split()[0]}.db", tools, set_name, model)
        with_fit(engine, fit)
        rows = routed(engine, pairs)
        before = routing(fit.stage1, rows)
        now = routing(
            fit.stage1,
            rows,
            fit.coverage,
            limit=DEFAULTS.skill_limit,
            threshold=DEFAULTS.skill_threshold,
            target=DEFAULTS.skill_coverage,
        )
        of_catalog = catalog_share(engine)
        share = float(np.mean([of_catalog(c) for c in now.chosen]))
        row = {
            "requests": len(pairs),
            "routed_before": before.share,
            "routed": now.share,
            "matched": now.matched,
            "catalog_share": share,
            **strategies(engine, pairs),
        }
        sets[set_name] = row
        engine.close()
        cells = [
            f"{set_name} ({len(pairs)})",
            f"{100 * before.share:.1f} → **{100 * now.share:.1f} %**",
            f"{now.matched:.2f}",
            f"{100 * share:.1f} %",
            f"{100 * row['fallback']:.1f} %",
            f"{100 * row['direct_hit@3']:.1f}",
            f"{100 * row['hierarchical_hit@3']:.1f}",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)
    return sets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-train", type=int, default=600, help="requests per source")
    parser.add_argument("--max-dev", type=int, default=300, help="requests per dev set")
    parser.add_argument("--embed-model", default=DEFAULT_MODEL)
    parser.add_argument("--near-depth", type=int, default=30)
    parser.add_argument("--unseen", action="store_true", help="also report tooleyes_dev")
    parser.add_argument("--write", action="store_true", help="store the fit in calibration.json")
    args = parser.parse_args()
    t0 = time.perf_counter()
    model = args.embed_model
    out = ROOT / "bench" / "out" / "skills"
    db = db_folder(out / "db", model)
    db.mkdir(parents=True, exist_ok=True)

    classifier = fit_classifier(db, out, model, args.max_train)
    packaged = load_skill_fit()
    candidates: dict[tuple[float, float], Logistic] = {}
    table: dict[tuple[float, float], dict[str, tuple[float, float]]] = {}
    floors: dict[float, Floor] = {}
    for floor in FLOORS:
        base = replace(packaged, classifier=classifier, near_depth=args.near_depth,
                       keep_floor=floor, coverage=None)  # fmt: skip
        floors[floor] = rows = floor_rows(base, db, out, model, args)
        x = np.concatenate([r.features for r in rows.train])
        y = np.concatenate([r.gold for r in rows.train]).astype(np.float64)
        for w in WEIGHTS:
            coef, intercept = fit_logistic(x, y, weights=np.where(y > 0, w, 1.0))
            candidates[floor, w] = Logistic(STAGE1_FEATURES, coef, intercept)
            runs = {n: routing(candidates[floor, w], r) for n, r in rows.dev.items()}
            table[floor, w] = {n: (run.share, run.matched) for n, run in runs.items()}
            cells = ", ".join(
                f"{n} {100 * s:.1f} % ({m:.2f})" for n, (s, m) in table[floor, w].items()
            )
            print(f"keep_floor {floor:g}, positive weight {w:g}: {cells}", flush=True)
    floor, chosen = max(
        table,
        key=lambda k: (
            round(float(np.mean([s for s, _ in table[k].values()])), 3),
            k[0],
            -float(np.mean([m for _, m in table[k].values()])),
        ),
    )
    train = floors[floor].train
    print(f"stage 1: {len(train)} training requests, {len(train) * len(train[0].gold)} rows")
    stage1 = candidates[floor, chosen]
    coverage = fit_coverage(stage1, train)
    print_grid(stage1, coverage, floors[floor])
    provenance = (
        f"bench/fit/skill_scores.py --max-train {args.max_train} --max-dev {args.max_dev} "
        f"--near-depth {args.near_depth}: classifier on (tool, skill) rows of the data/natural "
        f"training tools ({', '.join(TRAIN_SOURCES)}), labelled by their training requests' "
        f"closest skill profiles; stage 1 on {len(train)} training requests over their training "
        f"catalogs, positive rows weighted {chosen:g}, keep_floor {floor:g} (both chosen on dev "
        f"requests: routing at threshold {THRESHOLD}, limit {LIMIT}); coverage on the first "
        f"{COVERAGE_DEPTH} prefixes of the same requests' skills in stage-1 order"
    )
    name, digest = floors[floor].identity
    fit = SkillFit(
        stage1, classifier, args.near_depth, floor, name, digest, provenance,
        datetime.date.today().isoformat(), coverage, COVERAGE_TEMPERATURE,
    )  # fmt: skip
    print(f"chosen keep_floor {floor:g}, positive weight {chosen:g}: stage 1 coef "
          f"{np.round(stage1.coef, 3)} b {stage1.intercept:.3f}")  # fmt: skip

    report: dict[str, Any] = {"fit": fit.to_dict(), "sets": report_sets(fit, db, model, args)}
    if args.write:
        data = json.loads(TARGET.read_text(encoding="utf-8"))
        data["skills"] = fit.to_dict()
        TARGET.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote the skills section of {TARGET}")
    report["seconds"] = round(time.perf_counter() - t0, 1)
    (out / "skill_scores.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
