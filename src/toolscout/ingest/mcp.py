"""A running MCP server as a :class:`~toolscout.ingest.sources.Source`.

The official ``mcp`` SDK does the talking (stdio, streamable HTTP or SSE). Tools, prompts,
resources and resource templates are listed page by page; each becomes a :class:`Tool` of its
item type with the server's name. Ids: ``server::name`` for tools (the catalog-file default, so a
server indexed from a saved ``tools/list`` keeps its ids), ``server::prompt:name`` and
``server::resource:uri`` for the others, so a prompt and a tool of the same name do not collide.

Whatever goes wrong with a server (it does not start, exits, hangs past its timeout, answers with
an error or a cursor loop) becomes one :class:`IngestError` naming the server and the reason, with
the tail of its stderr when it wrote any.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any, TextIO, cast

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from toolscout.errors import IngestError
from toolscout.ingest.entries import EntryError, parse_entry
from toolscout.ingest.mcpconfig import ServerSpec
from toolscout.models import ItemType, Loaded, Problem

log = logging.getLogger("toolscout.ingest.mcp")

SOURCE_PREFIX = "mcp:"
#: A server that keeps handing out cursors is a bug on its side; stop rather than loop.
MAX_PAGES = 1000
_STDERR_TAIL = 400
_CHANGE_NOTIFICATIONS = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
)


def _client_info() -> types.Implementation:
    try:
        own = version("toolscout")
    except PackageNotFoundError:  # a source checkout that was never installed
        own = "0"
    return types.Implementation(name="toolscout", version=own)


def describe(exc: BaseException) -> str:
    """A one-line reason from an exception, unwrapping the task-group groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_change_notification(message: object) -> bool:
    """Whether a server message says its tools, prompts or resources changed."""
    return isinstance(message, _CHANGE_NOTIFICATIONS)


@asynccontextmanager
async def _http_transport(spec: ServerSpec) -> AsyncIterator[Any]:
    # Headers (API keys) need our own httpx client; its lifetime is this context.
    async with (
        create_mcp_http_client(headers=dict(spec.headers) or None) as http,
        streamable_http_client(str(spec.url), http_client=http) as streams,
    ):
        yield streams


def _transport(spec: ServerSpec, errlog: IO[str]) -> Any:
    if spec.transport == "stdio":
        params = StdioServerParameters(
            command=str(spec.command), args=list(spec.args), env=dict(spec.env), cwd=spec.cwd
        )
        return stdio_client(params, errlog=cast(TextIO, errlog))
    if spec.transport == "sse":
        return sse_client(str(spec.url), headers=dict(spec.headers) or None, timeout=spec.timeout)
    return _http_transport(spec)


async def _pages(
    fetch: Callable[[str | None], Awaitable[Any]], attr: str, what: str, *, optional: bool = False
) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        try:
            page = await fetch(cursor)
        except MCPError as exc:
            # Capabilities are coarse (``resources`` covers templates too): a server that lacks
            # an optional list method has nothing of that kind rather than being broken.
            if optional and exc.code == METHOD_NOT_FOUND:
                return items
            raise
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if cursor is None:
            return items
        if cursor in seen:
            raise IngestError(f"{what}: the server repeated cursor {cursor!r}")
        seen.add(cursor)
    raise IngestError(f"{what}: more than {MAX_PAGES} pages")


