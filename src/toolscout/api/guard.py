"""HTTP hardening in front of every served app: what a request must pass before any route runs,
and how much work the server accepts at once.

:class:`Guard` is plain ASGI middleware (no request object, no body parsing), so it costs nothing
for the requests it lets through and refuses the others before their bodies are read:

1. ``Host`` allow-list. A page in the user's browser can point a DNS name it controls at
   127.0.0.1 (DNS rebinding) and read a loopback server as if it were same-origin; the browser
   still sends the attacker's name in ``Host``. Loopback names are allowed by default; a server
   reached under other names lists them in ``allowed_hosts`` (``"*"`` allows any).
2. Key check before the body. A request carrying a body to a path the app's ``body_access``
   names is checked against the key policy first (for the REST API: ``POST /api/v1/search``
   needs read access, every other body under ``/api/`` the admin key), so an anonymous client
   cannot make the server buffer or parse anything. Other paths (the console's forms, which
   authenticate with a cookie) are left to their routes, within the size limit.
3. Body size. ``Content-Length`` above ``max_body_bytes`` is refused at once; a chunked body is
   counted as it arrives and cut off at the limit.
4. Load. A search route (``shed``) asked while the
   :class:`~toolscout.api.gate.SearchGate` has no room is answered 503 ``overloaded`` with
   ``Retry-After`` here, its body read and dropped unparsed: under overload each refusal costs
   the event loop a few hundred microseconds instead of a route's parsing and validation, and
   the connection stays open for the client's retry.

How many searches a process runs and queues is the gate's business (one for REST and MCP
alike); this module bounds what reaches it.

The uvicorn side (slow clients, keep-alive, connection caps) is :func:`uvicorn_limits`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access, is_loopback
from toolscout.api.errors import body_for, error_body
from toolscout.errors import AccessDenied, Overloaded

log = logging.getLogger("toolscout.api")

#: Host names a loopback server answers to without configuration.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: 1 MiB: a search request is a few hundred bytes, the largest skill or enrichment write a few KB.
DEFAULT_MAX_BODY = 1024 * 1024
_NO_BODY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(header: str) -> str:
    """The name in a ``Host`` header, lower-cased, without port or IPv6 brackets."""
    value = header.strip().lower()
    if value.startswith("["):  # [::1]:8765
        return value[1 : value.find("]")] if "]" in value else value
    name, sep, port = value.rpartition(":")
    return name if sep and port.isdigit() and ":" not in name else value


def allowed_host_names(configured: Collection[str], bind: str | None = None) -> frozenset[str]:
    """Loopback names, the configured ones and, when it is a concrete address, ``bind``."""
    names = {host_name(h) if h != "*" else "*" for h in configured}
    names.update(LOOPBACK_HOSTS)
    if bind and bind not in ("0.0.0.0", "::", ""):
        names.add(host_name(bind))
    return frozenset(names)


def is_public_bind(host: str) -> bool:
    """True when binding ``host`` lets other machines connect (anything but loopback)."""
    return not (host == "localhost" or is_loopback(host.strip("[]")))


#: ``body_access(path)``: the access a body-carrying request to ``path`` needs before its body
#: is read, or None to leave the check to the route.
BodyAccess = Callable[[str], Access | None]


def api_body_access(read_paths: Collection[str], prefix: str) -> BodyAccess:
    """Read access for ``read_paths``, the admin key for anything else under ``prefix``."""
    reads = frozenset(read_paths)

    def access(path: str) -> Access | None:
        if path in reads:
            return Access.READ
        return Access.WRITE if path.startswith(prefix) else None

    return access


@dataclass(frozen=True)
class GuardConfig:
    """What :class:`Guard` enforces."""

    policy: KeyPolicy
    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_HOSTS)
    max_body_bytes: int = DEFAULT_MAX_BODY
    body_access: BodyAccess = lambda path: Access.WRITE
    #: ``shed(method, path)``: the Overloaded to answer a search route with now, else None.
    shed: Callable[[str, str], Overloaded | None] = lambda method, path: None


class _BodyTooLarge(BaseException):
    """Raised from ``receive`` past the limit. A BaseException on purpose: FastAPI turns any
    Exception raised while it reads a body into a 400, which would hide the 413."""


class Guard:
    """ASGI middleware: Host allow-list, key check before the body, body size limit."""

    def __init__(self, app: ASGIApp, config: GuardConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if await self._refused(scope, receive, send):
            return
        limit = self.config.max_body_bytes
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _BodyTooLarge:
            if started:
                raise
            await _answer(send, 413, _too_large(limit), [])

    async def _refused(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer a request refused before its route runs; whether it was."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, body, extra = refusal
            await _answer(send, status, body, extra)
            return True
        return await self._shed(scope, receive, send)

    async def _shed(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer 503 ``overloaded`` when the route is shed now; whether it was."""
        overloaded = self.config.shed(str(scope.get("method", "GET")), str(scope.get("path", "")))
        if overloaded is None:
            return False
        # The body is read (a search's is a few hundred bytes) but never parsed, so the
        # connection can serve the client's retry.
        drained = await _discard_body(receive, self.config.max_body_bytes)
        status, body = body_for(overloaded)
        retry = [(b"retry-after", str(overloaded.retry_after).encode())]
        await _answer(send, status, body, retry, close=not drained)
        return True

    def _refusal(
        self, scope: Scope, headers: dict[str, str]
    ) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]] | None:
        allowed = self.config.allowed_hosts
        host = headers.get("host")
        if host is not None and "*" not in allowed and host_name(host) not in allowed:
            message = (
                f"Host {host!r} is not served here; add it to allowed_hosts "
                "(TOOLSCOUT_ALLOWED_HOSTS) on the server if clients reach it under that name"
            )
            return 421, error_body("host_not_allowed", message, "Host"), []
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return 400, error_body("invalid_request", "malformed Content-Length"), []
            if int(length) > self.config.max_body_bytes:
                return 413, _too_large(self.config.max_body_bytes), []
        method = str(scope.get("method", "GET"))
        has_body = method not in _NO_BODY_METHODS or int(length or 0) > 0
        level = self.config.body_access(str(scope.get("path", "")))
        if level is not None and (has_body or "transfer-encoding" in headers):
            client = scope.get("client")
            token = bearer_token(headers.get("authorization"))
            try:
                check_access(self.config.policy, level, token, client[0] if client else None)
            except AccessDenied as exc:
                status, body = body_for(exc)
                return status, body, [(b"www-authenticate", b"Bearer")]
        return None


