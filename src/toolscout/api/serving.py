"""Running an ASGI app under uvicorn in this process, with a stop that escalates.

The first SIGINT or SIGTERM stops serving gracefully (running requests get their grace, then
the app's lifespan ends: the gateway closes its upstream servers with their own graces). A
second one, while that is under way, stops at once: ``on_force`` runs in the signal handler
(the gateway kills its servers there) and uvicorn stops waiting for anything. uvicorn itself
forces only on a second SIGINT; a second SIGTERM (``kill`` twice) forces here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.lifespan.on import LifespanOn

#: The exit status uvicorn gives a server that could not start.
STARTUP_FAILURE = 3
#: Bound on the app's lifespan shutdown after a forced stop.
FORCED_LIFESPAN_SHUTDOWN = 5.0


class EscalatingServer(uvicorn.Server):
    """A uvicorn server whose second stop signal runs ``on_force`` and stops at once."""

    def __init__(self, config: uvicorn.Config, on_force: Callable[[], object] | None) -> None:
        super().__init__(config)
        self.on_force = on_force

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            if self.on_force is not None:
                self.on_force()
            self.force_exit = True
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets=sockets)
        # Forced before the lifespan's turn, uvicorn skips it and the event loop's end cancels
        # the app's lifespan task instead (a logged traceback, and the gateway's sessions torn
        # down by cancellation). After ``on_force`` the lifespan's shutdown is quick: run it.
        lifespan = self.lifespan
        if isinstance(lifespan, LifespanOn) and not lifespan.shutdown_event.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lifespan.shutdown(), FORCED_LIFESPAN_SHUTDOWN)


def run_server(app: Any, *, on_force: Callable[[], object] | None = None, **options: Any) -> None:
    """Serve ``app`` in this process with uvicorn ``options`` until stopped (see the module).

    Raises:
        SystemExit: the server could not start (status 3, as ``uvicorn.run``).
    """
    server = EscalatingServer(uvicorn.Config(app, **options), on_force)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it captured
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)
