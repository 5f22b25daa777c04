"""Pooled sessions to the upstream MCP servers the gateway forwards calls to.

One :class:`Upstream` per server holds at most one open session, started on its first call
(through :class:`~toolscout.ingest.mcp.McpSource`, the same connection code ``sync`` uses) and
kept open for the next ones. A session belongs to an owner task in the pool's task group: the
SDK's client must be entered and left by the same task, while calls come from any request
task. Every call is bounded: waiting for a slot (``max_concurrency`` per server), starting the
server and the call itself all count against the server's timeout, and a timed-out call is
cancelled upstream. A server that could not be started fails the calls of the next few seconds
at once with the same reason instead of making each of them wait again. A session whose
server went away is dropped and the next call starts a new one; the call that hit the closed
connection is retried on the new session only when its tool is annotated read-only or
idempotent (running it twice cannot hurt), otherwise it fails with a clear message.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from toolscout.errors import IngestError, UpstreamError
from toolscout.ingest.mcp import McpSource, describe
from toolscout.ingest.mcpconfig import ServerSpec

log = logging.getLogger("toolscout.gateway")

#: After a failed start, calls fail at once with its reason for this long (seconds).
START_COOLDOWN = 5.0
#: How long closing the pool waits for the servers to exit before cancelling them.
SHUTDOWN_GRACE = 10.0


@dataclass(frozen=True)
class Limits:
    """How long one call may take and how many may run at once on one server."""

    timeout: float
    max_concurrency: int = 8


@dataclass
class _Live:
    client: Client
    stop: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False


class _Closed(Exception):
    """The session's connection closed under a call."""


class Upstream:
    """One upstream server behind the gateway (lazy start, restart after a crash)."""

    def __init__(self, spec: ServerSpec, limits: Limits, pool: UpstreamPool) -> None:
        self.spec = spec
        self.limits = limits
        self._pool = pool
        self._limiter = anyio.CapacityLimiter(limits.max_concurrency)
        self._lock = anyio.Lock()
        self._live: _Live | None = None
        self._failed_until = -math.inf
        self._failure = ""
        #: Sessions started so far (the first start and every restart).
        self.starts = 0

    @property
    def name(self) -> str:
        return self.spec.name

    async def call(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressFnT | None = None,
        retry_safe: bool = False,
    ) -> types.CallToolResult:
        """Call ``tool_name`` upstream and return its result as the server sent it.

        Raises:
            UpstreamError: the server cannot be started or reached, closed the connection,
                answered with a protocol error, or did not answer within its timeout.
        """
        timeout = self.limits.timeout
        try:
            with anyio.fail_after(timeout):
                await self._limiter.acquire()
        except TimeoutError:
            raise UpstreamError(
                self.name,
                f"busy: {self.limits.max_concurrency} calls already running, none finished "
                f"within {timeout:g} s",
            ) from None
        try:
            try:
                return await self._call_once(tool_name, arguments, progress)
            except _Closed:
                if not retry_safe:
                    raise UpstreamError(
                        self.name,
                        "the connection closed during the call (did the server exit?); "
                        "the call was not repeated because the tool is not annotated "
                        "read-only or idempotent; the next call starts the server again",
                    ) from None
                log.warning("gateway: %s closed its connection; restarting", self.name)
                try:
                    return await self._call_once(tool_name, arguments, progress)
                except _Closed:
                    raise UpstreamError(
                        self.name, "the connection closed again right after a restart"
                    ) from None
        finally:
            self._limiter.release()

    async def _call_once(
        self, tool_name: str, arguments: Mapping[str, Any], progress: ProgressFnT | None
    ) -> types.CallToolResult:
        live = await self._session()
        timeout = self.limits.timeout
        try:
            with anyio.fail_after(timeout):
                return await live.client.call_tool(
                    tool_name,
                    dict(arguments),
                    read_timeout_seconds=timeout,
                    progress_callback=progress,
                )
        except TimeoutError:
            raise UpstreamError(
                self.name, f"no answer within {timeout:g} s (the call was cancelled upstream)"
            ) from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._drop(live)
                raise _Closed from exc
            if exc.code == REQUEST_TIMEOUT:
                raise UpstreamError(self.name, f"no answer within {timeout:g} s") from exc
            raise UpstreamError(self.name, f"answered with error {exc.code}: {exc}") from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
            self._drop(live)
            raise _Closed from exc
        except UpstreamError:
            raise
        except Exception as exc:  # the SDK raises many kinds (e.g. a result that does not parse)
            raise UpstreamError(self.name, f"the call failed: {describe(exc)}") from exc

    async def _session(self) -> _Live:
        """The open session, started when there is none (bounded by the server's timeout).

        Raises:
            UpstreamError: the server cannot be started or did not finish starting in time.
        """
        try:
            with anyio.fail_after(self.spec.timeout):
                return await self._open()
        except TimeoutError:
            self._failure = f"cannot be started: no answer within {self.spec.timeout:g} s"
            self._failed_until = anyio.current_time() + START_COOLDOWN
            raise UpstreamError(self.name, self._failure) from None

    async def _open(self) -> _Live:
        async with self._lock:
            if self._live is not None and not self._live.closed:
                return self._live
            now = anyio.current_time()
            if now < self._failed_until:
                raise UpstreamError(self.name, self._failure)
            try:
                live: _Live = await self._pool.start_owner(self._own)
            except IngestError as exc:
                self._failure = f"cannot be started: {exc}"
                self._failed_until = anyio.current_time() + START_COOLDOWN
                raise UpstreamError(self.name, self._failure) from exc
            self.starts += 1
            self._live = live
            return live

    async def _own(self, *, task_status: TaskStatus[_Live]) -> None:
        """Owner task: enter the client, hand it out, leave it when told to stop."""
        started = False
        try:
            async with McpSource(self.spec).connect() as client:
                live = _Live(client)
                task_status.started(live)
                started = True
                await live.stop.wait()
        except Exception as exc:  # a session that dies must not take the pool down
            if not started:
                raise
            log.info("gateway: session of %s ended: %s", self.name, describe(exc))

    def _drop(self, live: _Live) -> None:
        live.closed = True
        live.stop.set()
        if self._live is live:
            self._live = None

    def close(self) -> None:
        """Tell the owner task to leave its session (the pool waits for it)."""
        if self._live is not None:
            self._drop(self._live)


