"""The precision-first rule that sets ``no_match_below`` (bench/fit/calibrate.py, step 3).

At most 5 % of the answerable requests of *each* dev set flagged (the strictest set's 5 %
quantile), then as many no-match dev requests as that allows; among request models, the one
that flags the most no-match dev requests on average is kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from answerable import Evidences

from toolscout.search.calibration import Calibration, ModeModel
from toolscout.search.evidence import RequestEvidence

MAX_FLAGGED = 0.05


def _prob(model: ModeModel, mode: str, ev: RequestEvidence | None) -> float:
    if ev is None:
        return 0.0
    return Calibration({mode: model}, "-").answerable(mode, ev)


def _share(flags: list[bool]) -> float:
    return float(np.mean(flags)) if flags else math.nan


def choose(
    judge: Callable[[RequestEvidence | None], float],
    answerable: dict[str, Evidences],
    no_match: dict[str, Evidences],
) -> tuple[float, dict[str, float], dict[str, float]]:
    """Precision first: the strictest answerable dev set's 5 % quantile of ``judge`` (at most
    5 % of *each* set flagged), the share of each answerable set it flags, and of each
    no-match set."""
    cut = min(
        # "lower": a small set's quantile must not interpolate past its 5 % (4 of 62).
        float(np.quantile([judge(e) for e in evs["request"]], MAX_FLAGGED, method="lower"))
        for evs in answerable.values()
        if evs["request"]
    )
    return cut, flag_rates(judge, cut, answerable), flag_rates(judge, cut, no_match)


def flag_rates(
    judge: Callable[[RequestEvidence | None], float], cut: float, sets: dict[str, Evidences]
) -> dict[str, float]:
    return {name: _share([judge(e) < cut for e in evs["request"]]) for name, evs in sets.items()}


def select_request_model(
    mode: str,
    candidates: list[ModeModel],
    dev: tuple[dict[str, Evidences], dict[str, Evidences], dict[str, Evidences], Evidences],
    report: dict[str, Any],
) -> ModeModel:
    """Step 3 for one mode: each candidate's threshold by the precision-first rule; the one that
    flags the most no-match dev requests on average is kept (ties: the fewer features). ``dev``:
    the answerable and no-match dev sets, the held-out no-match and single-intent requests
    (reported only: they choose nothing)."""
    answerable, no_match, held, single_held = dev
    tried = []
    for fit in candidates:

        def judge(ev: RequestEvidence | None, fit: ModeModel = fit) -> float:
            return _prob(fit, mode, ev)

        cut, flagged, caught = choose(judge, answerable, no_match)
        tried.append((float(np.nanmean(list(caught.values()))), -len(tried), fit, cut))
        held_rates = flag_rates(judge, cut, held)
        report[f"{mode} over {', '.join(fit.request_features)}"] = {
            "coef": fit.request_coef, "intercept": fit.request_intercept,
            "no_match_below": cut, "answerable_flagged": flagged,
            "no_match_flagged_dev": caught, "no_match_flagged_test": held_rates,
            "single_intent_flagged_test": flag_rates(judge, cut, {"s": single_held})["s"],
        }  # fmt: skip
        print_choice(f"{mode} over {list(fit.request_features)}", cut, flagged, caught,
                      held_rates)  # fmt: skip
    _, _, fit, cut = max(tried, key=lambda t: (t[0], t[1]))
    report[mode] = {"request_features": fit.request_features, "no_match_below": cut}
    print(f"{mode}: chosen request model over {list(fit.request_features)}, "
          f"no_match_below {cut:.4f}", flush=True)  # fmt: skip
    return replace(fit, no_match_below=round(cut, 6))


def print_choice(
    name: str,
    cut: float,
    flagged: dict[str, float],
    caught: dict[str, float],
    caught_test: dict[str, float],
) -> None:
    def pct(d: dict[str, float]) -> str:
        return ", ".join(f"{k} {100 * v:.1f} %" for k, v in d.items())

    print(f"{name}: no_match_below {cut:.4f}\n  answerable dev flagged: {pct(flagged)}\n"
          f"  no-match dev flagged: {pct(caught)}\n  held out: {pct(caught_test)}",
          flush=True)  # fmt: skip
