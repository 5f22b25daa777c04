"""The gateway's upstream servers by name, and the task group that owns their sessions.

Leaving the pool (or :meth:`UpstreamPool.shutdown`) closes every session the way the SDK stops
a server: end of input, then SIGTERM to its process group after a grace, then SIGKILL.
:meth:`UpstreamPool.kill` is the forced stop a second Ctrl-C asks for: every server's process
group gets SIGKILL at once, without the graces.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from toolscout.errors import UpstreamError
from toolscout.gateway.sessions import Limits, Upstream
from toolscout.ingest.mcpconfig import ServerSpec

#: How long closing the pool waits for its sessions to end before cancelling them. A stdio
#: server is stopped by the SDK within about 4.5 s (end of input, 2 s, SIGTERM to its process
#: group, 2 s, SIGKILL), shielded from that cancellation, so this only bounds a stuck close.
SHUTDOWN_GRACE = 10.0


class UpstreamPool:
    """The upstream servers by name, and the task group that owns their sessions.

    Use as an async context manager; leaving it closes every session and abandons every start
    (a stdio server gets end of input, then SIGTERM, then SIGKILL; see ``SHUTDOWN_GRACE``).
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
        #: Set once the pool is closing: nothing new starts (a call retried after its server
        #: was closed under it must not start another one).
        self._stopping = False

    @property
    def stopping(self) -> bool:
        """Whether the pool is closing (nothing new starts)."""
        return self._stopping

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

    def spawn(self, owner: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``owner(*args)`` in the pool's task group (sessions must outlive the calls).

        Raises:
            UpstreamError: the pool is not running.
        """
        if self._tg is None:
            raise UpstreamError("*", "the gateway is not running (enter the pool first)")
        if self._stopping:
            raise UpstreamError("*", "the gateway is stopping")
        self._tg.start_soon(owner, *args)

    async def shutdown(self) -> None:
        """Close every session now and wait (at most ``SHUTDOWN_GRACE``) until each server has
        stopped, without leaving the pool: for a process about to end on a signal.

        Raises:
            Nothing.
        """
        self._stopping = True
        for upstream in self.upstreams.values():
            upstream.close()
        with anyio.move_on_after(SHUTDOWN_GRACE):
            for upstream in self.upstreams.values():
                await upstream.wait_closed()

    def kill(self) -> list[int]:
        """SIGKILL every local server's process group now, without the graces of a close; safe
        in a signal handler. Leaving the pool afterwards is quick: the SDK finds each server
        already gone. Returns the process groups killed.

        The SDK starts each stdio server as the leader of its own session and does not expose
        its pid, so the servers are found as this process's children that lead their own
        session (Linux ``/proc``; elsewhere nothing is killed and the close keeps its graces).

        Raises:
            Nothing.
        """
        self._stopping = True
        killed = []
        for pid in session_leading_children():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
                killed.append(pid)
        return killed

    async def __aenter__(self) -> UpstreamPool:
        self._tg = anyio.create_task_group()
        self._stopping = False
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
        self._stopping = True
        for upstream in self.upstreams.values():
            upstream.close()
        # Owners leave their sessions now; one that takes too long is cancelled.
        # Shield the group's own scope (a new scope would break LIFO exit) so an outer
        # cancellation still lets the servers exit; the deadline bounds the wait.
        tg.cancel_scope.shield = True
        tg.cancel_scope.deadline = anyio.current_time() + SHUTDOWN_GRACE
        return await tg.__aexit__(exc_type, exc, tb)


def session_leading_children(proc: Path = Path("/proc")) -> list[int]:
    """Pids of this process's children that lead their own session (empty without ``/proc``)."""
    me = os.getpid()
    found = []
    with contextlib.suppress(OSError):
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # ended meanwhile
            # After the command name: state, ppid, pgrp, session.
            if int(fields[1]) == me and int(fields[3]) == int(entry.name):
                found.append(int(entry.name))
    return sorted(found)
