"""Fit the learned ranker's score map (search/rankcal.py) for the packaged ranker.

    python bench/fit/ranker_calibration.py [--write] [--compose 1000] [--max-dev 400]

A stage of its own: it reads whatever ranker is packaged (``ranker.txt``; refit that first with
bench/fit/ranker.py) and writes ``rankcal.json`` beside it with that ranker's sha256, so a new
ranker needs only this command again. No searches when the legs are cached (``--cache``, one
folder per way of making the whole request's row; delete it after changing the embedding model
or the legs; the product's orders and the prepared candidates are cached per ranker).

The map reads the ranker's output and the candidate's **situation** in its request, not only its
own evidence: its share of the softmaxed output of the first places, that softmax's entropy, how
many candidates nearly tie with the first in output and in cosine, the best cosine's margin over
the other candidates' median, the margin to the next candidate, whether the legs agree on the
first place, the request's intents and words, the catalog's size (search/rankcal.py).

**Fitted on training requests only** (bench/fit/rankcal_data.py): each request's first ten
candidates in the ranker's order, labelled 1 when the candidate is a gold tool. The ranker's
output on a request must be the output a user's request gets: for MetaTool requests neither the
embedder nor the ranker learned from, the packaged ranker's own; for those the ranker learned
from, out of fold (three folds of them, each scored by a ranker refitted on the other two with
the packaged ranker's settings and rounds). Gorilla's and BFCL's training requests taught the
embedder too, so their cosines are higher than a user's; a variant weighs them (``seen``).
Two- and three-part requests composed of unseen MetaTool requests teach that several hits can
be right.

**Chosen on dev requests**: every variant is applied to the dev requests of every set
``bench/ranking.py`` reports, in the order the product returns them with the ranker on, each
hit's score capped at the one before it as ``scored_hits`` does; the expected calibration error
(10 equal-width bins) of the first hit and of the first five per set is printed for each, beside
its sampling floor (what exact probabilities would show on a set of that size). The variant
whose errors exceed their floors least on average over the sets of ``rankcal_data.CHOOSE_ON``
is written (ranker.json's own logistic map competes too), among those that score a clear match
("snow depth" against a snowfall-depth tool) at least 0.5 alone and among 10 and 50 unrelated
tools, never more than 0.3 below its score alone (``rankcal_data.clear_match``); ToolBench,
Seal-Tools and ``tooleyes_dev`` are reported only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import rankcal_data as data
import ranker as fit_ranker
from isotonic import isotonic_knots
from rankcal_data import CHOOSE_ON, Lone, Searched, clear, holds_clear_match

from natural import ROOT
from ranking import ece
from toolscout.eval.metrics import sampling_floor
from toolscout.search.calibration import fit_logistic
from toolscout.search.config import SearchConfig
from toolscout.search.rank import (
    CALIBRATION_INPUTS,
    FEATURES,
    MODEL_FILE,
    Ranker,
    features,
    load_ranker,
)
from toolscout.search.rankcal import CALIBRATION_FILE, Band, RankCalibration, design

CANDIDATES = 100
#: Each request's first candidates the map is fitted on (the hits a caller reads).
TOP = 10
#: Places where a new isotonic band starts (0-based): the first hit, the next four, the rest.
BANDS = (0, 1, 5)
#: Inputs beyond the packaged logistic map's: the first hit's lead over the second, the
#: request's intents and words, the vector leg's best cosine, the share of the request's words
#: the candidate's name holds, its BM25 relative to the best. Statistics of the crowd of
#: candidates (the cosine's z-score and median, the server's share of the first ten) were
#: measured too and left out: they help Gorilla, but in a catalog smaller than the candidate
#: depth they mean something else than in any training catalog (199 tools or more), and a lone
#: clear match ("snow depth" against a snowfall-depth tool) scored 0.09 with them.
CONTEXT = ("lead", "intents", "query_tokens", "best_cosine", "name_covered", "lexical_relative")
#: What describes the candidate's situation in its request beyond its own evidence: its share of
#: the softmaxed output of the first places, how spread that softmax is, how many candidates
#: nearly tie with the first, its margin over the next, whether the legs agree on the first
#: place (search/rankcal.py ``DERIVED``). None reads the catalog's size or the candidate depth.
SITUATION = ("share", "entropy", "crowd", "gap_next", "legs_agree")
#: How close the crowd of candidates comes to the best in cosine: near-identical candidates and
#: the best's margin over the median of the others, counted over the candidates (a lone tool
#: has no crowd; the cosine's median over the vector leg, measured before, made a lone clear
#: match its own crowd and scored it 0.04-0.13).
CROWD = ("cosine_crowd", "cosine_spread")
#: Each leg's rank of the candidate and its cosine to the whole request.
RANKS = ("vector_rank", "lexical_rank", "whole_cosine", "whole_gap")


@dataclass
class Candidates:
    """One request's candidates as the map sees them."""

    ids: list[str]
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    raw: NDArray[np.float64]
    source: str
    saw: bool
    order: list[str] | None = None