class McpSource:
    """One MCP server. ``read()`` connects, lists everything and disconnects.

    ``connect()`` and ``list_items()`` are the pieces the watcher uses to keep a session open.
    """

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self._errlog: IO[str] | None = None

    @property
    def name(self) -> str:
        return SOURCE_PREFIX + self.spec.name

    def _fail(self, reason: str) -> IngestError:
        tail = ""
        if self._errlog is not None:
            try:
                self._errlog.seek(0)
                text = self._errlog.read().strip()
            except (OSError, ValueError):
                text = ""
            if text:
                tail = f"; its stderr ends with: {text[-_STDERR_TAIL:]}"
        return IngestError(f"MCP server {self.spec.name!r} ({self.spec.origin}): {reason}{tail}")

    @asynccontextmanager
    async def connect(
        self, message_handler: MessageHandlerFnT | None = None
    ) -> AsyncIterator[Client]:
        """An open, initialised session. Each request is bounded by the server's timeout.

        Raises:
            IngestError: the server could not be started or reached, or failed the handshake.
        """
        async with AsyncExitStack() as stack:
            # stderr goes to a file so a failure can quote it instead of spraying the terminal.
            self._errlog = stack.enter_context(
                tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            )
            client = Client(
                _transport(self.spec, self._errlog),
                read_timeout_seconds=self.spec.timeout,
                client_info=_client_info(),
                message_handler=message_handler,
                mode=self.spec.protocol,
                cache=None,  # a listing must be the server's current one, never a cached copy
            )
            try:
                await stack.enter_async_context(client)
            except IngestError:
                raise
            except Exception as exc:  # the SDK raises many kinds; the edge names the server
                raise self._fail(f"cannot connect: {describe(exc)}") from exc
            yield client

    async def list_items(self, client: Client) -> Loaded:
        """List tools, prompts and resources on an open session.

        Raises:
            IngestError: a listing failed or did not finish within the server's timeout.
        """
        try:
            with anyio.fail_after(self.spec.timeout):
                return await self._list(client)
        except TimeoutError as exc:
            raise self._fail(f"no complete listing within {self.spec.timeout:g} s") from exc
        except IngestError as exc:
            raise self._fail(str(exc)) from exc
        except Exception as exc:  # the SDK raises many kinds; the edge names the server
            raise self._fail(f"listing failed: {describe(exc)}") from exc

    async def _list(self, client: Client) -> Loaded:
        caps = client.server_capabilities
        loaded = Loaded(source=self.name)
        server = self.spec.name
        if caps.tools is not None:
            tools = await _pages(lambda c: client.list_tools(cursor=c), "tools", "tools/list")
            for tool in tools:
                self._add(loaded, tool, ItemType.TOOL, f"{server}::{tool.name}")
        if caps.prompts is not None:
            prompts = await _pages(
                lambda c: client.list_prompts(cursor=c), "prompts", "prompts/list"
            )
            for prompt in prompts:
                self._add(loaded, prompt, ItemType.PROMPT, f"{server}::prompt:{prompt.name}")
        if caps.resources is not None:
            resources = await _pages(
                lambda c: client.list_resources(cursor=c),
                "resources",
                "resources/list",
                optional=True,
            )
            for res in resources:
                self._add(loaded, res, ItemType.RESOURCE, f"{server}::resource:{res.uri}")
            templates = await _pages(
                lambda c: client.list_resource_templates(cursor=c),
                "resource_templates",
                "resources/templates/list",
                optional=True,
            )
            for tpl in templates:
                self._add(loaded, tpl, ItemType.RESOURCE, f"{server}::resource:{tpl.uri_template}")
        return loaded

    def _add(self, loaded: Loaded, item: Any, item_type: ItemType, item_id: str) -> None:
        raw = item.model_dump(by_alias=True, mode="json", exclude_none=True)
        raw["id"] = item_id
        raw.pop("_meta", None)
        where = f"{self.name} {item_type.value} {raw.get('name', '?')!r}"
        try:
            tool = parse_entry(raw, default_type=item_type, server=self.spec.name, source=self.name)
        except EntryError as exc:
            # The server named the item, so only its own id is held back from a prune.
            loaded.problems.append(
                Problem(where, exc.field, str(exc), stands_for=(item_id.strip(),))
            )
            return
        loaded.tools.append(tool)  # a name listed twice is reported by Engine.index

    async def read_async(self) -> Loaded:
        """Connect, list and disconnect, all within the server's timeout.

        Raises:
            IngestError: naming the server and the reason.
        """
        try:
            with anyio.fail_after(self.spec.timeout):
                async with self.connect() as client:
                    return await self._list(client)
        except TimeoutError as exc:
            raise self._fail(f"no answer within {self.spec.timeout:g} s") from exc
        except IngestError as exc:
            if str(exc).startswith("MCP server "):
                raise
            raise self._fail(str(exc)) from exc
        except Exception as exc:  # the SDK raises many kinds; the edge names the server
            raise self._fail(describe(exc)) from exc

    def read(self) -> Loaded:
        """List the server now (runs its own event loop; call from a thread without one).

        Raises:
            IngestError: naming the server and the reason.
        """
        return anyio.run(self.read_async)
