"""The MCP server: ``create_mcp_server(engine)`` exposes search to agents as MCP tools.

``search_tools`` keeps freeact's contract (query, mode, scope, limit -> name, category, source,
description, score; run with ``name="pytools"`` it replaces freeact's basic search by
configuration) and adds each tool's ``id`` for ``get_tool_schema``. Every MCP tool is one
Engine call plus rendering; MCP tools here only read, and the HTTP transport is wrapped in the
same key policy as the REST API.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import SubscriptionBus
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access
from toolscout.api.errors import body_for, mcp_message
from toolscout.engine import Engine
from toolscout.errors import AccessDenied, ToolscoutError

T = TypeVar("T")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


class ToolResult(BaseModel):
    """One search hit, freeact-compatible (plus ``id`` for lazy schema loading)."""

    name: str = Field(description="Tool name, e.g. 'create_issue'.")
    category: str = Field(description="Category or server, e.g. 'github'.")
    source: str = Field(description="Where the tool was indexed from.")
    description: str
    score: float = Field(description="Relevance in 0..1, best first.")
    id: str = Field(description="Pass to get_tool_schema to load the tool's input schema.")


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
    instructions: str | None = None,
    subscriptions: SubscriptionBus | None = None,
) -> MCPServer:
    """An MCP server over ``engine`` with search_tools, get_tool_schema, list_skills and
    search_skills. Use ``name="pytools"`` to stand in for freeact's tool search.

    ``instructions`` and ``subscriptions`` (the bus list-changed events go to) are the hooks
    the gateway (``toolscout.gateway.server``) registers its tools through."""
    server: MCPServer = MCPServer(
        name,
        instructions=instructions
        or "Search for the tools you need with search_tools, then load the chosen "
        "tool's input schema with get_tool_schema(id).",
        log_level="WARNING",
        subscriptions=subscriptions,
    )

    @server.tool(annotations=READ_ONLY)
    def search_tools(
        query: Annotated[str, Field(description="What you want to do, in plain words.")],
        mode: Literal["bm25", "vector", "hybrid"] = "hybrid",
        scope: Annotated[
            str, Field(description="'all', or a source/server name to search only there.")
        ] = "all",
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> list[ToolResult]:
        """Search for tools whose descriptions match the query, best first."""
        narrowed = None if scope == "all" else [scope]
        result = _call(lambda: engine.search(query, mode=mode, limit=limit, sources=narrowed))
        return [
            ToolResult(
                name=h.tool.name,
                category=h.tool.category or h.tool.server or "",
                source=h.tool.source or "",
                description=h.tool.description,
                score=round(h.score, 6),
                id=h.tool.id,
            )
            for h in result.hits
        ]

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
            payload = json.dumps(body).encode("utf-8")
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": payload})
            return
        await self.app(scope, receive, send)


def create_mcp_http_app(
    server: MCPServer, policy: KeyPolicy, *, host: str = "127.0.0.1"
) -> ASGIApp:
    """The streamable-HTTP app of ``server`` at ``/mcp``, behind the key policy."""
    return KeyGuard(server.streamable_http_app(host=host), policy)