def prepare(rows: list[Searched], ranker: Ranker) -> list[Candidates]:
    tools = {s: data.tools_of(s) for s in {r.source for r in rows}}
    out = []
    for r in rows:
        ids = [h.id for h in r.legs.fused[:CANDIDATES]]
        x = features(r.legs, ids, r.tokens, tools[r.source])
        y = np.array([float(i in r.gold) for i in ids])
        out.append(Candidates(ids, x, y, ranker.scores(x), r.source, r.ranker_saw))
    return out


def _ranker_settings() -> tuple[dict[str, Any], int]:
    """The packaged ranker's LightGBM parameters and rounds, from its metadata."""
    meta = json.loads((ROOT / "src" / "toolscout" / "search" / "ranker.json").read_text("utf-8"))
    words = str(meta.get("provenance", "")).split()

    def value(flag: str, default: int) -> int:
        return int(words[words.index(flag) + 1]) if flag in words else default

    args = argparse.Namespace(
        leaves=value("--leaves", 15),
        min_leaf=value("--min-leaf", 50),
        monotone="--no-monotone" not in words,
    )
    return fit_ranker.params(args), int(meta.get("rounds", 90))


def out_of_fold(rows: list[Candidates], k: int = 3) -> None:
    """Replace the raw output of the requests the packaged ranker learned from by out-of-fold
    output (see the module docstring)."""
    learned = [c for c in rows if c.saw]
    if not learned:
        return
    config, rounds = _ranker_settings()
    for fold in range(k):
        fit = [c for i, c in enumerate(learned) if i % k != fold and c.y.any()]
        part = (
            np.vstack([c.x for c in fit]),
            np.concatenate([c.y for c in fit]),
            np.array([c.y.size for c in fit], dtype=np.int64),
            np.ones(len(fit)),
        )
        model = fit_ranker.train(part, None, rounds, config)
        for c in learned[fold::k]:
            c.raw = np.asarray(model.predict(c.x), dtype=np.float64)
        print(f"  fold {fold + 1}/{k}: {len(fit)} requests", flush=True)


@dataclass(frozen=True)
class Variant:
    """A way to fit the map: which training rows at which weight, which inputs, bands."""

    name: str
    inputs: tuple[str, ...]
    seen: float  # weight of Gorilla's and BFCL's training requests (0: left out)
    composed: float  # weight of the composed requests (0: left out)
    isotonic: bool


def variants() -> list[Variant]:
    base, wide = CALIBRATION_INPUTS, CALIBRATION_INPUTS + CONTEXT
    full = wide + SITUATION + CROWD
    return [
        Variant("all training requests, logistic (as ranker.py fits it)", base, 1.0, 0.0, False),
        Variant("unseen requests only, logistic", base, 0.0, 0.0, False),
        Variant("unseen + composed, logistic", base, 0.0, 1.0, False),
        Variant("unseen + composed + Gorilla/BFCL x0.25, context inputs, logistic", wide, 0.25,
                1.0, False),
        Variant("the same, isotonic bands", wide, 0.25, 1.0, True),
        Variant("the same with composed requests x2", wide, 0.25, 2.0, True),
        Variant("+ situation of the output, logistic", wide + SITUATION, 0.25, 1.0, False),
        Variant("+ situation and cosine crowd, logistic", full, 0.25, 1.0, False),
        Variant("situation and cosine crowd, isotonic bands", full, 0.25, 1.0, True),
        Variant("situation and cosine crowd, Gorilla/BFCL x1, composed x2", full, 1.0, 2.0,
                False),
        Variant("situation and cosine crowd + the legs' ranks and the whole request's cosine",
                full + RANKS, 0.25, 1.0, False),
        Variant("situation and cosine crowd, without the catalog's size, logistic",
                tuple(n for n in full if n != "log_tools"), 0.25, 1.0, False),
    ]  # fmt: skip


def _first(c: Candidates, top: int) -> NDArray[np.int64]:
    return np.argsort(-c.raw, kind="stable")[:top]


