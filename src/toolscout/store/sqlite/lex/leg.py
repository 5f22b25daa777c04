"""The embedded store's lexical leg: FTS5 below a size, an in-memory posting index above it.

Both give the same lists and the same scores (FTS5's ``bm25()``, bit for bit): the posting
index (:mod:`.index`) is FTS5's formula in numpy, fed with FTS5's own tokens, frequencies,
lengths and totals. At 100k tools it answers in ~1-2 ms where FTS5 walks the long posting lists
of common words for 6-130 ms (docs/benchmarks/lexical.md). It is a copy, never the source of
truth, and it lives only in the process's memory:

- **One write path.** Every tool write also writes the tool's terms to ``tools_terms`` in the
  same transaction; the triggers of the ``tools_changes`` log (the HNSW leg's) record the
  row. A commit is all-or-nothing for the tool, its FTS5 row, its terms and the log entry, and
  a crash loses only memory: the next process loads the index from committed rows.
- **Caught up before it answers.** When the file's data version moves (the version the
  search read once for all its stages, handed down to the leg), the leg reads, in one read
  transaction, the log entries past its position, the changed rows' committed terms and
  FTS5's totals, and applies them (idempotently). Another process's writes are followed the
  same way; a log gap (pruned past the leg's position), another epoch (a reset or swapped
  file), other field weights or a large delta make it load again from the rows. A version
  read before the leg's last catch-up only costs another, empty, catch-up: the rows the leg
  reads are never older than the version it was given.
- **FTS5 answers** below ``min_tools`` tools, while an index of more than ``INLINE_LOAD``
  tools loads (on a thread of its own), while tools written before the terms table existed lack
  their terms (``toolscout index --rebuild`` writes them), and for a query token FTS5 would
  read as a phrase of several tokens (never the analyser's output).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import sqlean

from toolscout.errors import StoreError
from toolscout.models import Filters, Scored
from toolscout.store.base import LEXICAL_FIELDS
from toolscout.store.fts5 import fts5_tokens
from toolscout.store.sql.dialect import SQLITE, where
from toolscout.store.sqlite.ann.rows import LogState, changed_rows, log_state
from toolscout.store.sqlite.database import SQLiteDatabase
from toolscout.store.sqlite.lex.index import PostingIndex
from toolscout.store.sqlite.lex.rows import all_rows, fts5_totals, rows_of
from toolscout.store.sqlite.lexical import FTS5Lexical

log = logging.getLogger("toolscout")

#: Tools from which the posting index answers (docs/benchmarks/lexical.md: it is faster than
#: FTS5 from 1,000 tools on; below, both answer in well under a millisecond).
DEFAULT_MIN_TOOLS = 1_000
#: The index is loaded again when its delta holds more postings than this share of the base
#: (and than RELOAD_MIN).
RELOAD_SHARE = 0.25
RELOAD_MIN = 50_000
#: Tools loaded inline, inside the search that needs the index (tens of ms); more are loaded by
#: a thread on its own connection (seconds at 1M tools) while FTS5 answers, so a process that
#: runs one search (the CLI) never waits for a load.
INLINE_LOAD = 2_000


class LexicalLeg:
    """``lexical`` of the SQLite store: the posting index when it can answer, else FTS5."""

    def __init__(
        self, db: SQLiteDatabase, fts5: FTS5Lexical, *, min_tools: int = DEFAULT_MIN_TOOLS
    ) -> None:
        self.db = db
        self.fts5 = fts5
        self.min_tools = min_tools
        #: False: FTS5 answers whatever the size (benchmarks compare the two).
        self.enabled = True
        self._lock = threading.RLock()
        self._key: object = None
        self._weights: tuple[float, ...] | None = None
        self._index: PostingIndex | None = None
        self._state: LogState | None = None
        self._seq = 0
        self._epoch = ""
        self.inline_load = INLINE_LOAD
        self.reload_min = RELOAD_MIN
        self._loader: threading.Thread | None = None
        self._closed = False

    # -- answering ----------------------------------------------------------------------------
    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
        at: Hashable | None = None,
    ) -> list[Scored]:
        """``at``: the data version the search read (None: read it here).

        Raises: ValueError (weights of the wrong length), StoreError."""
        terms = _single_terms(tokens)
        if terms is not None and self.enabled:
            w = tuple(float(x) for x in weights) if weights is not None else None
            with self._lock:
                index = self.current(w, at)
                if index is not None:
                    allowed = self._allowed(index, filters)
                    return index.top(terms, limit, allowed)
        return self.fts5.lexical(tokens, limit=limit, filters=filters, weights=weights)

    def _allowed(self, index: PostingIndex, filters: Filters | None) -> Any:
        if filters is None or filters.is_empty():
            return None
        cond, params = where(filters, SQLITE)
        rows = self.db.query(f"SELECT t.rowid FROM tools t WHERE {cond}", params)
        return index.mask([int(r[0]) for r in rows])

    def written(self) -> None:
        """After a commit of this process: bring a loaded index up to it now, so the write's
        cost stays with the writer. Raises: StoreError."""
        with self._lock:
            if self._index is not None and self._weights is not None:
                self.current(self._weights)

    def current(
        self, weights: tuple[float, ...] | None, at: Hashable | None = None
    ) -> PostingIndex | None:
        """The posting index for ``weights`` (None: every field 1.0), caught up with the
        committed rows as of data version ``at`` (None: the version now); None while FTS5
        answers. Raises: StoreError."""
        w = weights if weights is not None else (1.0,) * len(LEXICAL_FIELDS)
        if len(w) != len(LEXICAL_FIELDS):
            raise ValueError(f"weights must have {len(LEXICAL_FIELDS)} entries")
        with self._lock:
            key = at if at is not None else self.db.version()
            if key != self._key or w != self._weights:
                try:
                    self._refresh(w)
                except sqlean.Error as exc:
                    self._index = None
                    raise StoreError(f"cannot read {self.db.path}: {exc}") from exc
                self._key, self._weights = key, w
            return self._index

    def _refresh(self, weights: tuple[float, ...]) -> None:
        with self.db.lock:
            conn = self.db.conn
            conn.execute("BEGIN")
            try:
                state = log_state(conn, self._state)
                self._state = state
                if state.tools < self.min_tools or self._closed:
                    self._index = None
                elif self._index is None or not self._follows(state, weights):
                    self._reload(conn, state, weights)
                else:
                    self._catch_up(conn, self._index, state)
                    if self._index is not None and self._grown(self._index):
                        self._reload(conn, state, weights)
                if self._index is not None:
                    self._index.set_totals(*fts5_totals(conn))
            finally:
                conn.execute("COMMIT")

    def _follows(self, state: LogState, weights: tuple[float, ...]) -> bool:
        """Whether the loaded index can be caught up to ``state`` by replaying the log."""
        index = self._index
        assert index is not None
        return self._only_grown(index, state, weights) and not self._grown(index)

    def _only_grown(self, index: PostingIndex, state: LogState, weights: tuple[float, ...]) -> bool:
        """Whether the index is still exact once caught up (it may have outgrown its delta)."""
        gap = state.oldest > 0 and self._seq < state.oldest - 1
        same = tuple(index.weights.tolist()) == weights and self._epoch == state.epoch
        return same and not gap and self._seq <= state.last

    def _grown(self, index: PostingIndex) -> bool:
        return index.delta_size > max(self.reload_min, RELOAD_SHARE * index.base_size)

    def _reload(self, conn: Any, state: LogState, weights: tuple[float, ...]) -> None:
        """Load the index inline (small) or start loading it apart (large). A large index that
        only outgrew its delta keeps answering, caught up, until the new one is in."""
        if state.tools <= self.inline_load:
            self._index = self._build(conn, state, weights)
            if self._index is not None:
                self._seq, self._epoch = state.last, state.epoch
            return
        index = self._index
        if index is not None and self._only_grown(index, state, weights):
            self._catch_up(conn, index, state)
        else:
            self._index = None
        if self._loader is None:
            self._loader = threading.Thread(target=self._load_apart, args=(weights,), daemon=True)
            self._loader.start()

    def _load_apart(self, weights: tuple[float, ...]) -> None:
        """Load the index on a connection of its own, then hand it over (the next search
        catches it up from the log position it was read at)."""
        try:
            uri = f"{self.db.path.resolve().as_uri()}?mode=ro"
            conn = sqlean.connect(uri, uri=True, isolation_level=None)
            try:
                conn.execute("BEGIN")
                state = log_state(conn)
                index = self._build(conn, state, weights, stop=lambda: self._closed)
                totals = fts5_totals(conn)
                conn.execute("COMMIT")
            finally:
                conn.close()
            with self._lock:
                if not self._closed:
                    if index is not None:
                        index.set_totals(*totals)
                    self._index, self._seq, self._epoch = index, state.last, state.epoch
                    self._key = None
        except Exception as exc:  # a thread's end: whatever failed, FTS5 keeps answering
            log.warning("loading the lexical posting index failed (%s); FTS5 answers", exc)
        finally:
            with self._lock:
                self._loader = None

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait for a load running apart; True when none is running (for tools and tests)."""
        thread = self._loader
        if thread is not None:
            thread.join(timeout)
        return self._loader is None

    def _build(
        self,
        conn: Any,
        state: LogState,
        weights: tuple[float, ...],
        stop: Callable[[], bool] = lambda: False,
    ) -> PostingIndex | None:
        have = conn.execute("SELECT count(*) FROM tools_terms").fetchone()[0]
        if have < state.tools:  # tools written before their terms were kept
            log.info(
                "%d of %d tools in %s have no stored terms; FTS5 answers lexical searches "
                "(`toolscout index --rebuild` stores them)",
                state.tools - have,
                state.tools,
                self.db.path,
            )
            return None
        index = PostingIndex(weights)
        index.load(itertools.takewhile(lambda _: not stop(), all_rows(conn)))
        return None if stop() else index

    def _catch_up(self, conn: Any, index: PostingIndex, state: LogState) -> None:
        if self._seq == state.last:
            return
        rowids = changed_rows(conn, self._seq, state.last)
        for start in range(0, len(rowids), 2000):
            rows, gone = rows_of(conn, rowids[start : start + 2000])
            index.apply(rows, gone)
        self._seq = state.last
        if index.live != state.tools:  # a tool without terms: the rows decide
            self._index = None
            self._reload(conn, state, tuple(index.weights.tolist()))

    # -- upkeep -------------------------------------------------------------------------------
    def reset(self) -> None:
        """The index was emptied or replaced: load again on the next search."""
        with self._lock:
            self._index, self._key, self._state = None, None, None

    def close(self) -> None:
        """Forget the index; a load running apart stops at its next chunk (not waited for)."""
        with self._lock:
            self._closed = True
            self._index = None

    def describe(self) -> dict[str, Any]:
        """Which leg answers and how large the posting index is (for ``info`` and benchmarks)."""
        with self._lock:
            index = self._index
            return {
                "leg": "postings" if index is not None else "fts5",
                "min_tools": self.min_tools,
                "tools": index.live if index is not None else 0,
                "postings": index.base_size + index.delta_size if index is not None else 0,
                "terms": len(index.vocab) if index is not None else 0,
                "loading": self._loader is not None,
            }


def _single_terms(tokens: Sequence[str]) -> list[str] | None:
    """FTS5's phrases of an OR query of ``tokens``, in order (empty ones dropped); None when a
    token is a phrase of several terms (FTS5 then matches them in sequence)."""
    terms: list[str] = []
    for token in tokens:
        found = fts5_tokens(token.replace('"', ""))
        if len(found) > 1:
            return None
        terms.extend(found)
    return terms
