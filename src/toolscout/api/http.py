"""The REST API: ``create_app(engine, settings)`` builds a FastAPI app over one Engine.

Every route is one Engine call plus rendering. Routes are plain ``def`` functions, so FastAPI
runs them in its worker threads and the synchronous engine never blocks the event loop. Errors
are answered from the one table in :mod:`toolscout.api.errors`; an ``except Exception`` exists
only in the last-resort handler here, which logs and answers 500.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from threadpoolctl import threadpool_limits

from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access
from toolscout.api.errors import body_for, error_body, validation_body
from toolscout.api.jobs import JobRunner
from toolscout.api.metrics import Metrics, MetricsMiddleware
from toolscout.api.schemas import (
    FlatSearchResponse,
    Health,
    SearchMetadata,
    SearchRequest,
    SearchResponse,
    SkillMatchesResponse,
    SkillOut,
    ToolDetail,
    ToolHitsResponse,
    ToolOut,
    ToolPage,
)
from toolscout.config import Settings, load_settings
from toolscout.engine import Engine
from toolscout.errors import StoreError, ToolscoutError
from toolscout.models import HierarchicalRequest, ItemType, SearchMode

log = logging.getLogger("toolscout.api")

API = "/api/v1"
#: Searches running at once per process (see ``_searching``): one per core with the default
#: local int8 query encoder, four per core when queries batch (exact encoder, remote models).
CORES = max(1, os.cpu_count() or 1)
T = TypeVar("T")


def access(level: Access) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """A dependency enforcing the key policy for ``level`` (async: no thread hop for it).

    Raises:
        AccessDenied: answered 401/403 by the error table.
    """

    async def dependency(request: Request) -> None:
        policy: KeyPolicy = request.app.state.policy
        client = request.client.host if request.client else None
        check_access(policy, level, bearer_token(request.headers.get("authorization")), client)

    return dependency


Read = Depends(access(Access.READ))
Write = Depends(access(Access.WRITE))


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(_engine)]


def _install_error_handlers(app: FastAPI) -> None:
    async def on_toolscout(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ToolscoutError)
        status, body = body_for(exc)
        if status >= 500:
            log.error("%s %s failed: %s", request.method, request.url.path, exc)
        return JSONResponse(body, status_code=status)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse(validation_body(exc.errors()), status_code=422)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = "not_found" if exc.status_code == 404 else "http_error"
        body = error_body(code, str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        # The edge of the edge: a bug, never a client mistake. Log it, answer without details.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)

    app.add_exception_handler(ToolscoutError, on_toolscout)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)


def _split(value: str | None) -> list[str] | None:
    items = [v.strip() for v in (value or "").split(",") if v.strip()]
    return items or None


async def _searching(request: Request, fn: Callable[[], T]) -> T:
    """Run one search on a worker thread, at most ``search_threads`` at a time per process.

    With the exact query encoder, searches in flight share the model: their query embeddings
    run as one batch (:class:`~toolscout.embed.batching.QueryBatcher`), which costs less per
    query than one run each, so four per core run at once. The default int8 encoder embeds one
    query per call (no batch to gain), and more searches in flight than cores only thrash on the
    GIL and the store lock: one per core (measured: docs/BENCHMARKS.md §4). The rest wait on
    the event loop; the other routes (health, metrics, tool reads) keep their own threads.
    """
    slots: anyio.CapacityLimiter | None = getattr(request.app.state, "search_slots", None)
    if slots is None:  # created lazily: a limiter belongs to the running event loop
        count = request.app.state.search_slot_count
        slots = request.app.state.search_slots = anyio.CapacityLimiter(count)
    return await anyio.to_thread.run_sync(fn, limiter=slots)


def _search_routes(app: FastAPI) -> None:
    @app.post(f"{API}/search", dependencies=[Read], tags=["search"])
    async def search(body: SearchRequest, engine: EngineDep, request: Request) -> SearchResponse:
        """Hierarchical search: skills first, then tools inside them (the search contract)."""
        req = HierarchicalRequest(**body.model_dump())
        # A repeated request is answered from the result cache without waiting for a search
        # slot (the lookup reads the store's data version, so it runs off the event loop).
        result = await anyio.to_thread.run_sync(engine.cached_find, req)
        if result is None:
            result = await _searching(request, partial(engine.find, req))
        metrics: Metrics = request.app.state.metrics
        metrics.observe_stages(result.metadata.get("stage_ms", {}))
        return SearchResponse(
            tools=[ToolOut.of(h) for h in result.tools],
            matched_skills=[SkillOut.of_match(m) for m in result.matched_skills],
            metadata=SearchMetadata.model_validate(result.metadata),
        )

    @app.get(f"{API}/search", dependencies=[Read], tags=["search"])
    async def flat_search(
        engine: EngineDep,
        request: Request,
        query: str,
        mode: SearchMode = SearchMode.HYBRID,
        item_type: ItemType | None = None,
        server: str | None = None,
        limit: Annotated[int, Query(ge=1, le=50)] = 5,
    ) -> FlatSearchResponse:
        """The core engine's flat search over every tool (what ``toolscout search`` runs)."""
        run = partial(
            engine.search,
            query,
            mode=mode,
            limit=limit,
            servers=[server] if server else None,
            item_types=[item_type] if item_type else None,
        )
        return FlatSearchResponse.of(await _searching(request, run))

    @app.get(f"{API}/search/skills", dependencies=[Read], tags=["search"])
    async def search_skills(
        engine: EngineDep,
        request: Request,
        query: str,
        limit: Annotated[int, Query(ge=1, le=50)] = 5,
        threshold: Annotated[float, Query(ge=0.0, le=1.0)] = 0.4,
    ) -> SkillMatchesResponse:
        """Stage 1 alone: the active skills matching a query, with tool counts."""
        run = partial(engine.match_skills, query, limit=limit, threshold=threshold)
        matches = await _searching(request, run)
        return SkillMatchesResponse(skills=[SkillOut.of_match(m) for m in matches])

    @app.get(f"{API}/search/tools", dependencies=[Read], tags=["search"])
    async def search_tools(
        engine: EngineDep,
        request: Request,
        query: str,
        skill_ids: Annotated[str | None, Query(description="Comma-separated skill ids.")] = None,
        item_type: ItemType | None = None,
        limit: Annotated[int, Query(ge=1, le=50)] = 10,
        threshold: Annotated[float, Query(ge=0.0, le=1.0)] = 0.3,
    ) -> ToolHitsResponse:
        """Stage 2 alone: tools ranked inside the given skills (all tools without skill_ids)."""
        run = partial(
            engine.search_in_skills,
            query,
            skill_ids=_split(skill_ids),
            item_type=item_type,
            limit=limit,
            threshold=threshold,
        )
        hits = await _searching(request, run)
        return ToolHitsResponse(tools=[ToolOut.of(h) for h in hits])