def fit(variant: Variant, train: list[Candidates], composed: list[Candidates]) -> RankCalibration:
    """The map of ``variant`` fitted on the training pools."""
    rows = [c for c in train if c.source == "metatool" or variant.seen > 0]
    rows += composed if variant.composed > 0 else []
    xs, ys, ws, places = [], [], [], []
    for c in rows:
        first = _first(c, TOP)
        xs.append(design(variant.inputs, c.raw, c.x, FEATURES)[first])
        ys.append(c.y[first])
        weight = {"metatool": 1.0, "composed": variant.composed}.get(c.source, variant.seen)
        ws.append(np.full(first.size, weight))
        places.append(np.arange(first.size))
    x, y, w, place = (np.concatenate(v) if v[0].ndim == 1 else np.vstack(v)
                      for v in (xs, ys, ws, places))  # fmt: skip
    coef, intercept = fit_logistic(x, y, weights=w)
    bands: tuple[Band, ...] = ()
    if variant.isotonic:
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ np.asarray(coef) + intercept, -50, 50)))
        edges = [*BANDS, TOP]
        bands = tuple(
            Band(lo, *isotonic_knots(p[m], y[m], w[m]))
            for lo, hi in itertools.pairwise(edges)
            if (m := (place >= lo) & (place < hi)).any()
        )
    return RankCalibration(variant.inputs, coef, intercept, bands, "")


def scores(cal: RankCalibration, c: Candidates) -> tuple[list[float], list[bool]]:
    """The product's scores of a dev request's returned hits (capped at the one before) and
    whether each is right."""
    chance = dict(zip(c.ids, cal.probabilities(c.raw, c.x, FEATURES), strict=True))
    gold = {i for i, v in zip(c.ids, c.y, strict=True) if v}
    out, right, ceiling = [], [], 1.0
    for tid in c.order or []:
        ceiling = min(ceiling, chance.get(tid, 0.0))
        out.append(ceiling)
        right.append(tid in gold)
    return out, right


Errors = dict[str, tuple[float, float, float, float]]


def errors(cal: RankCalibration, dev: dict[str, list[Candidates]]) -> Errors:
    """Per dev set: the ECE of the first hit and of the first five, and what each would be from
    sampling alone if the scores were exact (toolscout.eval.metrics ``sampling_floor``): the
    floor a set of that size allows."""
    out = {}
    for name, rows in dev.items():
        s1: list[float] = []
        r1: list[bool] = []
        s5: list[float] = []
        r5: list[bool] = []
        for c in rows:
            s, r = scores(cal, c)
            s1, r1, s5, r5 = s1 + s[:1], r1 + r[:1], s5 + s[:5], r5 + r[:5]
        out[name] = (
            ece(list(zip(s1, r1, strict=True))),
            ece(list(zip(s5, r5, strict=True))),
            sampling_floor(s1),
            sampling_floor(s5),
        )
    return out


def excess(errs: Errors) -> tuple[float, float]:
    """The mean and the largest excess of an ECE (first hit, first five) over its sampling
    floor on the sets chosen on."""
    gaps = [g for n, e in errs.items() if n in CHOOSE_ON for g in (e[0] - e[2], e[1] - e[3])]
    return float(np.mean(gaps)), max(gaps)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--write", action="store_true", help="write rankcal.json beside the packaged ranker")
    add("--compose", type=int, default=1000, help="composed training requests of 2 and of 3 parts")
    add("--max-dev", type=int, default=400, help="dev requests per set (bench/ranking.py's)")
    add("--db-dir", type=Path, default=ROOT / "bench" / "out" / "ranking" / "db")
    # The legs hold the whole request's row, so the cache is kept per way of making it.
    legs = f"legs_{SearchConfig().whole_request}"
    add("--cache", type=Path, default=ROOT / "bench" / "out" / "rankcal" / legs)
    add("--out", type=Path, default=ROOT / "bench" / "out" / "rankcal")
    return parser.parse_args()


Prepared = tuple[list["Candidates"], list["Candidates"], dict[str, list["Candidates"]]]


