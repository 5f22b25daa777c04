"""Evaluation report files: what ``toolscout eval`` writes and the web console reads.

One JSON file per evaluation run in the reports folder (``settings.reports_dir``)::

    {"format": "toolscout-eval/1", "id": "20261123T101500Z-toolbench_stable-hybrid",
     "created_at": "2026-11-23T10:15:00+00:00", "engine": {"embedder": ..., "fusion": ...},
     "sets": [{"dataset": ..., "mode": ..., "queries": N, "overall": {"hit@1": ...},
               "groups": {"easy": {...}}, "latency_ms": {"p50": ...},
               "latency_samples_ms": [...]}]}

Metrics are fractions (0..1) keyed like ``ndcg@10``; ``latency_samples_ms`` holds every query's
search time in query order, so two reports can be compared as distributions, not only as
percentiles. A report id is its file name without ``.json``; ids are checked against the folder
listing before a file is opened, so an id can never name a path outside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolscout.errors import ToolscoutError
from toolscout.eval.run import Report

FORMAT = "toolscout-eval/1"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ReportNotFound(ToolscoutError):
    """No report with the requested id in the reports folder, or it cannot be read."""

    def __init__(self, report_id: str, why: str = "no such report") -> None:
        super().__init__(f"evaluation report {report_id!r}: {why}")
        self.report_id = report_id


@dataclass(frozen=True)
class SetResult:
    """One dataset's figures inside a report."""

    dataset: str
    mode: str
    queries: int
    overall: dict[str, float]
    groups: dict[str, dict[str, float]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    latency_samples_ms: tuple[float, ...] = ()
    #: ``top1`` / ``top5``: the scores' calibration error, its sampling floor (absent in older
    #: reports) and reliability bins (eval/run.py).
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalReport:
    """A report file's content."""

    id: str
    created_at: str
    engine: dict[str, Any]
    sets: tuple[SetResult, ...]
    label: str | None = None


def report_payload(
    reports: Sequence[Report], *, engine: Mapping[str, Any], label: str | None = None
) -> dict[str, Any]:
    """The JSON object of a report file for the given evaluation results."""
    now = datetime.now(UTC).replace(microsecond=0)
    first = reports[0] if reports else None
    stem = f"{now.strftime('%Y%m%dT%H%M%SZ')}"
    if first is not None:
        stem += f"-{first.dataset}-{first.mode}"
    return {
        "format": FORMAT,
        "id": _UNSAFE.sub("_", stem),
        "created_at": now.isoformat(),
        "label": label,
        "engine": dict(engine),
        "sets": [
            {
                "dataset": r.dataset,
                "mode": r.mode,
                "queries": r.queries,
                "overall": r.overall,
                "groups": r.groups,
                "latency_ms": r.latency_ms,
                "latency_samples_ms": [round(t, 3) for t in r.latency_samples_ms],
                "calibration": r.calibration,
            }
            for r in reports
        ],
    }


def write_report(folder: Path, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as ``folder/<id>.json`` (a numbered suffix when the id is taken).

    Raises:
        OSError: the folder cannot be created or written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    base = str(payload["id"])
    report_id, n = base, 1
    while (folder / f"{report_id}.json").exists():
        n += 1
        report_id = f"{base}-{n}"
    path = folder / f"{report_id}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({**payload, "id": report_id}, indent=1), encoding="utf-8")
    tmp.replace(path)  # readers never see half a file
    return path


def list_reports(folder: Path) -> list[EvalReport]:
    """Every readable report in ``folder``, newest first (unreadable files are left out)."""
    if not folder.is_dir():
        return []
    out: list[EvalReport] = []
    for path in folder.glob("*.json"):
        try:
            out.append(_parse(path))
        except ReportNotFound:
            continue
    return sorted(out, key=lambda r: (r.created_at, r.id), reverse=True)


def load_report(folder: Path, report_id: str) -> EvalReport:
    """The report with ``report_id``.

    Raises:
        ReportNotFound: no such report in ``folder``, or it is not a valid report.
    """
    names = {p.stem: p for p in folder.glob("*.json")} if folder.is_dir() else {}
    path = names.get(report_id)
    if path is None:
        raise ReportNotFound(report_id)
    return _parse(path)


def _parse(path: Path) -> EvalReport:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("format") != FORMAT:
            raise ValueError(f"format is {raw.get('format')!r}, expected {FORMAT}")
        sets = tuple(
            SetResult(
                dataset=str(s["dataset"]),
                mode=str(s.get("mode", "")),
                queries=int(s.get("queries", 0)),
                overall={k: float(v) for k, v in s.get("overall", {}).items()},
                groups={
                    str(g): {k: float(v) for k, v in m.items()}
                    for g, m in s.get("groups", {}).items()
                },
                latency_ms={k: float(v) for k, v in s.get("latency_ms", {}).items()},
                latency_samples_ms=tuple(float(t) for t in s.get("latency_samples_ms", [])),
                calibration=_calibration(s.get("calibration") or {}),
            )
            for s in raw["sets"]
        )
        return EvalReport(
            id=path.stem,
            created_at=str(raw.get("created_at", "")),
            engine=dict(raw.get("engine") or {}),
            sets=sets,
            label=raw.get("label"),
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ReportNotFound(path.stem, f"cannot be read: {exc}") from exc


def _calibration(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A report's calibration figures, checked (older reports have none, or no floor)."""
    out: dict[str, dict[str, Any]] = {}
    for name, part in raw.items():
        figures: dict[str, Any] = {
            "ece": float(part["ece"]),
            "bins": [(float(lo), float(m), float(r), int(n)) for lo, m, r, n in part["bins"]],
        }
        if part.get("floor") is not None:
            figures["floor"] = float(part["floor"])
        out[str(name)] = figures
    return out
