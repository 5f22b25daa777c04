"""The gateway's MCP surface: ``search_tools``, ``get_tool_schemas`` and ``call_tool``, and the
tools a search found exposed under their own names, within a token budget.

:func:`create_gateway_server` builds the usual toolscout MCP server without its
``get_tool_schema`` (one schema tool is enough), ``list_skills`` and ``search_skills``
(``search_tools`` with ``strategy="hierarchical"`` searches by skill), lists no output
schemas, and registers onto it:

* ``get_tool_schemas(ids)``: several definitions in one call;
* ``call_tool(id, arguments)``: forwarded through :class:`~toolscout.gateway.service.Gateway`;
  the upstream result comes back as it is; progress the caller asked for is relayed, and a
  cancelled call is cancelled upstream (the SDK sends the cancellation on);
* a middleware for dynamic exposure: after ``search_tools`` the callable hits join the tool
  list under their provider names (:mod:`toolscout.formats.names`), as many as the list's
  token budget holds (:mod:`toolscout.gateway.budget`), and the client is told
  ``notifications/tools/list_changed`` (on the session for 2025-era connections, on the
  subscription bus for 2026 ones); a call of any name that is not the gateway's own is run
  as ``call_tool`` (which resolves provider and bare names). The capability
  ``tools.listChanged`` is announced to 2025-era clients.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolscout.api.errors import mcp_message
from toolscout.api.gate import SearchGate
from toolscout.api.mcp import READ_ONLY, create_mcp_server
from toolscout.engine import Engine
from toolscout.errors import ToolNotFound, ToolscoutError
from toolscout.gateway.budget import fit, listed_entry
from toolscout.gateway.service import Gateway
from toolscout.models import Tool

log = logging.getLogger("toolscout.gateway")

INSTRUCTIONS = (
    "Find the tools you need with search_tools(query). Load the input schemas of the ones you "
    "pick with get_tool_schemas(ids), then run one with call_tool(id, arguments). When your "
    "client follows tool list changes, the tools a search found also appear in this server's "
    "tool list under their own names."
)
CALLS = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"
#: The plain MCP server's tools the gateway does not list: each costs tokens on every turn, and
#: get_tool_schemas, search_tools' strategy="hierarchical" do their jobs.
LEFT_OUT = ("get_tool_schema", "list_skills", "search_skills")


class ToolDefinition(BaseModel):
    """A tool's full definition, ready to call with call_tool(id, arguments)."""

    id: str
    name: str
    server: str | None
    description: str
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any]


class SchemaAnswer(BaseModel):
    """The definitions found, and the ids that name no tool."""

    tools: list[ToolDefinition]
    not_found: list[str]


def _definition(tool: Tool) -> ToolDefinition:
    return ToolDefinition(
        id=tool.id,
        name=tool.name,
        server=tool.server,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=tool.annotations,
    )


def _failure(exc: ToolscoutError) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=mcp_message(exc))], is_error=True
    )


def create_gateway_server(
    engine: Engine, gateway: Gateway, *, name: str = "toolscout", gate: SearchGate | None = None
) -> MCPServer:
    """The toolscout MCP server with the gateway's tools registered (see the module doc);
    searches run through ``gate`` (as :func:`~toolscout.api.mcp.create_mcp_server`).

    Run it inside ``async with gateway:`` (the pool of upstream sessions)."""
    bus = InMemorySubscriptionBus()
    server = create_mcp_server(
        engine,
        name=name,
        gate=gate,
        instructions=INSTRUCTIONS,
        subscriptions=bus,
        narrow=gateway.tools.narrow,
        output_schemas=False,
    )
    for tool in LEFT_OUT:
        server.remove_tool(tool)
    register_gateway(server, gateway, bus)
    return server


def register_gateway(server: MCPServer, gateway: Gateway, bus: SubscriptionBus) -> None:
    """Add get_tool_schemas, call_tool and dynamic exposure to ``server``."""

    @server.tool(annotations=READ_ONLY)
    async def get_tool_schemas(
        ids: Annotated[
            list[str], Field(description="Tool ids from search_tools (up to 50).", min_length=1)
        ],
    ) -> SchemaAnswer:
        """The full definitions (input schema, annotations) of the tools you are about to
        call, several at once."""
        try:
            found = await anyio.to_thread.run_sync(gateway.schemas, ids)
        except ToolscoutError as exc:
            from mcp.server.mcpserver.exceptions import ToolError

            raise ToolError(mcp_message(exc)) from exc
        return SchemaAnswer(tools=[_definition(t) for t in found.tools], not_found=found.not_found)

    @server.tool(name=CALL_TOOL, annotations=CALLS)
    async def call_tool(
        ctx: Context,
        id: Annotated[str, Field(description="The tool's id, from search_tools.")],
        arguments: Annotated[
            dict[str, Any] | None,
            Field(description="Arguments matching the tool's input schema."),
        ] = None,
    ) -> types.CallToolResult:
        """Call a tool found with search_tools on its MCP server; returns that server's
        result as it is."""
        # Always relayed: report_progress is a no-op when the caller asked for no progress.

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            await ctx.report_progress(progress, total, message)

        client = _client(ctx.session, ctx.protocol_version)
        try:
            return await gateway.call(id, arguments, progress=relay, session=client)
        except ToolscoutError as exc:
            return _failure(exc)

    server.middleware.append(_ExposureMiddleware(server, gateway, bus))
    server.middleware.append(_SearchNotes(gateway))


