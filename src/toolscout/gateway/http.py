"""Calls to REST APIs indexed from OpenAPI documents, beside the MCP upstreams.

A tool indexed from an OpenAPI operation carries its method, path and where each argument
goes (annotations ``http_method``, ``http_path``, ``http_parameters``; see
:mod:`toolscout.ingest.openapi_schema`). :class:`HttpApi` builds the request from them: path
parameters substituted (percent-encoded), query parameters, headers, the JSON body, plus the
credential headers the configuration names (read from the environment or the secrets file
when the gateway is built; never stored in the index; one that is not set fails the API's calls
with a message naming its key). The answer becomes an MCP result: the body as text, the
parsed JSON with the status as structured content, and a non-2xx status as a tool error.
A call is bounded like an MCP call: one timeout for connecting, sending and reading, and a
body read no further than the result limit allows (then cut with a notice by
:mod:`toolscout.gateway.bounds`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import mcp_types as types

from toolscout.errors import ConfigError, UpstreamError
from toolscout.gateway.bounds import bound_result
from toolscout.models import Tool

#: Seconds a call may take when the API's configuration names none.
DEFAULT_HTTP_TIMEOUT = 30.0
#: Bytes read from a body when results are not limited (``max_result_bytes = 0``).
HARD_READ_CAP = 50 * 1024 * 1024


@dataclass(frozen=True)
class HttpApi:
    """One REST API the gateway may call: where, with which credentials, within what bounds."""

    name: str
    base_url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_HTTP_TIMEOUT
    max_result_bytes: int = 0
    #: Calls at once; waiting for a slot counts against the timeout, as for MCP upstreams.
    max_concurrency: int = 8
    #: Credentials the configuration names but that are not set, each naming its key: calls
    #: fail with these messages before any request is sent.
    missing: tuple[str, ...] = ()
    #: Replaces the network in tests (an ``httpx.MockTransport``); None: the real one.
    transport: httpx.AsyncBaseTransport | None = None
    _slots: anyio.CapacityLimiter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_slots", anyio.CapacityLimiter(self.max_concurrency))

    async def call(self, tool: Tool, args: Mapping[str, Any]) -> types.CallToolResult:
        """Send the request ``tool``'s operation describes with ``args``.

        Raises:
            ConfigError: a credential the configuration names is not set (nothing is sent).
            UpstreamError: the tool has no HTTP operation or base URL, or the API could not be
                reached or did not answer within the timeout.
        """
        if self.missing:
            raise ConfigError(f"REST API {self.name!r}: " + "; ".join(self.missing))
        request = self._request(tool, args)
        try:
            with anyio.fail_after(self.timeout):
                async with self._slots:
                    status, reason, content_type, body, cut = await self._send(request)
        except TimeoutError as exc:
            raise UpstreamError(self.name, f"no answer within {self.timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(self.name, f"the request failed: {exc!r}") from exc
        result = _result(status, reason, content_type, body, cut)
        return bound_result(result, self.max_result_bytes)

    def _request(self, tool: Tool, args: Mapping[str, Any]) -> httpx.Request:
        """The request for ``tool`` (arguments are already validated against its schema).

        Raises:
            UpstreamError: the tool carries no HTTP operation, or there is no base URL.
        """
        hints = tool.annotations
        method, path, where = (
            hints.get("http_method"),
            hints.get("http_path"),
            hints.get("http_parameters"),
        )
        if not isinstance(method, str) or not isinstance(path, str) or not isinstance(where, dict):
            raise UpstreamError(self.name, f"{tool.id!r} was not indexed from an OpenAPI operation")
        base = self.base_url or hints.get("http_base_url")
        if not isinstance(base, str) or not base:
            raise UpstreamError(
                self.name,
                f"no base URL for {tool.id!r}: set apis.{self.name}.base_url in the configuration",
            )
        query: list[tuple[str, str | int | float | bool | None]] = []
        headers: dict[str, str] = {}
        body: Any = None
        for name, value in args.items():
            kind = where.get(name)
            if kind == "path":
                path = path.replace("{" + name + "}", quote(_text(value), safe=""))
            elif kind == "query":
                values = value if isinstance(value, list) else [value]
                query.extend((name, _text(v)) for v in values)
            elif kind == "header":
                headers[name] = _text(value)
            elif kind == "body":
                body = value
        # Credentials win over arguments of the same name, whatever the case.
        secret = {h.lower() for h in self.headers}
        headers = {h: v for h, v in headers.items() if h.lower() not in secret}
        headers.update(self.headers)
        url = base.rstrip("/") + "/" + path.lstrip("/")
        content = None if body is None else json.dumps(body).encode()
        if content is not None:
            headers["Content-Type"] = "application/json"
        return httpx.Request(method, url, params=query, headers=headers, content=content)

    async def _send(self, request: httpx.Request) -> tuple[int, str, str, bytes, bool]:
        """(status, reason, content type, body, whether the body was cut)."""
        cap = self.max_result_bytes or HARD_READ_CAP
        timeout = httpx.Timeout(self.timeout)
        async with httpx.AsyncClient(transport=self.transport, timeout=timeout) as client:
            response = await client.send(request, stream=True)
            try:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > cap:
                        break
            finally:
                await response.aclose()
        return (
            response.status_code,
            response.reason_phrase,
            response.headers.get("content-type", ""),
            bytes(body[:cap]),
            len(body) > cap,
        )


def _text(value: Any) -> str:
    """A parameter value as sent: JSON booleans as ``true``/``false``, others as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _result(
    status: int, reason: str, content_type: str, body: bytes, cut: bool
) -> types.CallToolResult:
    text = body.decode("utf-8", errors="replace")
    ok = 200 <= status < 300
    structured: dict[str, Any] | None = None
    if "json" in content_type and not cut:
        try:
            structured = {"status": status, "body": json.loads(text)}
        except ValueError:
            structured = None
    shown = text if ok else f"HTTP {status} {reason}: {text}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=shown)],
        structured_content=structured,
        is_error=not ok,
        _meta={"http_status": status},
    )