def _too_large(limit: int) -> dict[str, Any]:
    return error_body("body_too_large", f"the request body is over the {limit}-byte limit", "body")


async def _answer(
    send: Send,
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]],
    *,
    close: bool = True,
) -> None:
    """Answer with a JSON error body; ``close`` unless the request's body was read whole (the
    refusals before the body leave it unread, and the connection cannot serve another)."""
    payload = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *([(b"connection", b"close")] if close else []),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def _discard_body(receive: Receive, limit: int) -> bool:
    """Read the request's body and drop it; False when it ran over ``limit`` bytes or the
    client left first."""
    received = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return False
        received += len(message.get("body", b""))
        if received > limit:
            return False
        if not message.get("more_body", False):
            return True


class HeaderDeadlineH11(H11Protocol):
    """uvicorn's h11 protocol plus a deadline for each request's headers.

    uvicorn times out idle keep-alive connections but not a client that sends its headers a
    byte at a time (slowloris): each such socket is held for as long as the client likes. Here
    every connection must finish each request's headers within ``header_timeout`` seconds of
    opening (or of its previous response), or it is closed. A request's body and the response
    are not limited by this. The deadline is a class attribute (:func:`uvicorn_limits` sets it,
    and so does each worker process from its settings): uvicorn takes the protocol as a class
    and pickles it by name for its worker processes.
    """

    header_timeout = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def _waiting_for_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._waiting_for_headers() and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self._waiting_for_headers():
            self._arm()  # the next request on a kept-alive connection has begun
        super().data_received(data)
        if not self._waiting_for_headers():
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


#: Seconds a stopping server waits for running requests. Without a bound uvicorn waits for
#: every connection to close, and an MCP client's event stream never does: a stopped server
#: would hang, its lifespan (and the gateway's upstream servers) never shut down.
GRACEFUL_SHUTDOWN = 5.0


def uvicorn_limits(
    *, header_timeout: float, keep_alive: float, max_connections: int | None
) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` that bound what slow or idle clients can hold.

    Each request's headers must arrive within ``header_timeout`` seconds
    (:class:`HeaderDeadlineH11`, also capping them at 16 KiB), idle keep-alive connections close
    after ``keep_alive`` seconds, and past ``max_connections`` open connections plus running
    tasks uvicorn answers 503. On SIGTERM or SIGINT, requests still running get
    :data:`GRACEFUL_SHUTDOWN` seconds before they are cancelled and the app's lifespan ends.
    """
    HeaderDeadlineH11.header_timeout = header_timeout
    return {
        "http": HeaderDeadlineH11,
        "limit_concurrency": max_connections,
        "timeout_keep_alive": keep_alive,
        "h11_max_incomplete_event_size": 16 * 1024,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN,
    }


def serving_limits(settings: Any) -> dict[str, Any]:
    """:func:`uvicorn_limits` from :class:`~toolscout.config.Settings` (``header_timeout``,
    ``keep_alive_timeout``, ``max_connections``)."""
    return uvicorn_limits(
        header_timeout=settings.header_timeout,
        keep_alive=settings.keep_alive_timeout,
        max_connections=settings.max_connections,
    )
