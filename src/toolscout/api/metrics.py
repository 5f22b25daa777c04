"""Prometheus metrics for the HTTP API: requests and latency per route, search stage timings.

Each app gets its own registry so several apps (tests, workers) never share counters. The
middleware is plain ASGI (no BaseHTTPMiddleware): it costs one timer per request. Routes are
labelled by their template (``/api/v1/tools/{tool_id}``), never by the raw path, so label
cardinality stays bounded whatever clients send.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5)
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0)


class Metrics:
    """The collectors of one app."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "toolscout_http_requests",
            "HTTP requests answered, by route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "toolscout_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.stages = Histogram(
            "toolscout_search_stage_duration_seconds",
            "Time spent in each search stage.",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.query_cache = Gauge(
            "toolscout_query_cache",
            "Query embedding cache: hits, misses and entries.",
            ["kind"],
            registry=self.registry,
        )
        self.result_cache = Gauge(
            "toolscout_result_cache",
            "Finished-search cache (dropped on any index change): hits, misses and entries.",
            ["kind"],
            registry=self.registry,
        )
        self.searches = Gauge(
            "toolscout_searches",
            "Search admission (REST and /mcp share it): searches shed with `overloaded` since "
            "start, and searches waiting for a slot now.",
            ["kind"],
            registry=self.registry,
        )

    def observe_stages(self, stage_ms: Mapping[str, Any]) -> None:
        """Record stage timings given in milliseconds (non-numeric entries are ignored)."""
        for stage, value in stage_ms.items():
            if isinstance(value, int | float):
                self.stages.labels(stage=stage).observe(float(value) / 1000.0)

    def render(
        self,
        cache_stats: Callable[[], Mapping[str, int] | None] | None = None,
        result_stats: Callable[[], Mapping[str, int] | None] | None = None,
        search_stats: Callable[[], Mapping[str, int] | None] | None = None,
    ) -> bytes:
        """The Prometheus text exposition of every collector."""
        sources = (
            (cache_stats, self.query_cache),
            (result_stats, self.result_cache),
            (search_stats, self.searches),
        )
        for source, gauge in sources:
            stats = source() if source is not None else None
            for kind, value in (stats or {}).items():
                gauge.labels(kind=kind).set(value)
        return generate_latest(self.registry)


def _route_label(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    # Unmatched paths share one label: raw paths from clients would be unbounded.
    return path if isinstance(path, str) else "<unmatched>"


class MetricsMiddleware:
    """Counts and times every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = _route_label(scope)
            method = str(scope.get("method", "GET"))
            self.metrics.requests.labels(method=method, route=route, status=str(status)).inc()
            self.metrics.latency.labels(method=method, route=route).observe(
                time.perf_counter() - start
            )
