"""What the status page shows beyond the engine's own figures: recent errors and the highlights
of the process's Prometheus metrics.

Recent errors are the last WARNING-or-worse records of the ``toolscout`` loggers in this process,
kept in memory by one handler installed once per process.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

KEEP = 50


@dataclass(frozen=True)
class LogEntry:
    at: str
    level: str
    logger: str
    message: str


class RecentErrors(logging.Handler):
    """Keeps the last ``KEEP`` warnings and errors."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._entries: deque[LogEntry] = deque(maxlen=KEEP)
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed log call must not break logging
            message = str(record.msg)
        at = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="seconds")
        with self._guard:
            self._entries.append(LogEntry(at, record.levelname, record.name, message[:500]))

    def entries(self) -> list[LogEntry]:
        """Newest first."""
        with self._guard:
            return list(reversed(self._entries))


_installed: RecentErrors | None = None
_install_lock = threading.Lock()


def recent_errors() -> RecentErrors:
    """The process's handler, attached to the ``toolscout`` logger on first use."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = RecentErrors()
            logging.getLogger("toolscout").addHandler(_installed)
        return _installed


@dataclass(frozen=True)
class RouteFigures:
    route: str
    requests: int
    errors: int
    mean_ms: float | None


@dataclass(frozen=True)
class MetricsSummary:
    requests: int
    server_errors: int
    client_errors: int
    routes: list[RouteFigures]
    stages_ms: dict[str, float]


def summarise(registry: CollectorRegistry) -> MetricsSummary:
    """Totals, per-route counts and mean latency, and mean search stage times."""
    counts: dict[str, int] = {}
    errors: dict[str, int] = {}
    lat_sum: dict[str, float] = {}
    lat_count: dict[str, float] = {}
    stage_sum: dict[str, float] = {}
    stage_count: dict[str, float] = {}
    server = client = 0
    for family in registry.collect():
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "toolscout_http_requests_total":
                route, status = labels.get("route", "?"), labels.get("status", "")
                n = int(sample.value)
                counts[route] = counts.get(route, 0) + n
                if status.startswith("5"):
                    server += n
                    errors[route] = errors.get(route, 0) + n
                elif status.startswith("4"):
                    client += n
            elif sample.name == "toolscout_http_request_duration_seconds_sum":
                lat_sum[labels.get("route", "?")] = sample.value
            elif sample.name == "toolscout_http_request_duration_seconds_count":
                lat_count[labels.get("route", "?")] = sample.value
            elif sample.name == "toolscout_search_stage_duration_seconds_sum":
                stage_sum[labels.get("stage", "?")] = sample.value
            elif sample.name == "toolscout_search_stage_duration_seconds_count":
                stage_count[labels.get("stage", "?")] = sample.value
    routes = [
        RouteFigures(
            route,
            n,
            errors.get(route, 0),
            1000 * lat_sum[route] / lat_count[route] if lat_count.get(route) else None,
        )
        for route, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    stages = {s: 1000 * stage_sum[s] / c for s, c in sorted(stage_count.items()) if c}
    return MetricsSummary(sum(counts.values()), server, client, routes[:12], stages)
