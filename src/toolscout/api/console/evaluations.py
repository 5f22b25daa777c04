"""The evaluations page: the report files ``toolscout eval`` wrote, and two of them side by side.

For every dataset in the chosen reports it draws hit@k and nDCG@k overall (k = 1, 3, 5, 10), the
same metrics per query group at one k, a reliability diagram of the scores of the first hit and
of the first five (how often a hit scored about p was right; the expected calibration error
beside, with its sampling floor: what exact probabilities would still show on that many hits),
and each report's latency histogram over shared bins, so bars can be compared directly. Plots
are inline SVG (:mod:`toolscout.api.console.plots`), each with its figures in a table beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from markupsafe import Markup

from toolscout.api.console.access import check_read
from toolscout.api.console.plots import (
    Series,
    bar_chart,
    histogram,
    reliability_diagram,
    shared_edges,
)
from toolscout.api.console.render import page
from toolscout.config import Settings
from toolscout.errors import QueryError
from toolscout.eval.reports import EvalReport, SetResult, list_reports, load_report

KS = (1, 3, 5, 10)
FAMILIES = (("hit", "hit"), ("ndcg", "nDCG"))
DEPTHS = (("top1", "the first hit"), ("top5", "the first five hits"))


@dataclass(frozen=True)
class Latency:
    report: str
    plot: Markup
    figures: dict[str, float]


@dataclass(frozen=True)
class Reliability:
    """One reliability diagram: what it bins, the plot, and per report its calibration error,
    that error's sampling floor (None for a report written before floors were recorded) and
    bins (lower edge, mean score, share right, hits)."""

    caption: str
    plot: Markup
    rows: list[tuple[str, float, float | None, list[tuple[float, float, float, int]]]]


@dataclass(frozen=True)
class DatasetView:
    """Everything drawn for one dataset."""

    name: str
    overall: list[tuple[str, Markup, list[tuple[str, list[float | None]]]]]
    groups: list[tuple[str, Markup, list[str], list[tuple[str, list[float | None]]]]]
    latency: list[Latency]
    scores: list[Reliability]


def reliability_views(dataset: str, sets: list[tuple[str, SetResult | None]]) -> list[Reliability]:
    """A reliability diagram per depth, over the reports whose run recorded scores."""
    out = []
    for key, caption in DEPTHS:
        rows = [
            (
                label,
                float(s.calibration[key]["ece"]),
                _floor(s.calibration[key]),
                list(s.calibration[key]["bins"]),
            )
            for label, s in sets
            if s is not None and key in s.calibration
        ]
        if rows:
            plot = reliability_diagram(
                f"{dataset}: scores of {caption}", [(label, bins) for label, _, _, bins in rows]
            )
            out.append(Reliability(f"scores of {caption}", plot, rows))
    return out


def _floor(figures: dict[str, Any]) -> float | None:
    floor = figures.get("floor")
    return None if floor is None else float(floor)


def _label(report: EvalReport) -> str:
    return report.label or report.id


def _set(report: EvalReport, dataset: str) -> SetResult | None:
    return next((s for s in report.sets if s.dataset == dataset), None)


def dataset_view(dataset: str, chosen: list[EvalReport], k: int) -> DatasetView:
    """The plots and tables for one dataset across the chosen reports."""
    sets = [(_label(r), _set(r, dataset)) for r in chosen]
    overall = []
    for key, name in FAMILIES:
        rows = [
            (label, [s.overall.get(f"{key}@{n}") if s else None for n in KS]) for label, s in sets
        ]
        series = [Series(label, tuple(values)) for label, values in rows]
        plot = bar_chart(f"{dataset}: {name}@k", [f"@{n}" for n in KS], series)
        overall.append((f"{name}@k", plot, rows))
    groups_seen = sorted({g for _, s in sets if s for g in s.groups})
    groups = []
    if groups_seen:
        for key, name in FAMILIES:
            metric = f"{key}@{k}"
            rows = [
                (label, [s.groups.get(g, {}).get(metric) if s else None for g in groups_seen])
                for label, s in sets
            ]
            series = [Series(label, tuple(values)) for label, values in rows]
            plot = bar_chart(f"{dataset}: {name}@{k} per group", groups_seen, series)
            groups.append((f"{name}@{k} per group", plot, groups_seen, rows))
    samples = [s.latency_samples_ms if s else () for _, s in sets]
    edges = shared_edges(samples)
    latency = [
        Latency(
            label,
            histogram(f"{dataset}: search time, {label}", sample, edges, index=i),
            s.latency_ms if s else {},
        )
        for i, ((label, s), sample) in enumerate(zip(sets, samples, strict=True))
    ]
    return DatasetView(dataset, overall, groups, latency, reliability_views(dataset, sets))


def view(folder: Path, a: str, b: str, k: str) -> dict[str, Any]:
    """The page's view: the report list and the comparison of ``a`` and ``b`` (by default the
    two newest reports).

    Raises:
        ReportNotFound: ``a`` or ``b`` names no report. QueryError: ``k`` is not 1, 3, 5, 10.
    """
    if not k.isdigit() or int(k) not in KS:
        raise QueryError("k", f"must be one of {', '.join(map(str, KS))}; got {k!r}")
    reports = list_reports(folder)
    ids = [i for i in (a, b) if i]
    if not ids:
        ids = [r.id for r in reports[:2]][::-1]  # older on the left
    chosen = [load_report(folder, i) for i in ids]
    datasets = list(dict.fromkeys(s.dataset for r in chosen for s in r.sets))
    return {
        "reports": reports,
        "chosen": chosen,
        "datasets": [dataset_view(d, chosen, int(k)) for d in datasets],
        "form": {"a": ids[0] if ids else "", "b": ids[1] if len(ids) > 1 else "", "k": int(k)},
        "ks": KS,
        "folder": str(folder),
    }


def routes(router: APIRouter, settings: Settings) -> None:
    """Add the evaluations page to ``router``."""
    folder = Path(settings.reports_dir)

    @router.get("/evals", include_in_schema=False)
    def evals(request: Request, a: str = "", b: str = "", k: str = "5") -> Response:
        def build() -> dict[str, Any]:
            check_read(request)
            return view(folder, a, b, k)

        return page(request, "evals.html", build, title="Evaluations")
