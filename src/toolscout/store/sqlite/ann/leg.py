"""The embedded store's vector leg: exact below a size, Qdrant Edge's HNSW above it.

Below ``min_tools`` tools the exact in-process mirror answers (a numpy product is as fast as a
graph there). Above, a Qdrant Edge shard in ``<index>.vectors/`` answers; it is a copy of the
SQLite rows, never the source of truth:

- **One write path.** Writes touch SQLite only. Triggers append every changed tool's rowid to
  the ``tools_changes`` log in the same transaction, so a commit is all-or-nothing for both.
- **Caught up before it answers.** When the file's data version moves (the version the
  search read once for all its stages, handed down to the leg), the leg compares the shard's
  recorded log position (``state.json``) with the log and replays the changed rows (reading
  their committed state, so a replay is idempotent). A crash between a commit and the shard
  write only leaves the shard behind; the next search replays the gap.
- **Rebuilt when it cannot be trusted**: missing or damaged, of another epoch (the file was
  reset or swapped), another dimension or graph, or behind a pruned part of the log. Small
  indexes are rebuilt inline; large ones in a child process (building a graph holds the
  interpreter), while the exact mirror answers. A shard whose graph misses many points after
  catch-ups is re-indexed the same way while it keeps answering.
- **One process owns the shard** (an ``flock`` on ``<index>.vectors.lock``): other processes
  on the same file answer exactly, and take over when the owner exits.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
import sqlean
from numpy.typing import NDArray

from toolscout.errors import StoreError
from toolscout.models import Filters, Scored
from toolscout.store.sqlite.ann.build import build_shard
from toolscout.store.sqlite.ann.rows import CHUNK, LogState, changed_rows, log_state, rows_of
from toolscout.store.sqlite.ann.shard import EdgeIndex, GraphParams
from toolscout.store.sqlite.database import SQLiteDatabase
from toolscout.store.sqlite.vectors import VectorMirror

log = logging.getLogger("toolscout")

#: Tools from which the shard answers (docs/BENCHMARKS.md §2: the crossover with the exact leg).
DEFAULT_MIN_TOOLS = 20_000
#: Rows a build writes inline; larger builds run in a child process.
INLINE_BUILD = 5_000


class AnnVectorLeg:
    """``nearest_many`` of the SQLite store: the shard when it is current, else ``exact``."""

    def __init__(
        self,
        db: SQLiteDatabase,
        exact: VectorMirror,
        *,
        min_tools: int = DEFAULT_MIN_TOOLS,
        graph: GraphParams | None = None,
        inline_build: int = INLINE_BUILD,
    ) -> None:
        self.db = db
        self.exact = exact
        self.min_tools = min_tools
        self.graph = graph or GraphParams()
        self.inline_build = inline_build
        self.folder = Path(str(db.path) + ".vectors")
        #: False: the exact leg answers whatever the size (benchmarks compare the two).
        self.enabled = True
        self._lock = threading.RLock()
        self._key: object = None
        self._state: LogState | None = None
        #: Points outside any graph when the shard was opened (segments too small to index).
        self._outside = 0
        self._index: EdgeIndex | None = None
        self._owner_fd: int | None = None
        self._builder: threading.Thread | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._closed = False

    # -- answering ----------------------------------------------------------------------------
    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        at: Hashable | None = None,
    ) -> list[list[Scored]]:
        """``at``: the data version the search read (None: read it here). Raises: StoreError."""
        with self._lock:
            index = self.current(at) if self.enabled else None
            if index is not None:
                try:
                    return index.nearest_many(vectors, limit=limit, filters=filters)
                except StoreError as exc:
                    log.warning("vector shard failed (%s); rebuilding it from the rows", exc)
                    self._discard(remove=True)
        return self.exact.nearest_many(vectors, limit=limit, filters=filters, at=at)

    def written(self) -> None:
        """After a commit of this process: bring an open shard up to it now, so the write's
        cost stays with the writer. Raises: StoreError."""
        with self._lock:
            if self._index is not None:
                self.current()

    def current(self, at: Hashable | None = None) -> EdgeIndex | None:
        """The shard, caught up with the committed rows as of data version ``at`` (None: the
        version now), or None while the exact leg answers.

        Raises: StoreError when the SQLite file cannot be read."""
        with self._lock:
            if self._closed or self.db.read_only or self.exact.dim is None:
                return None
            key = at if at is not None else self.db.version()
            if key != self._key:
                try:
                    self._refresh()
                except sqlean.Error as exc:
                    raise StoreError(f"cannot read {self.db.path}: {exc}") from exc
                except StoreError as exc:  # the shard's trouble: the exact leg answers
                    log.warning("vector shard unavailable (%s); searching exactly", exc)
                    self._close_index()
                self._key = key
            return self._index

    def _refresh(self) -> None:
        with self.db.lock:
            state = log_state(self.db.conn, self._state)
        self._state = state
        if state.tools < self.min_tools or not self._own():
            self._close_index()
            return
        if self._index is not None and not self._usable(self._index, state):
            self._discard()
        if self._index is None and self._builder is None:
            self._index = self._open(state)
            if self._index is not None:  # what the optimizer left outside a graph, by design
                points, indexed = self._index.counts()
                self._outside = points - indexed
        if self._index is not None:
            self._catch_up(self._index, state)
            if self._index.counts()[0] != state.tools:  # damaged in a way loading missed
                log.warning("vector shard at %s disagrees with the rows; rebuilding", self.folder)
                self._discard(remove=True)
                self._index = self._open(state)
                return
            self.exact.drop()  # the exact mirror's copy of the vectors is not needed now

    def _usable(self, index: EdgeIndex, state: LogState) -> bool:
        s = index.state
        gap = state.oldest > 0 and s.seq < state.oldest - 1
        return (
            s.epoch == state.epoch and s.dim == self.exact.dim and s.seq <= state.last and not gap
        )

    def _open(self, state: LogState) -> EdgeIndex | None:
        """The shard on disk if usable, else an inline build (small) or a started one (large)."""
        assert self.exact.dim is not None
        if self.folder.is_dir():
            loaded = EdgeIndex.load(
                self.folder, epoch=state.epoch, dim=self.exact.dim, graph=self.graph
            )
            if loaded is not None and self._usable(loaded, state):
                return loaded
            if loaded is not None:
                loaded.close()
            log.info("vector shard at %s is stale or damaged; rebuilding it", self.folder)
        if state.tools <= self.inline_build:
            return self._build_inline()
        self._start_build()
        return None

    def _catch_up(self, index: EdgeIndex, state: LogState) -> None:
        since = index.state.seq
        if since == state.last:
            return
        with self.db.lock:
            rowids = changed_rows(self.db.conn, since, state.last)
        for start in range(0, len(rowids), CHUNK):
            with self.db.lock:
                rows, gone = rows_of(self.db.conn, rowids[start : start + CHUNK])
            index.apply(rows, gone)
        index.commit(state.last)
        points, indexed = index.counts()
        grown = points - indexed - self._outside
        if grown > max(self.inline_build, points // 10) and self._builder is None:
            self._start_build()  # many new points outside the graph: re-index, this one answers

    # -- building -----------------------------------------------------------------------------
    def _fresh_folder(self) -> Path:
        return self.folder.with_name(f"{self.folder.name}.new-{uuid.uuid4().hex[:8]}")

    def _build_inline(self) -> EdgeIndex:
        assert self.exact.dim is not None
        target = self._fresh_folder()
        try:
            with self.db.lock:
                built = build_shard(self.db.conn, target, dim=self.exact.dim, graph=self.graph)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        built.close()
        self._install(target)
        state = built.state
        loaded = EdgeIndex.load(self.folder, epoch=state.epoch, dim=state.dim, graph=self.graph)
        if loaded is None:
            raise StoreError(f"the vector shard built at {self.folder} does not open")
        return loaded

    def _install(self, built: Path) -> None:
        """Put ``built`` in the shard's place (the old one, if any, is removed)."""
        self._close_index()
        old = self.folder.with_name(f"{self.folder.name}.old-{uuid.uuid4().hex[:8]}")
        if self.folder.exists():
            os.replace(self.folder, old)
        os.replace(built, self.folder)
        shutil.rmtree(old, ignore_errors=True)

    def _start_build(self) -> None:
        assert self.exact.dim is not None
        target = self._fresh_folder()
        g = self.graph
        args = [str(self.db.path), str(target), self.exact.dim, g.m, g.ef_construct, g.ef]
        args += [g.full_scan_kb, g.indexing_kb]
        cmd = [sys.executable, "-m", "toolscout.store.sqlite.ann.build", *map(str, args)]
        thread = threading.Thread(target=self._run_build, args=(cmd, target), daemon=True)
        self._builder = thread
        thread.start()

    def _run_build(self, cmd: list[str], target: Path) -> None:
        try:
            with self._lock:
                if self._closed:
                    return
                self._child = subprocess.Popen(
                    cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                )
            child = self._child
            _, err = child.communicate()
            with self._lock:
                self._child = None
                if child.returncode != 0 or self._closed:
                    if not self._closed:
                        log.warning("building the vector shard failed: %s", err.decode()[-2000:])
                    return
                self._install(target)
                self._key = None  # load and catch up on the next search
        finally:
            shutil.rmtree(target, ignore_errors=True)
            with self._lock:
                self._builder = None

    def wait_built(self, timeout: float | None = None) -> bool:
        """Wait for a running build; True when none is running (for tools and tests)."""
        thread = self._builder
        if thread is not None:
            thread.join(timeout)
        return self._builder is None

    # -- ownership and upkeep -----------------------------------------------------------------
    def _own(self) -> bool:
        """Hold (or take) the shard's owner lock; False while another process holds it."""
        if self._owner_fd is not None:
            return True
        fd = os.open(str(self.folder) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._owner_fd = fd
        for stale in self.folder.parent.glob(self.folder.name + ".new-*"):
            shutil.rmtree(stale, ignore_errors=True)  # a build a crash left behind
        for stale in self.folder.parent.glob(self.folder.name + ".old-*"):
            shutil.rmtree(stale, ignore_errors=True)
        return True

    def _close_index(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def _discard(self, *, remove: bool = False) -> None:
        """Forget the shard (``remove``: and delete it); the next search reopens or rebuilds it."""
        self._close_index()
        if remove:
            shutil.rmtree(self.folder, ignore_errors=True)
        self._key = None

    def rebuild(self) -> None:
        """Delete the shard; the next search builds it again from the rows (with ``graph``)."""
        with self._lock:
            self._discard(remove=True)

    def reset(self) -> None:
        """The index was emptied or replaced: the shard is of another epoch now."""
        with self._lock:
            self._discard()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            child = self._child
            if child is not None:
                child.kill()
            self._close_index()
        thread = self._builder
        if thread is not None:
            thread.join(30)
        if self._owner_fd is not None:
            os.close(self._owner_fd)
            self._owner_fd = None

    def describe(self) -> dict[str, Any]:
        """Which leg answers and how large the shard is (for ``info`` and benchmarks)."""
        with self._lock:
            index = self._index
            points, indexed = index.counts() if index is not None else (0, 0)
        return {
            "leg": "ann" if index is not None else "exact",
            "min_tools": self.min_tools,
            "points": points,
            "indexed": indexed,
            "building": self._builder is not None,
        }