def candidates(args: argparse.Namespace, ranker: Ranker, sha: str) -> Prepared:
    """The training, composed and dev candidates with the ranker's output (out of fold where
    the ranker learned from them), kept in ``--cache`` per ranker: a new variant of the map
    needs no new searches and no refitted folds."""
    path = args.cache / f"prepared_{sha[:12]}_{args.compose}_{args.max_dev}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            kept: Prepared = pickle.load(fh)
        return kept
    pools = data.training(args.db_dir, args.cache, data.ranker_max_train())
    both = [
        s
        for parts in (2, 3)
        for s in data.composed(args.db_dir, args.cache, pools["metatool"], args.compose, parts)
    ]
    train = prepare([s for rows in pools.values() for s in rows], ranker)
    composed = prepare(both, ranker)
    for c in composed:
        c.source = "composed"
    print(f"training: {len(train)} requests, {len(composed)} composed; out of fold:", flush=True)
    out_of_fold(train)
    dev: dict[str, list[Candidates]] = {}
    for name, rows in data.dev(args.db_dir, args.cache, args.max_dev).items():
        dev[name] = prepare(rows, ranker)
        kept_orders = data.orders(name, rows, args.db_dir, args.cache, ranker, sha)
        for c, order in zip(dev[name], kept_orders, strict=True):
            c.order = order
    with path.open("wb") as fh:
        pickle.dump((train, composed, dev), fh)
    return train, composed, dev


def main() -> int:
    args = parse()
    t0 = time.perf_counter()
    ranker = load_ranker()
    folder = ROOT / "src" / "toolscout" / "search"
    sha = json.loads((folder / "ranker.json").read_text("utf-8"))["sha256"]
    train, composed, dev = candidates(args, ranker, sha)
    lone = data.clear_match(ranker)
    report = table(ranker, train, composed, dev, lone)
    sound = [v for v in report if holds_clear_match(v[1], lone)]
    best = min(sound or report, key=lambda v: excess(v[2])[0])
    print(f"chosen: {best[0].name}; {time.perf_counter() - t0:.0f} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {
        v.name: {"errors": {n: list(e) for n, e in errs.items()}, "clear_match": clear(cal, lone)}
        for v, cal, errs in report
    }
    figures["chosen"] = best[0].name
    (args.out / "rankcal.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    if args.write:
        write(best[0], best[1], sha, folder, len(train), len(composed))
    return 0


def table(
    ranker: Ranker,
    train: list[Candidates],
    composed: list[Candidates],
    dev: dict[str, list[Candidates]],
    lone: Lone,
) -> list[tuple[Variant, RankCalibration, Errors]]:
    """Every variant's dev errors and its scores of the clear match, printed as a markdown
    table (first the logistic map that ranker.py fitted into ranker.json, which scores when no
    map was fitted for the ranker)."""
    own = RankCalibration(CALIBRATION_INPUTS, ranker.calibration[:-1], ranker.calibration[-1],
                          (), "")  # fmt: skip
    out = [(Variant("ranker.json's own logistic map", own.inputs, 0, 0, False), own,
            errors(own, dev))]  # fmt: skip
    for v in variants():
        cal = fit(v, train, composed)
        out.append((v, cal, errors(cal, dev)))
    names = list(dev)
    print("ECE of the first hit / the first five (sampling floor in brackets)")
    print("| variant | " + " | ".join(names) + " | excess: mean (chosen on) / largest "
          "| clear match: alone / among 10 / among 50 |")  # fmt: skip
    print("|---" * (len(names) + 3) + "|")
    for v, cal, errs in out:
        cells = " | ".join(
            f"{errs[n][0]:.3f} / {errs[n][1]:.3f} ({errs[n][2]:.2f} / {errs[n][3]:.2f})"
            for n in names
        )
        mean_gap, largest = excess(errs)
        lone_scores = " / ".join(f"{p:.2f}" for p in clear(cal, lone))
        print(f"| {v.name} | {cells} | {mean_gap:.3f} / {largest:.3f} | {lone_scores} |",
              flush=True)  # fmt: skip
    return out


def write(
    variant: Variant, cal: RankCalibration, sha: str, folder: Path, train: int, composed: int
) -> None:
    provenance = (
        f"bench/fit/ranker_calibration.py --write: {variant.name}; logistic over "
        f"{', '.join(variant.inputs)}, then isotonic per band of places {BANDS} "
        f"({'on' if variant.isotonic else 'off'}); fitted on the first {TOP} candidates of "
        f"{train} data/natural training requests and {composed} composed two- and three-part "
        f"requests (weighted {variant.composed}; Gorilla and BFCL weighted {variant.seen}) for "
        f"{MODEL_FILE} sha256 {sha[:12]}"
    )
    final = RankCalibration(cal.inputs, cal.coef, cal.intercept, cal.bands, sha, provenance)
    path = folder / CALIBRATION_FILE
    path.write_text(json.dumps(final.to_dict(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
