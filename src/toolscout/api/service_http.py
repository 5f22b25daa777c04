"""Service routes of the REST app: ``/health``, ``/metrics`` and the offline ``/docs`` page.

Each is one engine call (or none) plus rendering; the search and catalog routes live in
:mod:`toolscout.api.http`.
"""

from __future__ import annotations

import logging
import os

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access, is_loopback
from toolscout.api.deps import EngineDep, Read, errors
from toolscout.api.gate import SearchGate
from toolscout.api.metrics import Metrics
from toolscout.api.schemas import Health, HealthStatus
from toolscout.engine import Engine
from toolscout.errors import AccessDenied, EmptyIndex, StoreError

log = logging.getLogger("toolscout.api")


def health_of(engine: Engine) -> tuple[int, Health]:
    """The HTTP status and the full health body (the console's status page shows it too)."""
    name = getattr(engine.embedder, "name", None)
    try:
        info = engine.info()
        skills = engine.skills.list() if hasattr(engine, "skills") else None
    except StoreError as exc:
        log.warning("health: store unreachable: %s", exc)
        health = Health(
            status="degraded",
            store=engine.store.url,
            store_reachable=False,
            model=name,
            model_loaded=name is not None,
            tools=0,
            pid=os.getpid(),
        )
        return 503, health
    tools = int(info["tools"])
    health = Health(
        status="ok" if tools else "empty",
        hint=None if tools else EmptyIndex.HINT,
        store=str(info["store"]),
        store_reachable=True,
        model=name,
        model_loaded=name is not None,
        tools=tools,
        skills=len(skills) if skills is not None else None,
        query_cache=engine.query_cache_stats(),
        result_cache=engine.result_cache_stats(),
        pid=os.getpid(),
    )
    return 200, health


def _trusted(request: Request) -> bool:
    """A loopback caller, or one holding the read or admin key."""
    client = request.client.host if request.client else None
    if is_loopback(client):
        return True
    policy: KeyPolicy = request.app.state.policy
    token = bearer_token(request.headers.get("authorization"))
    if token is None or not (policy.read_key or policy.api_key):
        return False
    try:
        check_access(policy, Access.READ, token, client)
    except AccessDenied:
        return False
    return True


def service_routes(app: FastAPI) -> None:
    # Also under /api/v1, where the route table puts everything else.
    @app.get("/api/v1/health", tags=["service"], response_model=Health | HealthStatus)
    @app.get("/health", tags=["service"], response_model=Health | HealthStatus)
    def health(engine: EngineDep, request: Request) -> JSONResponse:
        """Store reachable, model loaded, counts (open: carries no tool data). Callers that are
        neither on loopback nor hold a key get the status alone: the store path, counts and
        process id say nothing they need and help an attacker."""
        status, body = health_of(engine)
        if not _trusted(request):
            return JSONResponse({"status": body.status}, status_code=status)
        return JSONResponse(body.model_dump(), status_code=status)

    @app.get(
        "/metrics",
        dependencies=[Read],
        tags=["service"],
        response_class=Response,
        responses=errors(401, 403),
    )
    def metrics(request: Request, engine: EngineDep) -> Response:
        """Prometheus text format: requests and latency per route, search stage timings, caches,
        and searches shed or waiting at the admission gate."""
        m: Metrics = request.app.state.metrics
        gate: SearchGate = request.app.state.gate
        body = m.render(
            engine.query_cache_stats,
            engine.result_cache_stats,
            lambda: {"shed": gate.shed, "waiting": gate.waiting},
        )
        return Response(body, media_type=m.content_type)


def docs_route(app: FastAPI) -> None:
    """``/docs``: Swagger UI over ``/openapi.json`` with its script and stylesheet from the
    ``swagger-ui-bundle-v2`` wheel, so the page works offline (FastAPI's own loads them from a
    CDN)."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from starlette.staticfiles import StaticFiles
    from swagger_ui_bundle import swagger_ui_path

    app.mount("/docs/assets", StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title="toolscout API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="data:,",
        )
