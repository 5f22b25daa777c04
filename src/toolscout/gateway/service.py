"""The gateway: describe and call the indexed tools of the upstream MCP servers and of the
REST APIs indexed from OpenAPI documents (:mod:`toolscout.gateway.http`).

:class:`Gateway` is the library object every edge uses. ``schemas`` reads definitions from
the index; ``call`` checks the tool against the policy and its arguments against the stored
input schema (neither reaches the server when they fail), forwards the call over the pooled
session and returns the upstream result untouched, and logs the call to the audit log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from toolscout.errors import (
    CallDenied,
    InvalidArguments,
    QueryError,
    ToolNotFound,
    ToolscoutError,
    UpstreamError,
)
from toolscout.feedback.recent import RecentSearches
from toolscout.gateway.audit import AuditLog, CallRecord
from toolscout.gateway.catalog import CallableTools
from toolscout.gateway.exposure import Exposure
from toolscout.gateway.http import HttpApi
from toolscout.gateway.policy import Policy
from toolscout.gateway.pool import UpstreamPool
from toolscout.gateway.sessions import Limits
from toolscout.gateway.validation import check_arguments
from toolscout.ingest.mcpconfig import ServerSpec
from toolscout.models import ItemType, Tool

if TYPE_CHECKING:
    from toolscout.engine import Engine

log = logging.getLogger("toolscout.gateway")
MAX_SCHEMA_IDS = 50

_OUTCOMES: tuple[tuple[type[ToolscoutError], str], ...] = (
    (InvalidArguments, "invalid_arguments"),
    (CallDenied, "denied"),
    (UpstreamError, "upstream_error"),
    (ToolNotFound, "not_found"),
    (ToolscoutError, "error"),
)
#: Outcomes of calls that reached the upstream server, as feedback records them.
_FEEDBACK = {"ok": "success", "tool_error": "error", "upstream_error": "error"}


@dataclass(frozen=True)
class SchemaAnswer:
    """The definitions found for the requested ids, and the ids with no tool."""

    tools: list[Tool]
    not_found: list[str] = field(default_factory=list)


class Gateway:
    """Calls into the upstream servers for one engine (use ``async with`` to run its pool)."""

    def __init__(
        self,
        engine: Engine,
        servers: Sequence[ServerSpec],
        *,
        policy: Policy | None = None,
        audit: AuditLog | None = None,
        expose: int = 16,
        expose_tokens: int = 1500,
        limits: Mapping[str, Limits] | None = None,
        max_concurrency: int = 8,
        apis: Sequence[HttpApi] = (),
    ) -> None:
        self.engine = engine
        #: REST APIs indexed from OpenAPI documents, by the server name their tools carry.
        self.apis = {api.name: api for api in apis}
        self.policy = policy or Policy()
        self.audit = audit
        self.exposure = Exposure(expose)
        self.expose_tokens = expose_tokens
        self.pool = UpstreamPool(list(servers), limits, max_concurrency=max_concurrency)
        upstreams = [*self.pool.upstreams, *self.apis]
        self.tools = CallableTools(engine, upstreams, self.callable)
        #: Each session's last search: a relayed call is recorded as feedback for it.
        self.searches = RecentSearches()

    @property
    def servers(self) -> list[str]:
        return sorted({*self.pool.upstreams, *self.apis})

    def list_budget(self) -> int:
        """Tokens the whole tools list may cost: ``expose_tokens``, and never more than
        listing the configured servers directly would.

        Raises:
            StoreError: the index could not be read.
        """
        return min(self.expose_tokens, self.tools.direct_tokens())

    def schemas(self, ids: Sequence[str]) -> SchemaAnswer:
        """The definitions of ``ids`` (in the order asked, each once).

        Raises:
            QueryError: no ids, or more than 50.
        """
        unique = list(dict.fromkeys(ids))
        if not unique:
            raise QueryError("ids", "give at least one tool id (from search_tools)")
        if len(unique) > MAX_SCHEMA_IDS:
            raise QueryError("ids", f"at most {MAX_SCHEMA_IDS} ids per call, got {len(unique)}")
        answer = SchemaAnswer(tools=[])
        for tool_id in unique:
            try:
                answer.tools.append(self.engine.get_tool(tool_id))
            except ToolNotFound:
                answer.not_found.append(tool_id)
        return answer

    def callable(self, tool: Tool) -> bool:
        """Whether ``tool`` could be called here: a tool of a configured server the policy
        allows."""
        return (
            tool.item_type is ItemType.TOOL
            and (tool.server in self.pool.upstreams or tool.server in self.apis)
            and self.policy.allows(tool)
        )

    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressFnT | None = None,
        session: object | None = None,
    ) -> types.CallToolResult:
        """Call the tool ``tool_id`` upstream; returns the server's result as it is.
        ``tool_id`` may also be the provider name the gateway exposes
        (``time__get_current_time``) or the bare name of one callable tool. A call that
        reached the server is recorded as feedback for ``session``'s last search.

        Raises:
            ToolNotFound: no tool answers to that name (an ``UnknownTool`` suggesting the
                closest callable ids).
            QueryError: the id names a prompt or resource, or arguments is not an object.
            CallDenied: the policy refuses the tool.
            InvalidArguments: the arguments do not match the input schema (names the field).
            UpstreamError: the server is not configured, down, crashed or timed out.
        """
        args: Mapping[str, Any] = {} if arguments is None else arguments
        started = time.perf_counter()
        tool: Tool | None = None
        outcome, error = "ok", None
        try:
            # One primary-key read (~0.1 ms): a worker-thread hop costs more than the read on a
            # busy machine, and it is on every forwarded call's path.
            tool = self.tools.resolve(tool_id)
            result = await self._forward(tool, args, progress)
            if result.is_error:
                outcome = "tool_error"
            return result
        except ToolscoutError as exc:
            outcome = next(name for cls, name in _OUTCOMES if isinstance(exc, cls))
            error = str(exc)
            raise
        except anyio.get_cancelled_exc_class():
            outcome = "cancelled"
            raise
        finally:
            if self.audit is not None:
                self.audit.write(
                    CallRecord(
                        tool=tool.id if tool is not None else tool_id,
                        server=tool.server if tool is not None else None,
                        arguments=args if isinstance(args, Mapping) else {},
                        duration_ms=(time.perf_counter() - started) * 1000,
                        outcome=outcome,
                        error=error,
                    )
                )
            if tool is not None and outcome in _FEEDBACK:
                await self._learn(session, tool.id, _FEEDBACK[outcome])

    async def _learn(self, session: object | None, tool_id: str, outcome: str) -> None:
        """Record the call for the search it followed (none: nothing to learn from)."""
        search = self.searches.origin(session, tool_id)
        if search is None:
            return
        record = self.engine.feedback.record
        try:
            await anyio.to_thread.run_sync(
                lambda: record(search.query, tool_id, outcome, shown=search.shown, source="gateway")
            )
        except ToolscoutError as exc:  # feedback never fails a call
            log.warning("gateway: could not record feedback for %s: %s", tool_id, exc)

    async def _forward(
        self, tool: Tool, args: Mapping[str, Any], progress: ProgressFnT | None
    ) -> types.CallToolResult:
        if tool.item_type is not ItemType.TOOL:
            raise QueryError(
                "id", f"{tool.id!r} is a {tool.item_type.value}; only tools are called"
            )
        if not isinstance(args, Mapping):
            raise InvalidArguments("(arguments)", "must be an object of argument names to values")
        if tool.server is None:
            raise UpstreamError("?", f"{tool.id!r} belongs to no MCP server; it cannot be called")
        api = self.apis.get(tool.server)
        if api is not None:
            self.policy.check(tool)
            check_arguments(tool, args)
            return await api.call(tool, args)
        upstream = self.pool.get(tool.server)
        self.policy.check(tool)
        check_arguments(tool, args)
        hints = tool.annotations
        retry_safe = hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True
        return await upstream.call(tool.name, args, progress=progress, retry_safe=retry_safe)

    async def __aenter__(self) -> Gateway:
        await self.pool.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            return await self.pool.__aexit__(exc_type, exc, tb)
        finally:
            if self.audit is not None:
                self.audit.close()