def _tool_routes(app: FastAPI) -> None:
    @app.get(f"{API}/tools/{{tool_id:path}}", dependencies=[Read], tags=["tools"])
    def get_tool(tool_id: str, engine: EngineDep) -> ToolDetail:
        """One tool with its input and output schemas."""
        return ToolDetail.of(engine.get_tool(tool_id))

    @app.get(f"{API}/tools", dependencies=[Read], tags=["tools"])
    def list_tools(
        engine: EngineDep,
        server: str | None = None,
        skill_id: str | None = None,
        item_type: ItemType | None = None,
        offset: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
    ) -> ToolPage:
        """A page of tools ordered by id, optionally filtered (schemas left out)."""
        tools, total = engine.list_tools(
            servers=[server] if server else None,
            skill_ids=[skill_id] if skill_id else None,
            item_types=[item_type] if item_type else None,
            offset=offset,
            limit=limit,
        )
        items = [ToolDetail.of(t, include_schemas=False) for t in tools]
        return ToolPage(items=items, total=total, offset=offset, limit=limit)


def _health(engine: Engine) -> tuple[int, Health]:
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
    health = Health(
        status="ok",
        store=str(info["store"]),
        store_reachable=True,
        model=name,
        model_loaded=name is not None,
        tools=int(info["tools"]),
        skills=len(skills) if skills is not None else None,
        query_cache=engine.query_cache_stats(),
        result_cache=engine.result_cache_stats(),
        pid=os.getpid(),
    )
    return 200, health


def _service_routes(app: FastAPI) -> None:
    @app.get("/health", tags=["service"], response_model=Health)
    def health(engine: EngineDep) -> JSONResponse:
        """Store reachable, model loaded, counts (open: carries no tool data)."""
        status, body = _health(engine)
        return JSONResponse(body.model_dump(), status_code=status)

    @app.get("/metrics", dependencies=[Read], tags=["service"], response_class=Response)
    def metrics(request: Request, engine: EngineDep) -> Response:
        """Prometheus text format: requests and latency per route, search stage timings."""
        m: Metrics = request.app.state.metrics
        return Response(
            m.render(engine.query_cache_stats, engine.result_cache_stats), media_type=m.content_type
        )


def create_app(
    engine: Engine, settings: Settings | None = None, *, own_engine: bool = False
) -> FastAPI:
    """The REST API over ``engine``; keys and limits come from ``settings``.

    With ``own_engine`` the app closes the engine when it shuts down.

    Raises:
        ConfigError: settings cannot be loaded (only when ``settings`` is None).
    """
    s = settings if settings is not None else load_settings()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if own_engine:
            engine.close()

    app = FastAPI(
        title="toolscout",
        summary="Find the right tools for an AI agent.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.engine = engine
    one_query_per_call = s.query_encoder == "int8" and s.embed_model.startswith("local:")
    app.state.search_slot_count = s.search_threads or (CORES if one_query_per_call else 4 * CORES)
    app.state.policy = KeyPolicy(api_key=s.api_key, read_key=s.read_key)
    app.state.metrics = Metrics()
    app.state.jobs = JobRunner()
    _install_error_handlers(app)
    _search_routes(app)
    _tool_routes(app)
    _service_routes(app)
    from toolscout.api.console import console_router
    from toolscout.api.enrich_http import enrich_routes  # these import this module too
    from toolscout.api.skills_http import skill_routes  # it imports this module's helpers

    skill_routes(app)
    enrich_routes(app)
    app.include_router(console_router(s))  # the web console at /
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    return app


def limit_blas_threads() -> None:
    """One BLAS thread per call in a server process.

    Each request runs a mat-vec over every tool vector; with several requests in flight,
    OpenBLAS's own threads only oversubscribe the cores (measured on the 2-core machine:
    hierarchical search p50 59 ms with one BLAS thread, 126 ms with two; docs/BENCHMARKS.md).
    """
    threadpool_limits(limits=1, user_api="blas")


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (one per worker): Settings from env, own engine.

    Raises:
        ConfigError, StoreError, EmbedError: the engine cannot be opened.
    """
    limit_blas_threads()
    settings = load_settings()
    return create_app(Engine.open(settings), settings, own_engine=True)
