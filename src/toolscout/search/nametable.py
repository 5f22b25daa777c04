"""Every stored tool's name tokens and server, held in memory for one index version: the learned
ranker's view of its candidates (search/candidates.py) without a read on the search path.

A search re-scores its first 100 fused candidates and needs each one's name and server. Read
from the store, the ones no search has met since the last write cost a millisecond or two at
100k tools, on the searches that meet new tools: the p95, not the p50. The table holds the
whole catalog instead, compactly: a dict from tool id to row, and per row the index of its
name's tokens among the distinct names and of its server among the distinct servers (two
``int32`` arrays), so that a catalog's repeated names and servers are held once and the
garbage collector has few objects to walk.

It is taken whole, a page of ids at a time (``ToolReads.name_page``, every backend alike), on a
thread of its own, and kept for the data version read before the first page, provided that the
version is unchanged after the last (no write came between: the pages are one version's).
A search at another version finds the table not ready and reads as before
(:class:`~toolscout.search.candidates.CandidateCache`), and it starts a load of the new version
unless one is running or the last one ended too recently: after a load of ``d`` seconds the
next starts no sooner than ``REST * d`` later, so a store written without pause costs the
loader a small share of one core. Which path answers never changes an answer: both build each
view with :func:`~toolscout.search.candidates.candidate`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.search.candidates import Candidate, name_tokens
from toolscout.store.roles import ToolReads

log = logging.getLogger("toolscout.search")

#: Catalogs from which the table is loaded (below, a search's read of its candidates is small
#: beside the catalog and soon remembered).
MIN_TOOLS = 1_000
#: Tools read per page: each page holds the store's connection briefly, so searches running
#: meanwhile wait for one page at most.
PAGE = 1_000
#: A load of ``d`` seconds is followed by at least ``REST * d`` seconds without one.
REST = 4.0


@dataclass(frozen=True)
class Snapshot:
    """The table of one data version."""

    version: Hashable
    #: Each tool's row.
    row_of: dict[str, int]
    #: Per row: its name's index in :attr:`names`, its server's in :attr:`servers` (-1: none,
    #: the last entry, "": the tool is its own peer group).
    name_at: NDArray[np.int32]
    server_at: NDArray[np.int32]
    #: The analysed tokens of each distinct name, and each distinct server, then "".
    names: list[frozenset[str]]
    servers: list[str]

    def views(self, ids: Sequence[str]) -> dict[str, Candidate]:
        """The view of each id in ``ids`` the table holds (the others are left out)."""
        # map() over C callables and whole arrays: no Python frame per candidate.
        rows = list(map(self.row_of.get, ids))
        known: Sequence[str] = ids
        if None in rows:
            known = [tid for tid, row in zip(ids, rows, strict=True) if row is not None]
            rows = [row for row in rows if row is not None]
        at = np.array(rows, dtype=np.intp)
        names = map(self.names.__getitem__, self.name_at[at].tolist())
        # The servers' last entry is "": a tool without a server is its own peer group.
        servers = list(map(self.servers.__getitem__, self.server_at[at].tolist()))
        if "" in servers:
            servers = [server or tid for server, tid in zip(servers, known, strict=True)]
        views = map(tuple.__new__, repeat(Candidate), zip(names, servers, strict=True))
        return dict(zip(known, views, strict=True))


def read_snapshot(
    tools: ToolReads, version: Hashable, page: int = PAGE, stop: Callable[[], bool] = bool
) -> Snapshot | None:
    """Every tool's view, a page at a time (None when ``stop`` says so between pages).

    Raises:
        StoreError: a page could not be read.
    """
    row_of: dict[str, int] = {}
    name_at: list[int] = []
    server_at: list[int] = []
    names: dict[str, int] = {}
    servers: dict[str, int] = {}
    after = ""
    while True:
        rows = tools.name_page(after, page)
        for tid, name, server in rows:
            row_of[tid] = len(name_at)
            name_at.append(names.setdefault(name, len(names)))
            # A tool without a server (None or empty) is its own peer group, as candidate() says.
            server_at.append(servers.setdefault(server, len(servers)) if server else -1)
        if len(rows) < page or stop():
            break
        after = rows[-1][0]
    if stop():
        return None
    return Snapshot(
        version,
        row_of,
        np.array(name_at, dtype=np.int32),
        np.array(server_at, dtype=np.int32),
        [name_tokens(n) for n in names],
        [*servers, ""],
    )


class NameTable:
    """:class:`Snapshot` of the index version a search reads, loaded apart. Thread-safe."""

    def __init__(
        self,
        tools: ToolReads,
        version: Callable[[], Hashable | None],
        *,
        min_tools: int = MIN_TOOLS,
        page: int = PAGE,
        rest: float = REST,
    ) -> None:
        """``version``: the store's data version now (what a search reads of the index)."""
        self.tools = tools
        self.version = version
        self.min_tools = min_tools
        self.page = page
        self.rest = rest
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._loader: threading.Thread | None = None
        self._rest_until = 0.0
        self._closed = False
        #: How many snapshots were taken, and the last one's load time in seconds (for
        #: benchmarks; a list of every load would grow with every write of a long-lived server).
        self.load_count = 0
        self.last_load_s: float | None = None

    def views(
        self, ids: Sequence[str], version: Hashable, tools: int
    ) -> dict[str, Candidate] | None:
        """The views the table holds among ``ids`` at data ``version`` (of a catalog of ``tools``
        tools), or None while it holds no snapshot of that version (a load then starts, when
        the catalog is large enough and the last load has rested)."""
        snapshot = self._snapshot
        if snapshot is not None and snapshot.version == version:
            return snapshot.views(ids)
        if tools >= self.min_tools:
            self._start()
        return None

    def ready(self) -> Snapshot | None:
        """The snapshot held now (of whatever version), or None."""
        return self._snapshot

    def _start(self) -> None:
        with self._lock:
            if self._loader is not None or self._closed or time.monotonic() < self._rest_until:
                return
            self._snapshot = None  # another version's: never served again, let it go
            self._loader = threading.Thread(target=self._load, name="toolscout-names", daemon=True)
            self._loader.start()

    def _load(self) -> None:
        started = time.monotonic()
        try:
            before = self.version()
            if before is None:
                return
            snapshot = read_snapshot(self.tools, before, self.page, lambda: self._closed)
            # The pages are one version's only when no write came between the two reads.
            if snapshot is not None and self.version() == before:
                with self._lock:
                    if not self._closed:
                        self._snapshot = snapshot
                        self.load_count += 1
                        self.last_load_s = time.monotonic() - started
        except Exception as exc:  # a thread's end: whatever failed, searches read as before
            log.warning("loading the candidates' names failed (%s); searches read them", exc)
        finally:
            with self._lock:
                self._loader = None
                self._rest_until = time.monotonic() + self.rest * (time.monotonic() - started)

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait for a load running apart; True when none is running (for tools and tests)."""
        thread = self._loader
        if thread is not None:
            thread.join(timeout)
        return self._loader is None

    def close(self) -> None:
        """Forget the table; a load running apart stops at its next page and is waited for."""
        with self._lock:
            self._closed = True
            self._snapshot = None
            thread = self._loader
        if thread is not None:
            thread.join()

    def describe(self) -> dict[str, Any]:
        """Whether a snapshot is held, of how many tools, and whether one is loading."""
        snapshot = self._snapshot
        return {
            "tools": len(snapshot.row_of) if snapshot is not None else 0,
            "loading": self._loader is not None,
            "loads": self.load_count,
        }
