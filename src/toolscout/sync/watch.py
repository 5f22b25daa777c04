"""Keep the index true while things change: files are watched, MCP sessions stay open.

* Tool directories and catalog files are watched with ``watchfiles`` (debounced); a change
  re-reads the source it belongs to and syncs it. A catalog file that was deleted takes its tools
  with it; a tool directory that cannot be listed keeps its tools (see :mod:`.sync`).
* Each MCP server gets a long-lived session. It is re-listed when the server says its tools,
  prompts or resources changed (``notifications/tools/list_changed`` and friends on 2025-era
  connections; a ``subscriptions/listen`` stream on 2026-07-28 ones), and every
  ``relist_interval`` seconds in any case. A session that dies is reopened after
  ``retry_interval``; until then the server's tools stay as they were.

Embedding in a server (``toolscout serve --watch``)::

    stop = Watcher(engine, resolve_sources(settings)).start_in_thread()
    ...
    stop(10.0)  # at shutdown: ends the watch, waits up to 10 s

or, with a thread of your own, ``Watcher(...).run(stop_event)`` until ``stop_event.set()``.

``Watcher.arun`` is the same loop for callers that already run an anyio/asyncio event loop.
Index writes from the watcher are serialised by one lock and run in worker threads, so searches
in other threads keep going (the store has its own locking).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import watchfiles
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout.engine import Engine
from toolscout.errors import IngestError, ToolscoutError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.ingest.mcp import McpSource, describe, is_change_notification
from toolscout.ingest.pyfile import ToolDirectory
from toolscout.ingest.sources import Source
from toolscout.models import Loaded
from toolscout.sync.sync import SourceSet, SourceSummary, apply_listing, catalog_source
from toolscout.sync.synclog import record_sync

log = logging.getLogger("toolscout.sync.watch")

OnSync = Callable[[SourceSummary], None]
DEFAULT_DEBOUNCE_MS = 100
DEFAULT_RELIST_INTERVAL = 300.0
DEFAULT_RETRY_INTERVAL = 10.0
_STOP_POLL = 0.1
#: The file watcher wakes this often when idle; its first wake-up marks it ready.
_READY_TIMEOUT_MS = 500


class Watcher:
    """Watch a :class:`SourceSet` and sync each source when it changes.

    ``on_sync`` is called (in a worker thread) with the summary of every sync, failed ones
    included; tests and servers use it to know when a change has reached the index.
    """

    def __init__(
        self,
        engine: Engine,
        sources: SourceSet,
        *,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        relist_interval: float = DEFAULT_RELIST_INTERVAL,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        on_sync: OnSync | None = None,
    ) -> None:
        self.engine = engine
        self.sources = sources
        self.debounce_ms = debounce_ms
        self.relist_interval = relist_interval
        self.retry_interval = retry_interval
        self.on_sync = on_sync
        self._write_lock = threading.Lock()
        self._dirs = [ToolDirectory(d) for d in sources.tool_dirs]
        self._catalogs = {
            Path(catalog_source(p)): CatalogFile(p, source=catalog_source(p))
            for p in sources.catalogs
        }

    # -- entry points ------------------------------------------------------------------------
    def start_in_thread(self, *, name: str = "toolscout-watch") -> Callable[[float], bool]:
        """Run :meth:`run` in a daemon thread (for ``serve --watch``). Returns ``stop(timeout)``,
        which ends the watch, waits up to ``timeout`` seconds and says whether the thread ended.

        Raises:
            Nothing: an error that ends the watch is logged.
        """
        stop_event = threading.Event()

        def target() -> None:
            try:
                self.run(stop_event)
            except Exception:  # edge: a thread has no caller to raise to
                log.exception("watch: stopped by an error")

        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()

        def stop(timeout: float = 10.0) -> bool:
            stop_event.set()
            thread.join(timeout)
            return not thread.is_alive()

        return stop

    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set (blocking; run it in a thread of its own).

        Raises:
            Nothing for source failures (they are logged and reported through ``on_sync``);
            StoreError / EmbedError from the index end the watch.
        """
        anyio.run(self.arun, stop)

    async def arun(self, stop: threading.Event | None = None) -> None:
        """Sync everything once, then watch until ``stop`` is set or the task is cancelled.

        Raises:
            StoreError, EmbedError: the index itself failed.
        """
        files_stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            # Watch first, then read: a change made while the first pass runs is not lost.
            if self._dirs:
                roots = [d.root for d in self._dirs if d.root.is_dir()]
                await tg.start(self._watch_paths, roots, True, files_stop)
            if self._catalogs:
                parents = sorted({p.parent for p in self._catalogs if p.parent.is_dir()})
                await tg.start(self._watch_paths, parents, False, files_stop)
            initial: list[Source] = [*self._catalogs.values(), *self._dirs]
            for source in initial:
                await self._sync_source(source)
            for server in self.sources.server_sources():
                tg.start_soon(self._serve_server, server)
            for api in self.sources.apis:
                tg.start_soon(self._poll_api, api.source())
            if stop is not None:
                while not stop.is_set():
                    await anyio.sleep(_STOP_POLL)
                files_stop.set()
                tg.cancel_scope.cancel()

    # -- writes ------------------------------------------------------------------------------
    def _apply(self, loaded: Loaded) -> SourceSummary:
        with self._write_lock:
            summary = apply_listing(self.engine, loaded)
        self._report(summary)
        return summary

    def _report(self, summary: SourceSummary) -> None:
        with self._write_lock:
            record_sync(self.engine.store, [summary])
        if summary.error:
            log.warning("watch: %s kept as it was: %s", summary.source, summary.error)
        elif summary.added or summary.updated or summary.deleted:
            log.info(
                "watch: %s +%d ~%d -%d",
                summary.source,
                summary.added,
                summary.updated,
                summary.deleted,
            )
        if self.on_sync is not None:
            self.on_sync(summary)

    def _read_and_apply(self, source: Source) -> SourceSummary:
        try:
            loaded = source.read()
        except IngestError as exc:
            if isinstance(source, CatalogFile) and not source.path.exists():
                loaded = Loaded(source=source.name)  # deleted on purpose: its tools go too
            else:
                summary = SourceSummary(source=source.name, error=str(exc))
                self._report(summary)
                return summary
        return self._apply(loaded)

    async def _sync_source(self, source: Source) -> None:
        await anyio.to_thread.run_sync(self._read_and_apply, source)

    # -- files -------------------------------------------------------------------------------
    def _owners(self, changed: set[Path]) -> list[Source]:
        owners: list[Source] = []
        for tool_dir in self._dirs:
            if any(p == tool_dir.root or tool_dir.root in p.parents for p in changed):
                owners.append(tool_dir)
        owners.extend(c for path, c in self._catalogs.items() if path in changed)
        return owners

    async def _watch_paths(
        self,
        roots: list[Path],
        recursive: bool,
        stop: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        if not roots:
            task_status.started()
            return
        # The first (possibly empty) batch proves the OS watch is in place: only then is the
        # task reported started, so the caller's first read cannot race it.
        started = False
        async for changes in watchfiles.awatch(
            *roots,
            debounce=self.debounce_ms,
            step=min(50, self.debounce_ms),
            recursive=recursive,
            stop_event=stop,
            rust_timeout=_READY_TIMEOUT_MS,
            yield_on_timeout=True,
        ):
            if not started:
                started = True
                task_status.started()
            changed = {Path(path).resolve() for _, path in changes}
            for source in self._owners(changed):
                await self._sync_source(source)

    # -- MCP servers -------------------------------------------------------------------------
    async def _poll_api(self, source: Source) -> None:
        """An OpenAPI document: synced now and again every ``relist_interval`` (a URL has no
        change notifications; a failed read keeps the API's tools, as in ``sync``)."""
        while True:
            await self._sync_source(source)
            await anyio.sleep(self.relist_interval)

    async def _serve_server(self, source: McpSource) -> None:
        while True:
            try:
                await self._session(source)
            except ToolscoutError as exc:
                summary = SourceSummary(source=source.name, error=str(exc))
                await anyio.to_thread.run_sync(self._report, summary)
            except Exception as exc:  # edge: a broken session must not stop the other watches
                log.exception("watch: session with %s failed", source.name)
                summary = SourceSummary(source=source.name, error=describe(exc))
                await anyio.to_thread.run_sync(self._report, summary)
            await anyio.sleep(self.retry_interval)

    async def _session(self, source: McpSource) -> None:
        changed = [anyio.Event()]

        async def on_message(message: IncomingMessage) -> None:
            if is_change_notification(message):
                changed[0].set()

        async with (
            source.connect(message_handler=on_message) as client,
            anyio.create_task_group() as tg,
        ):
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await tg.start(self._listen, client, changed)
            while True:
                changed[0] = anyio.Event()  # before listing: a change during it re-lists
                loaded = await source.list_items(client)
                await anyio.to_thread.run_sync(self._apply, loaded)
                with anyio.move_on_after(self.relist_interval):
                    await changed[0].wait()

    async def _listen(
        self,
        client: Client,
        changed: list[anyio.Event],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as subscription:
                task_status.started()
                async for _event in subscription:
                    changed[0].set()
        except (ListenNotSupportedError, MCPError) as exc:
            # No listen stream on this server: the re-list interval still applies.
            log.info("watch: %s offers no change stream (%s)", client, describe(exc))
            task_status.started()
