"""The MCP server: ``create_mcp_server(engine)`` exposes search to agents as MCP tools.

``search_tools`` keeps freeact's contract (query, mode, scope, limit -> name, category, source,
description, score; run with ``name="pytools"`` it replaces freeact's basic search by
configuration) and adds the search contract's fields (``id`` for ``get_tool_schema``,
``type``, ``skill_ids``, ``primary_skill_id``) and its request fields ``strategy``,
``item_type`` and ``min_score``: it is ``Engine.find``, run through the server's
:class:`~toolscout.api.gate.SearchGate` like the REST routes, so the same request gives the
same answer at every door. MCP tools here only read, and the HTTP transport is wrapped in the
same key policy as the REST API.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import SubscriptionBus
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolscout import __version__
from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access
from toolscout.api.errors import body_for, mcp_message
from toolscout.api.gate import CORES, SearchGate
from toolscout.api.guard import DEFAULT_MAX_BODY, Guard, GuardConfig, allowed_host_names
from toolscout.api.mcp_server import CompactServer
from toolscout.engine import Engine
from toolscout.errors import AccessDenied, EmptyIndex, QueryError, StoreError, ToolscoutError
from toolscout.models import ItemType, SearchMode, SearchRequest, Strategy

T = TypeVar("T")
#: What a ``scope`` may name, in the order it is looked up.
GROUPS = ("source", "server", "category")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


class ToolResult(BaseModel):
    """One search hit, freeact-compatible, with the search contract's fields."""

    name: str = Field(description="Tool name, e.g. 'create_issue'.")
    category: str = Field(description="Category or server, e.g. 'github'.")
    source: str = Field(description="Where the tool was indexed from.")
    description: str
    score: float = Field(
        description="Calibrated probability (0..1) that the tool serves the request, best first."
    )
    id: str = Field(description="Pass to get_tool_schema to load the tool's input schema.")
    type: str = Field(description="tool, prompt or resource.")
    skill_ids: list[str] = Field(default_factory=list)
    primary_skill_id: str | None = Field(default=None, description="One of skill_ids, or null.")


class SearchAnswer(BaseModel):
    """search_tools' answer: the tools best first, and whether none is likely to serve."""

    result: list[ToolResult] = Field(description="The tools, best first.")
    no_match: bool = Field(
        default=False,
        description="True: no indexed tool is likely to serve the request; do not call the "
        "tools listed (if any) for it without checking.",
    )


class ToolSchema(BaseModel):
    """A tool's full definition, loaded only when the agent is about to call it."""

    id: str
    name: str
    description: str
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None


class SkillResult(BaseModel):
    """A skill (a group of tools) and how many tools it holds."""

    id: str
    name: str
    description: str
    tool_count: int
    is_active: bool
    score: float | None = None


@dataclass(frozen=True)
class SearchScope:
    """Where a ``scope`` restricts a search: servers, sources or tool ids (None: no limit)."""

    servers: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    tool_ids: tuple[str, ...] | None = None


def scope_filter(engine: Engine, scope: str) -> SearchScope:
    """What ``scope`` names: nothing for ``all``; else a source (``mcp:time``), a server as
    search results show it (``time``) or a tool folder's category (``github``), in that order.

    Raises:
        QueryError: an unknown scope; the message lists the valid ones.
    """
    if scope == "all":
        return SearchScope()
    store = engine.store

    def named(column: str) -> set[str]:
        return {v for v in store.tools.counts_by(column) if v and v != "None"}  # "None": no value

    if scope in named("source"):
        return SearchScope(sources=(scope,))
    if scope in named("server"):
        return SearchScope(servers=(scope,))
    if scope in named("category"):
        return SearchScope(tool_ids=tuple(store.tools.ids_where("category", scope)))
    valid = ", ".join(["all", *sorted(set().union(*(named(c) for c in GROUPS)))])
    raise QueryError("scope", f"unknown scope {scope!r}; valid: {valid}")


def _call(fn: Callable[[], T]) -> T:
    """Run one engine call, turning toolscout errors into MCP tool errors the model can read.

    Raises:
        ToolError: carrying the error table's code, the field and the message.
    """
    try:
        return fn()
    except ToolscoutError as exc:
        raise ToolError(mcp_message(exc)) from exc


