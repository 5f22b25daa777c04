"""Fit the map of the default search's scores to probabilities (search/scoremap.py).

    python bench/fit/fusion_calibration.py [--write]

The default (``learned_ranker = false``) scores a hit ``P(answerable) x P(fits | answerable)``
(search/calibration.py). That product ranks well but runs far below the hit rate. This script
fits maps of it (a logistic model over the hit's situation, then an isotonic map per band of
places), prints each one's expected calibration error on every dev set beside the product's,
and chooses the map with the least mean excess of ECE over its sampling floor on the sets of
``CHOOSE_ON`` among those that score a clear match high whatever the catalog's size. It names
every dev set where the chosen map is worse than the product (Gorilla's first hits,
docs/benchmarks/ranking.md#scores). ``--write`` puts it into ``calibration.json`` as the hybrid
mode's ``score_map`` and changes no other key. The product is read with the packaged
calibration's own fit and no map, so re-run this after ``bench/fit/calibrate.py --write``
refits the product (that script runs it unless ``--no-score-map``).

Rows: the first ten hits of each request, searched over its set's whole catalog with the hand-set
fusion's legs (the searches bench/fit/rankcal_data.py caches in ``--cache``; the first run
makes them), scored with the packaged calibration as it is. Fitted on **training** requests
only: MetaTool's training requests the packaged embedder never learned from, Gorilla's and
BFCL's training requests (the embedder learned from them, so their cosines run high: each
variant says how much they count), and composed two- and three-part requests of MetaTool's
(several right tools). Hits are scored in the fused order before the intents share out the
first places (the cached legs hold no per-intent runs); the product's errors here match
bench/ranking.py's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from isotonic import isotonic_knots
from rankcal_data import (
    CHOOSE_ON,
    OTHERS,
    SNOW,
    Searched,
    composed,
    dev,
    ranker_max_train,
    training,
)

from natural import ROOT
from ranking import ece
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.metrics import sampling_floor
from toolscout.models import Loaded, SearchMode
from toolscout.search.calibration import (
    CALIBRATION_FILE,
    Calibration,
    fit_logistic,
    load_calibration,
    scored_hits,
)
from toolscout.search.config import SearchConfig
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rankcal import Band
from toolscout.search.scoremap import Hit, ScoreMap, situation

TOP = 10
MODE = "hybrid"
PRODUCT = ("product",)
PLACE = ("product", "answerable", "position", "relative", "gap_next")
CROWD = (*PLACE, "cosine_crowd", "cosine_gap")
WIDE = (*CROWD, "cosine", "cosine_lead", "tight_crowd")
CROSS = (*WIDE, "crowd_cosine")


@dataclass(frozen=True)
class Variant:
    name: str
    #: Stage 1's inputs (search/scoremap.py ``INPUTS``).
    inputs: tuple[str, ...]
    #: Places where an isotonic band starts (0-based); empty: stage 1 alone.
    bands: tuple[int, ...]
    #: The weight of Gorilla's and BFCL's training requests (the embedder learned from them).
    seen: float
    #: The weight of the composed multi-part requests.
    composed: float


VARIANTS = (
    Variant("product, isotonic bands, every training set", PRODUCT, (0, 1, 5), 1.0, 0.0),
    Variant("place, isotonic bands, every training set", PLACE, (0, 1, 5), 1.0, 0.0),
    Variant("crowd, isotonic bands, every training set", CROWD, (0, 1, 5), 1.0, 0.0),
    Variant("crowd, isotonic bands, MetaTool and composed", CROWD, (0, 1, 5), 0.0, 1.0),
    Variant("wide, isotonic bands, every training set", WIDE, (0, 1, 5), 1.0, 0.0),
    Variant("wide, logistic only, every set and composed", WIDE, (), 1.0, 1.0),
    Variant("cross, isotonic bands, every training set", CROSS, (0, 1, 5), 1.0, 0.0),
    Variant("cross, isotonic bands, every set and composed", CROSS, (0, 1, 5), 1.0, 1.0),
    Variant("cross, isotonic bands, every set and composed at 0.3", CROSS, (0, 1, 5), 1.0, 0.3),
    Variant("cross, one isotonic map, every set and composed", CROSS, (0,), 1.0, 1.0),
)


@dataclass
class Request:
    """One request's first hits as the map sees them, and which are right."""

    hits: list[Hit]
    answerable: float
    cosines: list[float]
    right: list[bool]


