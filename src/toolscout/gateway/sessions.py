"""Pooled sessions to the upstream MCP servers the gateway forwards calls to.

One :class:`Upstream` per server holds at most one open session, started on its first call
(through :class:`~toolscout.ingest.mcp.McpSource`, the same connection code ``sync`` uses) and
kept open for the next ones. A session belongs to an owner task in the pool's task group: the
SDK's client must be entered and left by the same task, while calls come from any request
task. Every call is bounded: waiting for a slot (``max_concurrency`` per server), starting the
server and the call itself all count against the server's timeout, and a timed-out call is
cancelled upstream. A start that does not finish in time fails at the timeout; the server is
stopped in the background. A server that could not be started fails the calls of the next few
seconds at once with the same reason instead of making each of them wait again. A session
whose server went away is dropped and the next call starts a new one; the call that hit the
closed connection is retried on the new session only when its tool is annotated read-only or
idempotent (running it twice cannot hurt), otherwise it fails with a clear message.

A call that times out retires its session: the answer it was waiting for may still be on its
way (a 20 MB result takes seconds to read), and every later answer would queue behind it. New
calls go to a spare session, and the retired one ends when the calls still running on it do.
The spare is started off every caller's path while a call runs long: once a call has run so
long that its timeout is nearer than the server's last start-up took (plus a margin), a second
session starts in the background and waits, idle, to take over. A server whose timeout is
shorter than that keeps a spare up from its first session on. A call retired while no spare is
starting starts a fresh session at once, in the background. Results over
``max_result_bytes`` are cut down (:mod:`toolscout.gateway.bounds`). Closing the pool
(:mod:`toolscout.gateway.pool`) closes every session the way the SDK stops a server: end of
input, then SIGTERM to its process group after a grace, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from toolscout.errors import IngestError, UpstreamError
from toolscout.gateway.bounds import DEFAULT_MAX_RESULT_BYTES, bound_result
from toolscout.ingest.mcp import McpSource, describe
from toolscout.ingest.mcpconfig import ServerSpec

if TYPE_CHECKING:
    from toolscout.gateway.pool import UpstreamPool

log = logging.getLogger("toolscout.gateway")

#: After a failed start, calls fail at once with its reason for this long (seconds).
START_COOLDOWN = 5.0
#: A spare session is started once a running call's timeout is nearer than the server's last
#: start-up took, times this factor, plus ``SPARE_LEAD`` seconds: start-up times vary with load.
SPARE_FACTOR = 1.5
SPARE_LEAD = 1.0


@dataclass(frozen=True)
class Limits:
    """How long one call may take and how many may run at once on one server."""

    timeout: float
    max_concurrency: int = 8
    #: Larger results reach the caller cut down, with a notice (0: no limit).
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES


@dataclass(eq=False)
class _Live:
    client: Client
    stop: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False
    #: Calls running on this session; a retired session ends when the last one does.
    running: int = 0
    retired: bool = False


@dataclass(eq=False)
class _Start:
    """One owner task: the session it starts, handed to the caller waiting for it."""

    done: anyio.Event = field(default_factory=anyio.Event)
    #: Set when the owner task has ended (its server stopped).
    ended: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    began: float = field(default_factory=anyio.current_time)
    live: _Live | None = None
    error: Exception | None = None

    @property
    def usable(self) -> bool:
        """Whether its session is up and still open (not started, failed or ended: no)."""
        return self.live is not None and not self.live.closed and not self.ended.is_set()


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
        #: A session started ahead of need while a call ran long, to take over from a retired one.
        self._spare: _Start | None = None
        #: Seconds the last successful start took (until one has: the server's timeout).
        self._start_seconds = spec.timeout
        #: Every owner task not yet ended (starting, current, spare, retired), for close().
        self._owners: set[_Start] = set()
        self._failed_until = -math.inf
        self._failure = ""
        #: Sessions started so far (the first, every restart and every spare), failed ones too.
        self.starts = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def has_session(self) -> bool:
        """Whether a session is open for the next call (it need not start one)."""
        return self._live is not None and not self._live.closed

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
                if self._pool.stopping:
                    raise UpstreamError(
                        self.name, "the gateway is stopping: the server was closed under the call"
                    ) from None
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
        live.running += 1
        spare_timer = self._arm_spare(timeout)
        try:
            with anyio.fail_after(timeout):
                result = await live.client.call_tool(
                    tool_name,
                    dict(arguments),
                    read_timeout_seconds=timeout,
                    progress_callback=progress,
                )
        except TimeoutError:
            self._retire(live)
            raise UpstreamError(
                self.name, f"no answer within {timeout:g} s (the call was cancelled upstream)"
            ) from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._drop(live)
                raise _Closed from exc
            if exc.code == REQUEST_TIMEOUT:
                self._retire(live)
                raise UpstreamError(self.name, f"no answer within {timeout:g} s") from exc
            raise UpstreamError(self.name, f"answered with error {exc.code}: {exc}") from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
            self._drop(live)
            raise _Closed from exc
        except UpstreamError:
            raise
        except Exception as exc:  # the SDK raises many kinds (e.g. a result that does not parse)
            raise UpstreamError(self.name, f"the call failed: {describe(exc)}") from exc
        finally:
            spare_timer.cancel()
            live.running -= 1
            if live.retired and live.running == 0:
                self._drop(live)
        return bound_result(result, self.limits.max_result_bytes)

    def _spare_delay(self) -> float:
        """How long a call may run before a spare must start to be up by its timeout."""
        return self.limits.timeout - SPARE_FACTOR * self._start_seconds - SPARE_LEAD

    def _arm_spare(self, timeout: float) -> anyio.CancelScope:
        """Start a spare session if the call now running is still running when its timeout is
        nearer than a start-up; cancel the returned scope when the call ends."""
        timer = anyio.CancelScope()
        with contextlib.suppress(UpstreamError):  # the pool is closing: no spare needed
            self._pool.spawn(self._spare_after, max(0.0, self._spare_delay()), timer)
        return timer

    async def _spare_after(self, delay: float, timer: anyio.CancelScope) -> None:
        with timer:
            await anyio.sleep(delay)
            self._ensure_spare("a call is running long")

    def _ensure_spare(self, why: str) -> None:
        if self._spare is not None and not self._spare.ended.is_set():
            return
        log.info("gateway: %s: %s; starting a spare session", self.name, why)
        with contextlib.suppress(UpstreamError):  # the pool is closing: no spare needed
            self._spare = self._spawn_start()

    @property
    def has_spare(self) -> bool:
        """Whether a spare session is up, ready to take over from a retired one."""
        return self._spare is not None and self._spare.usable

    async def _session(self) -> _Live:
        """The open session, started when there is none (bounded by the server's timeout).

        Raises:
            UpstreamError: the server cannot be started or did not finish starting in time.
        """
        async with self._lock:
            if self._live is not None and not self._live.closed:
                return self._live
            spare, self._spare = self._spare, None
            if spare is not None and spare.usable:
                assert spare.live is not None
                self._live = spare.live
                self._spare_if_short()
                return spare.live
            if anyio.current_time() < self._failed_until:
                raise UpstreamError(self.name, self._failure)
            try:
                # A spare still starting is waited for (its start began earlier): no third one.
                live = await self._await_start(
                    spare if spare is not None and not spare.done.is_set() else self._spawn_start()
                )
            except TimeoutError:
                self._fail(f"cannot be started: no answer within {self.spec.timeout:g} s")
            except IngestError as exc:
                self._fail(f"cannot be started: {exc}")
            except Exception as exc:  # from the SDK, through the owner task
                self._fail(f"cannot be started: {describe(exc)}")
            self._live = live
            self._spare_if_short()
            return live

    def _spare_if_short(self) -> None:
        """Keep a spare up from the start when the timeout is shorter than a start-up (a call
        could time out before a spare started by the call were up)."""
        if self._spare_delay() <= 0:
            self._ensure_spare("its timeout is shorter than its start-up")

    def _fail(self, reason: str) -> NoReturn:
        self._failure = reason
        self._failed_until = anyio.current_time() + START_COOLDOWN
        raise UpstreamError(self.name, reason) from None

    def _spawn_start(self) -> _Start:
        """Start a session in the pool's task group (its owner task); nobody waits for it yet.

        Raises:
            UpstreamError: the pool is not running.
        """
        start = _Start()
        self._pool.spawn(self._own, start)
        self._owners.add(start)
        self.starts += 1
        return start

    async def _await_start(self, start: _Start) -> _Live:
        """Wait for ``start``'s session, at most the server's timeout from when it began.

        The owner task, not this caller, stops a server that misses the deadline: that can take
        the SDK's whole shutdown (seconds), which the caller must not wait for.

        Raises:
            TimeoutError: the server did not finish starting in time.
            Exception: why the start failed (from the owner task).
        """
        try:
            with anyio.move_on_after(
                max(0.0, start.began + self.spec.timeout - anyio.current_time())
            ):
                await start.done.wait()
        finally:
            if start.live is None:
                start.scope.cancel()  # late, failed or abandoned: the owner winds down alone
        if start.live is not None:
            return start.live
        if start.error is not None:
            raise start.error
        raise TimeoutError

    async def _own(self, start: _Start) -> None:
        """Owner task: enter the client, hand it out, leave it when told to stop."""
        try:
            with start.scope:
                async with McpSource(self.spec).connect() as client:
                    live = _Live(client)
                    start.live = live
                    self._start_seconds = anyio.current_time() - start.began
                    start.done.set()
                    await live.stop.wait()
        except Exception as exc:  # a session that dies must not take the pool down
            if start.live is None:
                start.error = exc
            else:
                log.info("gateway: session of %s ended: %s", self.name, describe(exc))
        finally:
            self._owners.discard(start)
            start.done.set()
            start.ended.set()

    def _retire(self, live: _Live) -> None:
        """Send new calls to a fresh session (started now, off the caller's path); ``live``
        ends when its last running call does."""
        if live.retired or live.closed:
            return
        live.retired = True
        if self._live is live:
            self._live = None
            if self._spare is not None and not self._spare.ended.is_set():
                log.info("gateway: %s: a call timed out; the spare session takes over", self.name)
                return
            log.info("gateway: %s: a call timed out; starting a fresh session", self.name)
            with contextlib.suppress(UpstreamError):  # the pool is closing: nothing to start
                self._pool.spawn(self._prestart)

    async def _prestart(self) -> None:
        try:
            await self._session()
        except UpstreamError as exc:  # the next call reports it (within the cooldown)
            log.info("gateway: %s: %s", self.name, exc)

    def _drop(self, live: _Live) -> None:
        live.closed = True
        live.stop.set()
        if self._live is live:
            self._live = None

    def close(self) -> None:
        """Tell every owner task to leave its session, and abandon starts in progress (the
        pool waits for them)."""
        for start in list(self._owners):
            if start.live is not None:
                self._drop(start.live)
            else:
                start.scope.cancel()

    async def wait_closed(self) -> None:
        """Wait until every owner task has ended (each server stopped)."""
        for start in list(self._owners):
            await start.ended.wait()
