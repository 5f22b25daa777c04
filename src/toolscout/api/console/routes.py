"""The web console's pages: search playground, catalog, status, and the admin session.

Served by ``toolscout serve`` on the API's port. Every handler checks access the way the REST
API does (:mod:`toolscout.api.console.access`), then makes one engine call per page section and
renders a template, on a worker thread, so the synchronous engine never blocks the event loop.
A page that searches takes a slot of the server's :class:`~toolscout.api.gate.SearchGate`,
like REST and MCP searches: under overload it answers 503 at once instead of adding work.
Skills and evaluations live in their own modules.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from toolscout.api.console import evaluations, governance, sources
from toolscout.api.console.access import COOKIE, check_key, check_read, is_admin, session_token
from toolscout.api.console.render import error_page, page, static
from toolscout.api.console.status import recent_errors, summarise
from toolscout.api.gate import SearchGate
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import AccessDenied, QueryError, ToolscoutError
from toolscout.models import SearchMode

STRATEGIES = ("hierarchical", "direct", "hybrid")
PAGE_SIZE = 50


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


async def _searching(
    request: Request, query: str, title: str, render: Callable[[], Response]
) -> Response:
    """``render`` (a page) on a worker thread; in a search slot of the server's gate when the
    page searches for ``query``, so the console sheds load as the REST and MCP doors do."""
    if not query.strip():
        return await anyio.to_thread.run_sync(render)
    try:
        check_read(request)  # before taking a slot
        gate: SearchGate = request.app.state.gate
        return await gate.run(render)
    except ToolscoutError as exc:
        return error_page(request, exc, title=title)


def _search_page(router: APIRouter) -> None:
    @router.get("/", include_in_schema=False)
    async def search(
        request: Request,
        q: str = "",
        strategy: str = "direct",
        mode: str = "hybrid",
        limit: str = "5",
        item_type: str = "",
        server: str = "",
    ) -> Response:
        form = {
            "q": q,
            "strategy": strategy,
            "mode": mode,
            "limit": limit,
            "item_type": item_type,
            "server": server,
        }

        def build() -> dict[str, Any]:
            check_read(request)
            view: dict[str, Any] = {
                "form": form,
                "strategies": STRATEGIES,
                "modes": [m.value for m in SearchMode],
            }
            if not q.strip():
                return view
            try:
                count = int(limit)
            except ValueError:
                raise QueryError(
                    "limit", f"must be a whole number from 1 to 50; got {limit!r}"
                ) from None
            if strategy not in STRATEGIES:
                raise QueryError("strategy", f"must be one of {', '.join(STRATEGIES)}")
            view["result"] = _engine(request).explain(
                q,
                strategy=strategy,
                mode=mode,
                limit=count,
                server=server or None,
                item_type=item_type or None,
            )
            return view

        return await _searching(
            request, q, "Search", lambda: page(request, "search.html", build, title="Search")
        )


def _catalog_pages(router: APIRouter, settings: Settings) -> None:
    @router.get("/catalog", include_in_schema=False)
    async def catalog(
        request: Request,
        server: str = "",
        q: str = "",
        item_type: str = "",
        offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
    ) -> Response:
        def build() -> dict[str, Any]:
            check_read(request)
            engine = _engine(request)
            inventory = engine.inventory()
            view: dict[str, Any] = {
                "inventory": inventory,
                "origins": sources.view(settings, inventory),
                "form": {"server": server, "q": q, "item_type": item_type, "offset": offset},
            }
            servers = [server] if server else None
            types = [item_type] if item_type else None
            if q.strip():
                found = engine.search(
                    q, mode=SearchMode.BM25, limit=50, servers=servers, item_type=item_type
                )
                view.update(tools=[h.tool for h in found.hits], total=len(found.hits))
            else:
                tools, total = engine.list_tools(
                    servers=servers, item_types=types, offset=offset, limit=PAGE_SIZE
                )
                view.update(tools=tools, total=total, page_size=PAGE_SIZE)
            return view

        return await _searching(
            request, q, "Catalog", lambda: page(request, "catalog.html", build, title="Catalog")
        )

    @router.get("/catalog/tools/{tool_id:path}", include_in_schema=False)
    def tool(request: Request, tool_id: str) -> Response:
        def build() -> dict[str, Any]:
            check_read(request)
            engine = _engine(request)
            found = engine.get_tool(tool_id)
            record = engine.inventory().sync.get(found.source or "")
            return {"tool": found, "record": record}

        return page(request, "tool.html", build, title=tool_id)


def _status_page(router: APIRouter, settings: Settings) -> None:
    @router.get("/status", include_in_schema=False)
    def status(request: Request) -> Response:
        from toolscout.api.service_http import health_of

        def build() -> dict[str, Any]:
            check_read(request)
            engine = _engine(request)
            code, health = health_of(engine)
            return {
                "health": health,
                "healthy": code == 200,
                "info": engine.info() if code == 200 else {},
                "inventory": engine.inventory() if code == 200 else None,
                "metrics": summarise(request.app.state.metrics.registry),
                "errors": recent_errors().entries(),
                # Recorded requests are users' own words: shown to the admin session only.
                "learned": engine.feedback.learned() if is_admin(request) else None,
                "settings": {
                    "embed_model": settings.embed_model,
                    "query_encoder": settings.query_encoder,
                    "fusion": settings.fusion,
                    # What orders a hybrid search: the learned ranker, or why the fusion does.
                    "ranking": engine.searcher.ranking(SearchMode.HYBRID),
                    "reports_dir": settings.reports_dir,
                    "writes": "enabled" if settings.api_key else "disabled (no admin key)",
                    "pid": os.getpid(),
                },
            }

        return page(request, "status.html", build, title="Status")


def _session_routes(router: APIRouter) -> None:
    @router.post("/console/session", include_in_schema=False)
    def sign_in(request: Request, key: Annotated[str, Form()] = "", next: str = "/") -> Response:
        """Check the admin key; on success set the console cookie (see access.py)."""
        try:
            check_key(request, key)
        except AccessDenied as exc:
            return error_page(request, exc, title="Admin key")
        policy = request.app.state.policy
        target = next if next.startswith("/") and not next.startswith("//") else "/"
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, session_token(policy.api_key), httponly=True, samesite="strict", path="/"
        )
        return response

    @router.post("/console/session/end", include_in_schema=False)
    def sign_out(next: str = "/") -> Response:
        target = next if next.startswith("/") and not next.startswith("//") else "/"
        response = RedirectResponse(target, status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @router.get("/console/static/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        return static(name)


def console_router(settings: Settings) -> APIRouter:
    """The console's routes (HTML pages; left out of the OpenAPI schema)."""
    recent_errors()  # start collecting warnings from now on
    router = APIRouter()
    _search_page(router)
    _catalog_pages(router, settings)
    governance.routes(router)
    evaluations.routes(router, settings)
    _status_page(router, settings)
    _session_routes(router)
    return router
