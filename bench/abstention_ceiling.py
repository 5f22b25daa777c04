"""How far can request-level evidence go? An optimistic ceiling for ``no_match``.

    python bench/abstention_ceiling.py [--embed-model onnx:FOLDER]

For every dev request (the pooled answerable dev requests and the no-match dev half, exactly as
bench/calibrate.py pools them) it records eight request-level signals: the vector leg's closest
cosine, the crowd (median cosine of its candidates), the gap to the second closest, the mean of
the ten closest, the best BM25 (in units of ln(N + 1)), the request's length in words (log),
its number of intents, and whether both legs put the same tool first. Then, for the closest
cosine alone and for the cosine with each other signal (and with all of them), it fits a
logistic regression **on the dev rows themselves** (answerable against no-match, weighted to
balance) and applies the 5 % rule of bench/calibrate.py. Fitting on the rows it is scored on
makes every figure but the first an upper bound for that signal set, not a candidate model; the
held-out halves (even ids of tests/data/no_match and tests/data/single_intent) are reported
beside it. Last, without fitting: the closest cosine mixed with the crowd in shares 0 to 1, by
the same rule, and what each share flags of the no-match and the single-intent requests.

First it prints where the closest cosine lies for each set (10th percentile, median, 90th
percentile, share below the 5 % cut): where the answerable and the no-match requests overlap;
and what the cut that would flag 85 % of the no-match dev requests flags of each answerable set.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import MAX_FLAGGED, collect_dev
from natural import ROOT, datasets, db_folder
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.models import SearchMode
from toolscout.search.calibration import fit_logistic

SIGNALS = ("cosine", "crowd", "gap", "mean10", "bm25", "log_words", "intents", "legs_agree")
Rows = list[list[float]]


def signals(engine: Engine, texts: list[str]) -> Rows:
    out: Rows = []
    for text in texts:
        vectors = engine.searcher.embed_query(text)
        near = engine.searcher.search_evidence(
            text, mode=SearchMode.VECTOR, limit=10, query_vectors=vectors
        )
        lexical = engine.searcher.search_evidence(text, mode=SearchMode.BM25, limit=1)
        cos = sorted((ev.cosine or 0.0 for _, ev in near), reverse=True) + [0.0] * 10
        first = near[0][1]
        agree = bool(lexical) and lexical[0][0].id == near[0][0].id
        out.append([
            cos[0], cos[0] - (first.standout or 0.0), cos[0] - cos[1], float(np.mean(cos[:10])),
            lexical[0][1].lexical or 0.0 if lexical else 0.0,
            math.log(max(1, len(text.split()))), float(len(vectors)), float(agree),
        ])  # fmt: skip
    return out


@dataclass(frozen=True)
class Linear:
    """A fitted logistic's decision value over some of the signals (standardised)."""

    cols: tuple[int, ...]
    mu: NDArray[np.float64]
    sd: NDArray[np.float64]
    coef: NDArray[np.float64]
    intercept: float

    def __call__(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        values: NDArray[np.float64] = ((rows[:, self.cols] - self.mu) / self.sd) @ self.coef
        return values + self.intercept


def crowd_sweep(pooled: NDArray[np.float64], *parts: NDArray[np.float64]) -> dict[str, list[float]]:
    """Not fitted: ``(1 - s) x closest cosine + s x crowd`` for s = 0, 0.1, ... 1, by the 5 %
    rule; the share of each part (no-match dev, no-match held out, single-intent dev,
    single-intent held out) it flags."""
    out: dict[str, list[float]] = {}
    for share in (round(0.1 * i, 1) for i in range(11)):

        def mixed(rows: NDArray[np.float64], share: float = share) -> NDArray[np.float64]:
            values: NDArray[np.float64] = (1 - share) * rows[:, 0] + share * rows[:, 1]
            return values

        cut = np.quantile(mixed(pooled), MAX_FLAGGED)
        out[str(share)] = [float(np.mean(mixed(part) < cut)) for part in parts]
        print(f"crowd share {share}: flagged no-match dev / held out, single-intent dev / held "
              "out: " + " / ".join(f"{100 * v:.1f}" for v in out[str(share)]))  # fmt: skip
    return out


def cosine_spread(parts: dict[str, Rows], cut: float) -> dict[str, list[float]]:
    """Per set: the closest cosine's 10th percentile, median and 90th percentile, and the share
    below ``cut``."""
    out: dict[str, list[float]] = {}
    for name, rows in parts.items():
        cos = np.array([r[0] for r in rows])
        out[name] = [
            *(float(np.quantile(cos, q)) for q in (0.1, 0.5, 0.9)),
            float(np.mean(cos < cut)),
        ]
        print(f"{name:28s} n {len(cos):4d}  closest cosine p10 / median / p90 "
              + " / ".join(f"{v:.3f}" for v in out[name][:3])
              + f"  below the cut {100 * out[name][3]:5.1f} %")  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embed-model", default=DEFAULT_MODEL, help="the model to measure")
    model = parser.parse_args().embed_model
    db_dir = db_folder(ROOT / "bench" / "out" / "natural" / "db", model)
    sets = datasets(ROOT / "data" / "natural")
    answerable, dev_rows, held_rows, single_rows = collect_dev(
        sets, db_dir, model, 300, signals, operator.add
    )
    pooled = np.array([r for rows in answerable.values() for r in rows])
    dev, held, single = np.array(dev_rows), np.array(held_rows), np.array(single_rows)
    cosine_cut = float(np.quantile(pooled[:, 0], MAX_FLAGGED))
    print(f"{model}: closest-cosine cut {cosine_cut:.3f} (5 % of the pooled answerable dev)")
    spread = cosine_spread(
        {**answerable, "no-match dev": dev_rows, "no-match held out": held_rows,
         "single-intent held out": single_rows}, cosine_cut
    )  # fmt: skip
    target_cut = float(np.quantile(dev[:, 0], 0.85))
    share = 100 * np.mean(pooled[:, 0] < target_cut)
    print(f"the cut that flags 85 % of the no-match dev requests, {target_cut:.3f}, flags "
          f"{share:.1f} % of the pooled answerable dev")  # fmt: skip
    at_target = cosine_spread(answerable, target_cut)
    choices = [(0,)] + [(0, i) for i in range(1, len(SIGNALS))] + [tuple(range(len(SIGNALS)))]
    report = {}
    for cols in choices:
        x = np.vstack([pooled[:, cols], dev[:, cols]])
        y = np.r_[np.ones(len(pooled)), np.zeros(len(dev))]
        mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-9
        coef, intercept = fit_logistic(
            (x - mu) / sd, y, weights=np.where(y == 1, 1.0, len(pooled) / len(dev))
        )

        fitted = Linear(cols, mu, sd, np.array(coef), intercept)

        cut = np.quantile(fitted(pooled), MAX_FLAGGED)
        name = " + ".join(SIGNALS[i] for i in cols)
        row = {
            "no_match_dev": float(np.mean(fitted(dev) < cut)),
            "no_match_held_out": float(np.mean(fitted(held) < cut)),
            "single_intent_held_out": float(np.mean(fitted(single) < cut)),
        }
        report[name] = row
        print(f"{name:70s} " + "  ".join(f"{k} {100 * v:5.1f}" for k, v in row.items()))
    sweep = crowd_sweep(pooled, dev, held, np.array(answerable["single_intent"]), single)
    out = ROOT / "bench" / "out" / "natural"
    out.mkdir(parents=True, exist_ok=True)
    (out / "abstention_ceiling.json").write_text(
        json.dumps(
            {
                "model": model,
                "cosine_spread": spread,
                "cut_for_85_percent": {"cut": target_cut, "spread": at_target},
                "fitted_on_dev": report,
                "crowd_sweep": sweep,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