class UpstreamPool:
    """The upstream servers by name, and the task group that owns their sessions.

    Use as an async context manager; leaving it closes every session (servers get
    ``SHUTDOWN_GRACE`` seconds to exit, then they are cancelled).
    """

    def __init__(
        self,
        specs: list[ServerSpec] | tuple[ServerSpec, ...],
        limits: Mapping[str, Limits] | None = None,
        *,
        max_concurrency: int = 8,
    ) -> None:
        limits = limits or {}
        self.upstreams: dict[str, Upstream] = {
            spec.name: Upstream(
                spec, limits.get(spec.name) or Limits(spec.timeout, max_concurrency), self
            )
            for spec in specs
        }
        self._tg: TaskGroup | None = None

    def get(self, server: str) -> Upstream:
        """Raises: UpstreamError: no upstream server of that name is configured."""
        upstream = self.upstreams.get(server)
        if upstream is None:
            raise UpstreamError(
                server,
                "not configured; the gateway calls only servers named in its MCP "
                "configuration (mcp_configs / mcp_servers)",
            )
        return upstream

    async def start_owner(self, owner: Any) -> _Live:
        """Start an owner task in the pool's task group and return what it hands out.

        Raises:
            IngestError: the server could not be started (from the owner task).
            UpstreamError: the pool is not running.
        """
        if self._tg is None:
            raise UpstreamError("*", "the gateway is not running (enter the pool first)")
        live: _Live = await self._tg.start(owner)
        return live

    async def __aenter__(self) -> UpstreamPool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        assert tg is not None
        for upstream in self.upstreams.values():
            upstream.close()
        # Owners leave their sessions now; one that takes too long is cancelled.
        # Shield the group's own scope (a new scope would break LIFO exit) so an outer
        # cancellation still lets the servers exit; the deadline bounds the wait.
        tg.cancel_scope.shield = True
        tg.cancel_scope.deadline = anyio.current_time() + SHUTDOWN_GRACE
        return await tg.__aexit__(exc_type, exc, tb)