def requests(cal: Calibration, rows: list[Searched]) -> list[Request]:
    """Each request's first hits: the product (capped, as a search caps it) and its evidence."""
    crowd = SearchConfig().candidates
    out = []
    for r in rows:
        legs = r.legs
        found = scored_hits(
            cal, SearchMode.HYBRID, legs.fused[:TOP], legs.lexical, legs.vector,
            tools=legs.tools, crowd=crowd,
        )  # fmt: skip
        hits = [Hit(h.score, e.relative, e.cosine or 0.0) for h, e in found]
        answerable = found[0][0].answerable if found else 0.0
        gold = set(r.gold)
        out.append(Request(hits, answerable or 0.0, [h.score for h in legs.vector],
                           [h.id in gold for h, _ in found]))  # fmt: skip
    return out


def fit(variant: Variant, pools: dict[str, list[Request]]) -> ScoreMap:
    """Stage 1 by weighted logistic regression, then stage 2's isotonic bands over its output."""
    weight = {"metatool": 1.0, "composed": variant.composed}
    xs, ys, ws, places = [], [], [], []
    for name, reqs in pools.items():
        w = weight.get(name, variant.seen)
        for q in reqs if w > 0 else []:
            xs += situation(variant.inputs, q.hits, q.answerable, q.cosines)
            ys += [float(v) for v in q.right]
            ws += [w] * len(q.hits)
            places += range(len(q.hits))
    x, y, wt, place = np.array(xs), np.array(ys), np.array(ws), np.array(places)
    coef, intercept = fit_logistic(x, y, weights=wt)
    stage1 = ScoreMap(variant.inputs, coef, intercept, ())
    if not variant.bands:
        return stage1
    p = 1.0 / (1.0 + np.exp(-np.clip(x @ np.asarray(coef) + intercept, -50, 50)))
    edges = [*variant.bands, TOP]
    bands = tuple(
        Band(lo, *isotonic_knots(p[m], y[m], wt[m]))
        for lo, hi in itertools.pairwise(edges)
        if (m := (place >= lo) & (place < hi)).any()
    )
    return replace(stage1, bands=bands)


def mapped(score_map: ScoreMap | None, q: Request) -> list[float]:
    """A request's scores under ``score_map`` (None: the product), capped as a search caps them."""
    if score_map is None:
        return [h.product for h in q.hits]
    return list(itertools.accumulate(score_map.scores(q.hits, q.answerable, q.cosines), min))


Errors = dict[str, tuple[float, float, float, float]]


def errors(score_map: ScoreMap | None, dev_rows: dict[str, list[Request]]) -> Errors:
    """Per dev set: ECE of the first hit and of the first five, and each one's sampling floor."""
    out = {}
    for name, reqs in dev_rows.items():
        scores = [mapped(score_map, q) for q in reqs]
        s1 = [s[0] for s in scores if s]
        r1 = [q.right[0] for q in reqs if q.right]
        s5 = [v for s in scores for v in s[:5]]
        r5 = [v for q in reqs for v in q.right[:5]]
        out[name] = (
            ece(list(zip(s1, r1, strict=True))),
            ece(list(zip(s5, r5, strict=True))),
            sampling_floor(s1),
            sampling_floor(s5),
        )
    return out


def excess(errs: Errors) -> float:
    """The mean excess of ECE over its floor (first hit and first five) on the sets chosen on."""
    gaps = [g for n, e in errs.items() if n in CHOOSE_ON for g in (e[0] - e[2], e[1] - e[3])]
    return float(np.mean(gaps))


def why(dev_rows: dict[str, list[Request]]) -> None:
    """Why the product runs low: per dev set, how often the first hit is right beside its mean
    score and that score's two factors (``P(fits)`` read as the score over ``P(answerable)``)."""
    print("| dev set | requests | first hit right | mean score | mean P(answerable) | P(fits) |")
    print("|---|---|---|---|---|---|")
    for name, reqs in dev_rows.items():
        rows = [q for q in reqs if q.hits]
        right = np.mean([q.right[0] for q in rows])
        score = np.mean([q.hits[0].product for q in rows])
        answerable = np.mean([q.answerable for q in rows])
        fits = np.mean([q.hits[0].product / max(q.answerable, 1e-9) for q in rows])
        print(
            f"| {name} | {len(rows)} | {right:.3f} | {score:.3f} | {answerable:.3f} | {fits:.3f} |"
        )


def clear_match(cal: Calibration) -> list[Request]:
    """ "snow depth" over a snowfall-depth tool alone and among 10 and 50 unrelated tools
    (rankcal_data's catalogs), searched as the fit's rows are: a map must score that first hit
    high in each, and not much lower in the larger catalogs."""
    out = []
    for size in (0, 10, 50):
        with tempfile.TemporaryDirectory() as folder:
            engine = Engine.open(Settings(db=str(Path(folder) / "index.db")))
            engine.index([Loaded("check", [SNOW, *OTHERS[:size]])])
            config = replace(engine.searcher.config, learned_ranker=False)
            searcher = HybridSearcher(engine.store, engine.embedder, config)
            legs, tokens = searcher.legs("snow depth")
            out += requests(cal, [Searched("snow depth", legs, tokens, (SNOW.id,), "check")])
            searcher.close()
            engine.close()
    return out


