"""The REST API: ``create_app(engine, settings)`` builds a FastAPI app over one Engine.

Every route is one Engine call plus rendering. Routes are plain ``def`` functions, so FastAPI
runs them in its worker threads and the synchronous engine never blocks the event loop. Errors
are answered from the one table in :mod:`toolscout.api.errors`; an ``except Exception`` exists
only in the last-resort handler here, which logs and answers 500.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from threadpoolctl import threadpool_limits

from toolscout.api.auth import KeyPolicy
from toolscout.api.deps import (
    API,
    ERROR_TEXTS,
    GUARDED,
    LOOKUP_ERRORS,
    SEARCH_ERRORS,
    EngineDep,
    GateDep,
    Read,
)
from toolscout.api.errors import body_for, error_body, validation_body
from toolscout.api.gate import SearchGate
from toolscout.api.guard import (
    Guard,
    GuardConfig,
    HeaderDeadlineH11,
    allowed_host_names,
    api_body_access,
)
from toolscout.api.jobs import JobRunner
from toolscout.api.mcp import McpMount, create_mcp_server
from toolscout.api.metrics import Metrics, MetricsMiddleware
from toolscout.api.openapi import allowed_methods, document_body_errors
from toolscout.api.schemas import (
    QUERY_SCHEMA,
    ProviderTools,
    SearchRequest,
    SearchResponse,
    SkillOut,
    ToolDetail,
    ToolOut,
    ToolPage,
)
from toolscout.config import Settings, load_settings
from toolscout.engine import Engine
from toolscout.errors import Overloaded, ToolscoutError
from toolscout.formats import GroupBy, ProviderFormat, render
from toolscout.models import ItemType, SearchMode, SearchResult, Strategy
from toolscout.models import SearchRequest as CoreRequest
from toolscout.search.request import MAX_QUERY_CHARS

log = logging.getLogger("toolscout.api")


def _install_error_handlers(app: FastAPI) -> None:
    async def on_toolscout(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ToolscoutError)
        status, body = body_for(exc)
        if isinstance(exc, Overloaded):  # shed load: say when to come back, log nothing
            headers = {"Retry-After": str(exc.retry_after)}
            return JSONResponse(body, status_code=status, headers=headers)
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
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # the first matching route names only its own methods
            headers["Allow"] = allowed_methods(request)
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

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


QueryParam = Annotated[
    str,
    Query(
        max_length=MAX_QUERY_CHARS,
        description="What the agent wants to do.",
        json_schema_extra=QUERY_SCHEMA,
    ),
]
FormatParam = Annotated[
    ProviderFormat | None,
    Query(
        alias="format",
        description="Answer with one provider's tool definitions instead of the contract: "
        "`anthropic` (defer_loading tools + tool_reference blocks), `openai` (Chat "
        "Completions functions) or `openai-responses` (Responses tools).",
    ),
]
GroupParam = Annotated[
    GroupBy | None,
    Query(description="`openai-responses`: group tools into namespaces by server or skill."),
]


def _answer(
    result: SearchResult, fmt: ProviderFormat | None, group_by: GroupBy | None
) -> SearchResponse | ProviderTools:
    if fmt is None:
        return SearchResponse.of(result)
    return ProviderTools.model_validate(render(result, fmt, group_by=group_by))


def _search_routes(app: FastAPI) -> None:
    @app.post(f"{API}/search", dependencies=[Read], tags=["search"], responses=SEARCH_ERRORS)
    async def search(
        body: SearchRequest,
        gate: GateDep,
        request: Request,
        fmt: FormatParam = None,
        group_by: GroupParam = None,
    ) -> SearchResponse | ProviderTools:
        """The search contract: every tool (``strategy`` direct, the default of every door),
        skills first and then the tools inside them (hierarchical), or both (hybrid).
        ``?format=`` answers with a provider's tool definitions instead."""
        core = body.to_core()
        if fmt is not None:  # provider shapes: callable tools, each with its input schema
            core = replace(core, include_schemas=True, item_type=core.item_type or ItemType.TOOL)
        result = await gate.find(core)
        metrics: Metrics = request.app.state.metrics
        metrics.observe_stages(
            {k[:-8]: v for k, v in result.metadata.items() if k.endswith("_time_ms")}
        )
        return _answer(result, fmt, group_by)

    @app.get(f"{API}/search", dependencies=[Read], tags=["search"], responses=SEARCH_ERRORS)
    async def search_get(
        gate: GateDep,
        query: QueryParam,
        strategy: Strategy = Strategy.DIRECT,
        mode: SearchMode = SearchMode.HYBRID,
        item_type: ItemType | None = None,
        server: Annotated[str | None, Query(description="Comma-separated servers.")] = None,
        source: Annotated[str | None, Query(description="Comma-separated sources.")] = None,
        limit: Annotated[int, Query(ge=1, le=50)] = 5,
        min_score: Annotated[float, Query(ge=0.0, le=1.0)] = 0.0,
        include_schemas: bool = False,
        fmt: FormatParam = None,
        group_by: GroupParam = None,
    ) -> SearchResponse | ProviderTools:
        """The same search as POST, from query parameters (``direct`` with no stage-2
        threshold by default, as ``toolscout search``)."""
        servers, sources = _split(server), _split(source)
        if fmt is not None and item_type is None:
            item_type = ItemType.TOOL  # provider shapes define tools a model calls
        req = CoreRequest(
            query,
            item_type=item_type,
            limit=limit,
            tool_threshold=0.0,
            # Provider shapes carry each tool's input schema.
            include_schemas=include_schemas or fmt is not None,
            strategy=strategy,
            min_score=min_score,
            mode=mode,
            servers=tuple(servers) if servers else None,
            sources=tuple(sources) if sources else None,
        )
        return _answer(await gate.find(req), fmt, group_by)

    @app.get(f"{API}/search/skills", dependencies=[Read], tags=["search"], responses=SEARCH_ERRORS)
    async def search_skills(
        engine: EngineDep,
        gate: GateDep,
        query: QueryParam,
        limit: Annotated[int, Query(ge=1, le=20)] = 5,
        threshold: Annotated[float, Query(ge=0.0, le=1.0)] = 0.4,
    ) -> list[SkillOut]:
        """Stage 1 alone: the active skills matching a query, with tool counts (a list)."""
        run = partial(engine.match_skills, query, limit=limit, threshold=threshold)
        return [SkillOut.of_match(m) for m in await gate.run(run)]

    @app.get(f"{API}/search/tools", dependencies=[Read], tags=["search"], responses=SEARCH_ERRORS)
    async def search_tools(
        engine: EngineDep,
        gate: GateDep,
        query: QueryParam,
        skill_ids: Annotated[str | None, Query(description="Comma-separated skill ids.")] = None,
        item_type: ItemType | None = None,
        limit: Annotated[int, Query(ge=1, le=50)] = 10,
        threshold: Annotated[float, Query(ge=0.0, le=1.0)] = 0.0,
    ) -> list[ToolOut]:
        """Stage 2 alone: tools ranked inside the given skills (all tools without
        skill_ids), as a list."""
        run = partial(
            engine.search_in_skills,
            query,
            skill_ids=_split(skill_ids),
            item_type=item_type,
            limit=limit,
            threshold=threshold,
        )
        return [ToolOut.of(h) for h in await gate.run(run)]


