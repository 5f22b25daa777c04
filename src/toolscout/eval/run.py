"""Evaluate a search configuration on a dataset in the shared benchmark format."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolscout.engine import Engine
from toolscout.errors import IngestError
from toolscout.eval.metrics import (
    calibration_error,
    mean,
    percentile,
    reliability,
    sampling_floor,
    score_query,
)
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    gold: tuple[str, ...]
    group: str | None = None


@dataclass
class Report:
    """Metrics overall and per group, with latency percentiles (ms)."""

    dataset: str
    mode: str
    queries: int
    overall: dict[str, float]
    groups: dict[str, dict[str, float]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    #: Every query's search time (ms), in query order.
    latency_samples_ms: list[float] = field(default_factory=list)
    #: How well the hits' scores are calibrated, for the first hit (``top1``) and the first
    #: five (``top5``): the expected calibration error, its sampling floor and the reliability
    #: diagram's bins (lower edge, mean score, share right, hits). Empty when the search gave
    #: no scores.
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "mode": self.mode,
            "queries": self.queries,
            "overall": self.overall,
            "groups": self.groups,
            "latency_ms": self.latency_ms,
            "calibration": self.calibration,
        }


GROUP_FIELDS = ("group", "split", "difficulty")


def load_queries(path: Path, group_field: str | None = None) -> list[Query]:
    """Read ``queries.jsonl``; queries with empty gold are skipped.

    Raises: IngestError if the file is missing or a line is not valid JSON with id/query/gold."""
    if not path.is_file():
        raise IngestError(f"{path}: no such queries file")
    out: list[Query] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            gold = tuple(row["gold"])
            text = str(row["query"])
            qid = str(row["id"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise IngestError(f"{path}:{lineno}: need id, query and gold: {exc}") from exc
        if not gold:
            continue
        fields = (group_field,) if group_field else GROUP_FIELDS
        group = next((str(row[f]) for f in fields if f in row), None)
        out.append(Query(qid, text, gold, group))
    return out


def index_dataset(
    engine: Engine,
    set_dir: Path,
    progress: Callable[[int, int], None] | None = None,
    tools: Path | None = None,
) -> None:
    """Index ``tools`` (default ``set_dir/tools.jsonl``); unchanged tools are skipped.

    Raises: IngestError."""
    loaded = CatalogFile(tools or set_dir / "tools.jsonl", source=set_dir.name).read()
    if loaded.problems:
        raise IngestError(
            f"{set_dir}: {len(loaded.problems)} bad tools, first: {loaded.problems[0]}"
        )
    engine.index([loaded], progress=progress)


def evaluate(
    engine: Engine,
    set_dir: Path,
    *,
    mode: SearchMode = SearchMode.HYBRID,
    limit: int = 10,
    group_field: str | None = None,
    run_file: Path | None = None,
    search: Callable[[str], list[str]] | None = None,
) -> Report:
    """Run every query and score it. ``search`` overrides how a query is answered (ids).

    Raises: IngestError, QueryError."""
    queries = load_queries(set_dir / "queries.jsonl", group_field)
    scored: list[list[float]] = []

    def default_search(text: str) -> list[str]:
        hits = engine.search(text[:1000], mode=mode, limit=limit).hits
        scored.append([h.score for h in hits])
        return [h.tool.id for h in hits]

    run = search or default_search
    rows: list[dict[str, float]] = []
    by_group: dict[str, list[dict[str, float]]] = {}
    times: list[tuple[int, float]] = []
    lines: list[str] = []
    rankings: list[list[str]] = []
    for q in queries:
        t0 = time.perf_counter()
        ranked = run(q.text)
        times.append((len(q.text.split()), (time.perf_counter() - t0) * 1000))
        scores = score_query(ranked, q.gold)
        rows.append(scores)
        if q.group:
            by_group.setdefault(q.group, []).append(scores)
        lines.append(json.dumps({"query_id": q.id, "ranked": ranked}))
        rankings.append(ranked)
    if run_file:
        run_file.parent.mkdir(parents=True, exist_ok=True)
        run_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    all_t = [t for _, t in times]
    short = [t for w, t in times if w <= 12]
    long = [t for w, t in times if w > 12]
    latency = {"p50": percentile(all_t, 50), "p95": percentile(all_t, 95)}
    if short:
        latency.update(short_p50=percentile(short, 50), short_p95=percentile(short, 95))
    if long:
        latency.update(long_p50=percentile(long, 50), long_p95=percentile(long, 95))
    return Report(
        dataset=set_dir.name,
        mode=mode.value,
        queries=len(queries),
        overall=mean(rows),
        groups={g: mean(r) for g, r in sorted(by_group.items())},
        latency_ms=latency,
        latency_samples_ms=all_t,
        calibration=_calibration(queries, rankings, scored) if search is None else {},
    )


def _calibration(
    queries: list[Query], rankings: list[list[str]], scores: list[list[float]]
) -> dict[str, dict[str, Any]]:
    """Expected calibration error, its sampling floor (what exact probabilities would show on
    this many hits) and reliability bins of the first hit and the first five."""
    out: dict[str, dict[str, Any]] = {}
    for name, depth in (("top1", 1), ("top5", 5)):
        pairs = [
            (s, tid in q.gold)
            for q, ids, row in zip(queries, rankings, scores, strict=True)
            for tid, s in zip(ids[:depth], row[:depth], strict=True)
        ]
        out[name] = {
            "ece": round(calibration_error(pairs), 4),
            "floor": round(sampling_floor([s for s, _ in pairs]), 4),
            "bins": [[lo, round(m, 4), round(r, 4), n] for lo, m, r, n in reliability(pairs)],
        }
    return out