def clear(score_map: ScoreMap | None, lone: list[Request]) -> list[float]:
    """The first hit's score of each :func:`clear_match` request under ``score_map``."""
    return [round(mapped(score_map, q)[0], 3) for q in lone]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db-dir", type=Path, default=ROOT / "bench" / "out" / "ranking" / "db")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / "out" / "rankcal" / "legs")
    parser.add_argument("--max-dev", type=int, default=400)
    parser.add_argument("--composed", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "fusion_calibration")
    parser.add_argument("--write", action="store_true", help="write the map into calibration.json")
    args = parser.parse_args()
    base = without_map(load_calibration())
    lone = clear_match(base)
    train = training(args.db_dir, args.cache, ranker_max_train())
    multi = composed(args.db_dir, args.cache, train["metatool"], args.composed)
    multi += composed(args.db_dir, args.cache, train["metatool"], args.composed, parts=3)
    pools = {name: requests(base, rows) for name, rows in train.items()}
    pools["composed"] = requests(base, multi)
    dev_rows = {
        n: requests(base, rows) for n, rows in dev(args.db_dir, args.cache, args.max_dev).items()
    }
    names = list(dev_rows)
    why(dev_rows)
    print("ECE of the first hit / the first five (sampling floor in brackets)")
    print("| variant | " + " | ".join(names) + " | mean excess (chosen on) | clear match |")
    print("|---" * (len(names) + 3) + "|")
    report: list[tuple[str, ScoreMap | None, Errors, list[float]]] = []
    for name, score_map in [("the product (no map)", None)] + [(v.name, fit(v, pools))
                                                               for v in VARIANTS]:  # fmt: skip
        errs = errors(score_map, dev_rows)
        report.append((name, score_map, errs, clear(score_map, lone)))
        cells = " | ".join(
            f"{errs[n][0]:.3f} / {errs[n][1]:.3f} ({errs[n][2]:.2f} / {errs[n][3]:.2f})"
            for n in names
        )
        snow = " / ".join(f"{v:.2f}" for v in report[-1][3])
        print(f"| {name} | {cells} | {excess(errs):.3f} | {snow} |", flush=True)
    before = report[0][2]
    sound = [r for r in report[1:] if min(r[3]) >= 0.5 and min(r[3]) >= r[3][0] - 0.3]
    best = min(sound or report[1:], key=lambda r: excess(r[2]))
    worse = [
        f"{n} {'first hit' if k == 0 else 'first five'} {before[n][k]:.3f} -> {best[2][n][k]:.3f}"
        for n in names
        for k in (0, 1)
        if best[2][n][k] >= before[n][k]
    ]
    print(f"least mean excess among the maps that hold the clear match: {best[0]}")
    if worse:
        print("higher than the product's on " + "; ".join(worse))
    else:
        print("lower than the product's on every dev set")
    args.out.mkdir(parents=True, exist_ok=True)
    found = {
        name: {"errors": errs, "clear_match": c, "map": m.to_dict() if m else None}
        for name, m, errs, c in report
    }
    summary = {"variants": found, "best": best[0], "worse": worse}
    (args.out / "fusion_calibration.json").write_text(json.dumps(summary, indent=1), "utf-8")
    if args.write:
        if not sound or best[1] is None:
            print("no map scores the clear match high: nothing written")
            return 1
        counts = ", ".join(f"{k} {len(v)}" for k, v in pools.items())
        write(best[1], f"{best[0]}; fitted on the first {TOP} hits of data/natural training "
                       f"requests ({counts}), chosen on dev requests")  # fmt: skip
    return 0


def without_map(cal: Calibration) -> Calibration:
    """``cal`` with no mode's score map: the map is fitted over the product itself."""
    models = {mode: replace(m, score_map=None) for mode, m in cal.models.items()}
    return replace(cal, models=models)


def write(score_map: ScoreMap, how: str) -> None:
    """Put ``score_map`` into the packaged calibration.json as the hybrid mode's; every other key
    keeps its place and value."""
    target = ROOT / "src" / "toolscout" / "search" / CALIBRATION_FILE
    data = json.loads(target.read_text(encoding="utf-8"))
    data["models"][MODE]["score_map"] = {
        **score_map.to_dict(),
        "provenance": f"bench/fit/fusion_calibration.py --write: {how}",
    }
    target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    sys.exit(main())