def _tool_routes(app: FastAPI) -> None:
    @app.get(
        f"{API}/tools/{{tool_id:path}}",
        dependencies=[Read],
        tags=["tools"],
        responses=LOOKUP_ERRORS,
    )
    def get_tool(tool_id: str, engine: EngineDep) -> ToolDetail:
        """One tool with its input and output schemas."""
        return ToolDetail.of(engine.get_tool(tool_id))

    @app.get(f"{API}/tools", dependencies=[Read], tags=["tools"], responses=GUARDED)
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


def create_app(
    engine: Engine,
    settings: Settings | None = None,
    *,
    own_engine: bool = False,
    gate: SearchGate | None = None,
) -> FastAPI:
    """The REST API over ``engine``, with MCP's streamable HTTP transport at ``/mcp`` (one
    port, one :class:`~toolscout.api.gate.SearchGate` for both); keys and limits come from
    ``settings``.

    With ``own_engine`` the app closes the engine when it shuts down.

    Raises:
        ConfigError: settings cannot be loaded (only when ``settings`` is None).
    """
    s = settings if settings is not None else load_settings()
    gate = gate if gate is not None else SearchGate.for_settings(engine, s)
    policy = KeyPolicy(api_key=s.api_key, read_key=s.read_key)
    mcp = McpMount(create_mcp_server(engine, gate=gate), policy, host=s.host)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.running():
            yield
        if own_engine:
            engine.close()

    app = FastAPI(
        title="toolscout",
        summary="Find the right tools for an AI agent.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by service_http.docs_route from the package, not from a CDN
        redoc_url=None,
    )
    app.state.engine = engine
    app.state.gate = gate
    app.state.policy = policy
    app.state.metrics = Metrics()
    app.state.jobs = JobRunner()
    _install_error_handlers(app)
    _search_routes(app)
    _tool_routes(app)
    from toolscout.api.console import console_router
    from toolscout.api.enrich_http import enrich_routes  # these import this module too
    from toolscout.api.feedback_http import feedback_routes
    from toolscout.api.service_http import docs_route, service_routes
    from toolscout.api.skills_http import skill_routes  # it imports this module's helpers

    service_routes(app)
    docs_route(app)
    skill_routes(app)
    enrich_routes(app)
    feedback_routes(app)
    app.router.routes.append(mcp.route())
    app.include_router(console_router(s))  # the web console at /
    document_body_errors(app, ERROR_TEXTS[400], "#/components/schemas/ErrorBody")
    guard = GuardConfig(
        policy=policy,
        allowed_hosts=allowed_host_names(s.allowed_hosts, s.host),
        max_body_bytes=s.max_body_bytes,
        # MCP over HTTP only reads here: its bodies need the read policy, as search does.
        body_access=api_body_access({f"{API}/search", "/mcp"}, prefix="/api/"),
        shed=gate.shed_on(
            {("POST", f"{API}/search"), ("GET", f"{API}/search")}
            | {("GET", f"{API}/search/{stage}") for stage in ("skills", "tools")}
        ),
    )
    app.add_middleware(Guard, config=guard)  # inside the metrics: refusals are counted too
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
    HeaderDeadlineH11.header_timeout = settings.header_timeout  # a worker's own copy
    return create_app(Engine.open(settings), settings, own_engine=True)