CallNext = Callable[[ServerRequestContext[Any, Any]], Awaitable[Any]]


class _ExposureMiddleware:
    """Adds found tools to tools/list, runs calls of their names as call_tool, announces
    ``tools.listChanged``."""

    def __init__(self, server: MCPServer, gateway: Gateway, bus: SubscriptionBus) -> None:
        self.server = server
        self.gateway = gateway
        self.bus = bus
        self._own: set[str] | None = None

    async def _own_names(self) -> set[str]:
        if self._own is None:
            self._own = {t.name for t in await self.server.list_tools()}
        return self._own

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if self.gateway.exposure.capacity == 0:
            return await call_next(ctx)
        if ctx.method == "initialize":
            result = await call_next(ctx)
            tools = (
                result.get("capabilities", {}).get("tools") if isinstance(result, dict) else None
            )
            if isinstance(tools, dict):
                tools["listChanged"] = True
            return result
        if ctx.method == "tools/list":
            result = await call_next(ctx)
            own = await self._own_names()
            if isinstance(result, dict) and isinstance(result.get("tools"), list):
                budget = await anyio.to_thread.run_sync(self.gateway.list_budget)
                listed = fit(result["tools"], self._candidates(own), budget)
                result["tools"] = [*result["tools"], *listed]
            return result
        if ctx.method == "tools/call" and ctx.params is not None:
            name = ctx.params.get("name")
            if isinstance(name, str) and name not in await self._own_names():
                # An exposed name, or one that left the list: call_tool resolves both (and
                # answers a name it cannot resolve with the closest ids).
                tool = self.gateway.exposure.get(name)
                params = {
                    **ctx.params,
                    "name": CALL_TOOL,
                    "arguments": {
                        "id": tool.id if tool is not None else name,
                        "arguments": ctx.params.get("arguments"),
                    },
                }
                return await call_next(replace(ctx, params=params))
            result = await call_next(ctx)
            if name == SEARCH_TOOLS:
                await self._expose(ctx, result)
            return result
        return await call_next(ctx)

    def _candidates(self, own: set[str]) -> Iterator[dict[str, Any]]:
        for name, tool in self.gateway.exposure.recent():
            if name not in own:
                yield listed_entry(name, tool)

    async def _expose(self, ctx: ServerRequestContext[Any, Any], result: Any) -> None:
        ids = _found_ids(result)
        if not ids:
            return
        tools = await anyio.to_thread.run_sync(self._callable_tools, ids)
        if not self.gateway.exposure.add(tools):
            return
        try:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await self.bus.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
        except Exception as exc:  # edge: a client gone mid-request must not fail the search
            log.info("gateway: could not announce a tool list change: %s", exc)

    def _callable_tools(self, ids: list[str]) -> list[Tool]:
        out = []
        for tool_id in ids:
            try:
                tool = self.gateway.engine.get_tool(tool_id)
            except ToolNotFound:
                continue
            if self.gateway.callable(tool):
                out.append(tool)
        return out


class _SearchNotes:
    """Remembers each session's last ``search_tools`` request and hits, so the calls that
    follow are recorded as feedback for it (:meth:`Gateway.call`)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        result = await call_next(ctx)
        params = ctx.params or {}
        if ctx.method == "tools/call" and params.get("name") == SEARCH_TOOLS:
            arguments = params.get("arguments")
            query = arguments.get("query") if isinstance(arguments, dict) else None
            if isinstance(query, str) and query.strip():
                client = _client(ctx.session, ctx.protocol_version)
                self.gateway.searches.note(client, query, _found_ids(result))
        return result


def _client(session: object, protocol_version: str | None) -> object | None:
    """What tells one client from another, or None where requests stand alone (2026-era).

    The SDK builds a session object per request; the connection under it lasts as long as the
    client's, but is not public on the session, hence the private read. Should it go, calls are
    matched through the recent searches instead (see ``RecentSearches.origin``)."""
    if protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return getattr(session, "_connection", None)


def _found_ids(result: Any) -> list[str]:
    """The tool ids a search_tools answer lists (its structured content)."""
    if not isinstance(result, dict) or result.get("isError"):
        return []
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        return []
    ids: list[str] = []
    for value in structured.values():
        if isinstance(value, list):
            ids.extend(
                item["id"]
                for item in value
                if isinstance(item, dict) and isinstance(item.get("id"), str)
            )
    return ids


class GatewayLifespan:
    """ASGI wrapper that runs the gateway's session pool for the life of an HTTP app.

    The app's ``lifespan.shutdown.complete`` is held back until the pool has closed every
    upstream session: uvicorn ends its event loop as soon as it hears it, which would cut the
    servers' shutdown short and leave them running, reparented to init.
    """

    def __init__(self, app: ASGIApp, gateway: Gateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def hold_completion(message: Message) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                held.append(message)
            else:
                await send(message)

        try:
            async with self.gateway:
                await self.app(scope, receive, hold_completion)
        finally:
            for message in held:
                await send(message)