def create_mcp_server(
    engine: Engine,
    *,
    name: str = "toolscout",
    gate: SearchGate | None = None,
    instructions: str | None = None,
    subscriptions: SubscriptionBus | None = None,
    narrow: Callable[[SearchRequest], SearchRequest] | None = None,
    output_schemas: bool = True,
) -> MCPServer:
    """An MCP server over ``engine`` with search_tools, get_tool_schema, list_skills and
    search_skills; searches run through ``gate`` (by default one slot per core). Use
    ``name="pytools"`` to stand in for freeact's tool search.

    ``instructions``, ``subscriptions`` (the bus list-changed events go to) and ``narrow``
    (applied to every search request, in a worker thread: the gateway keeps searches to the
    tools it can call) are the hooks the gateway (``toolscout.api.mcp_gateway``) uses; with
    ``output_schemas=False`` the tools list leaves out output schemas (answers still carry
    structured content), which are most of its tokens."""
    searches = gate if gate is not None else SearchGate(engine, CORES)
    text = instructions or (
        "Search for the tools you need with search_tools, then load the chosen tool's input "
        "schema with get_tool_schema(id)."
    )
    if engine.store.count() == 0:
        text += f" This server's {EmptyIndex.HINT}; searches answer with that error."
    server = CompactServer(
        name,
        instructions=text,
        log_level="WARNING",
        subscriptions=subscriptions,
        version=__version__,
    )
    server.output_schemas = output_schemas

    @server.tool(annotations=READ_ONLY)
    async def search_tools(
        query: Annotated[str, Field(description="What you want to do, in plain words.")],
        mode: Literal["bm25", "vector", "hybrid"] = "hybrid",
        scope: Annotated[
            str,
            Field(
                description="'all', or a server or source as results show them (category or "
                "source) to search only there."
            ),
        ] = "all",
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        strategy: Annotated[
            Literal["direct", "hierarchical", "hybrid"],
            Field(description="direct: every tool; hierarchical: skills first; hybrid: both."),
        ] = "direct",
        item_type: Literal["tool", "prompt", "resource"] | None = None,
        min_score: Annotated[
            float,
            Field(ge=0.0, le=1.0, description="Drop tools whose probability of fitting is below."),
        ] = 0.0,
    ) -> SearchAnswer:
        """Search for the tools that fit what you want to do, best first."""
        try:
            where = await anyio.to_thread.run_sync(scope_filter, engine, scope)
            request: SearchRequest = SearchRequest(
                query,
                item_type=ItemType(item_type) if item_type is not None else None,
                limit=limit,
                tool_threshold=0.0,
                strategy=Strategy(strategy),
                min_score=min_score,
                mode=SearchMode(mode),
                servers=where.servers,
                sources=where.sources,
                tool_ids=where.tool_ids,
            )
            if narrow is not None:
                request = await anyio.to_thread.run_sync(narrow, request)
            result = await searches.find(request)
            if not result.tools:
                await anyio.to_thread.run_sync(engine.ensure_indexed)
        except ToolscoutError as exc:
            raise ToolError(mcp_message(exc)) from exc
        tools = [
            ToolResult(
                name=h.tool.name,
                category=h.tool.category or h.tool.server or "",
                source=h.tool.source or "",
                description=h.tool.description,
                score=round(h.score, 6),
                id=h.tool.id,
                type=h.tool.item_type.value,
                skill_ids=list(h.skill_ids),
                primary_skill_id=h.primary_skill_id,
            )
            for h in result.tools
        ]
        return SearchAnswer(result=tools, no_match=result.no_match)

    @server.tool(annotations=READ_ONLY)
    def get_tool_schema(tool_id: str) -> ToolSchema:
        """The full definition (input and output schema) of one tool, by its id."""
        tool = _call(lambda: engine.get_tool(tool_id))
        return ToolSchema(
            id=tool.id,
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
        )

    @server.tool(annotations=READ_ONLY)
    def list_skills() -> list[SkillResult]:
        """Every active skill (group of tools) with its tool count."""
        matches = _call(lambda: engine.skills.list(include_inactive=False))
        return [
            SkillResult(
                id=m.skill.id,
                name=m.skill.name,
                description=m.skill.description,
                tool_count=m.tool_count,
                is_active=m.skill.is_active,
            )
            for m in matches
        ]

    @server.tool(annotations=READ_ONLY)
    def search_skills(
        query: str,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.4,
    ) -> list[SkillResult]:
        """The skills (groups of tools) that match what you want to do, best first."""
        matches = _call(lambda: engine.match_skills(query, limit=limit, threshold=threshold))
        return [
            SkillResult(
                id=m.skill.id,
                name=m.skill.name,
                description=m.skill.description,
                tool_count=m.tool_count,
                is_active=m.skill.is_active,
                score=round(m.score, 6),
            )
            for m in matches
        ]

    return server


class KeyGuard:
    """ASGI middleware applying the read policy to every HTTP request of an MCP app."""

    def __init__(self, app: ASGIApp, policy: KeyPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope.get("client")
        host = client[0] if client else None
        try:
            check_access(self.policy, Access.READ, bearer_token(headers.get("authorization")), host)
        except AccessDenied as exc:
            status, body = body_for(exc)
            await _send_json(send, status, body, ((b"www-authenticate", b"Bearer"),))
            return
        await self.app(scope, receive, send)


class McpMount:
    """The streamable-HTTP endpoint of an MCP server inside another app (``toolscout serve``),
    behind the key policy. Its session manager runs while :meth:`running` is entered (the host
    app's lifespan); a manager runs only once, so each lifespan gets a fresh one."""

    def __init__(self, server: MCPServer, policy: KeyPolicy, *, host: str = "127.0.0.1") -> None:
        self.server = server
        self.policy = policy
        self.host = host
        self._endpoint: ASGIApp | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve ``/mcp`` for the duration of the block."""
        app = self.server.streamable_http_app(host=self.host)
        route = next(r for r in app.routes if isinstance(r, Route) and r.path == "/mcp")
        self._endpoint = KeyGuard(route.app, self.policy)
        try:
            async with self.server.session_manager.run():
                yield
        finally:
            self._endpoint = None

    def route(self) -> Route:
        """The ``/mcp`` route to add to the host app."""
        return Route("/mcp", endpoint=self)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._endpoint is None:  # the host app was not started with its lifespan
            exc = StoreError("mcp: the MCP transport is not running (start the app's lifespan)")
            status, body = body_for(exc)
            await _send_json(send, status, body)
            return
        await self._endpoint(scope, receive, send)


async def _send_json(
    send: Send, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode("utf-8")})


def create_mcp_http_app(
    server: MCPServer,
    policy: KeyPolicy,
    *,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY,
) -> ASGIApp:
    """The streamable-HTTP app of ``server`` at ``/mcp``, behind the key policy and the
    :class:`~toolscout.api.guard.Guard` (Host allow-list, key check before the body, body
    size)."""
    config = GuardConfig(
        policy=policy,
        allowed_hosts=allowed_host_names(allowed_hosts, host),
        max_body_bytes=max_body_bytes,
        body_access=lambda path: Access.READ,  # MCP tools here only read
    )
    return Guard(KeyGuard(server.streamable_http_app(host=host), policy), config)
