"""BM25 over posting lists copied into the process, checked against the database on every query.

PostgreSQL computes BM25 well for rare terms but slowly for common ones: grouping tens of
thousands of postings per query costs 20-70 ms at 100k tools, and pruning cannot skip them when
a request mixes one rare word with several common ones (docs/BENCHMARKS.md section 7). So each
store process keeps copies of the posting lists its queries use, as numpy arrays, and scores
them itself, with the very float operations ``.sql`` runs in SQL (and FTS5 in
SQLite), in the same order: the scores are bit-identical.

The copies are never stale. Every write stamps the terms whose postings it changes with its
own write version (``term_stats.version``, in the write's transaction), and the tools it writes
too (``tools.lex_version``); deleted tools' docs go to ``gone_docs``. A query reads the versions
of its terms in the same snapshot as the statistics. A list whose version moved is refreshed:
its entries for the docs written or deleted since its version are replaced by those docs'
current postings (one statement for all of a query's lists), or, when too much changed, read
again whole (one packed bytea per list). ``lexical_stats.epoch`` changes when the index is
reset or the schema created again, which empties the cache. Only memory is traded:
``postings_cache`` postings (28 bytes each) per process, least recently used lists first out.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from psycopg_pool import ConnectionPool

from toolscout.errors import StoreError
from toolscout.store.postgres.conn import Conn
from toolscout.store.postgres.lexical.terms import TF_COLUMNS

log = logging.getLogger(__name__)

#: One posting as the server packs it: doc int8, doc_len int4, tf int2 per field, big-endian.
_PACKED = np.dtype(
    [("doc", ">i8"), ("len", ">i4")] + [(f"t{i}", ">i2") for i in range(len(TF_COLUMNS))]
)
_PACK = "int8send(p.doc) || int4send(p.doc_len) || " + " || ".join(
    f"int2send(p.{c})" for c in TF_COLUMNS
)
#: Each term's postings as one bytea (binary results): one row per term, no per-row messages,
#: twice as fast as a binary COPY of the rows. Posting order does not matter to the scores.
_PACKED_BY_TERM = (
    f"SELECT array_position(%s::text[], p.term)::int4, string_agg({_PACK}, ''::bytea) "
    "FROM postings p WHERE {} p.term = ANY(%s::text[]) GROUP BY 1"
)
_READ = _PACKED_BY_TERM.format("")
#: The postings of some docs (``postings_doc`` index), for refreshing lists.
_READ_DOCS = _PACKED_BY_TERM.format("p.doc = ANY(%s::bigint[]) AND")
#: A list is refreshed in place while the docs changed since its version number at most this
#: share of its postings (or REFRESH_MIN); beyond, it is read again whole.
REFRESH_SHARE = 0.25
REFRESH_MIN = 2_000
#: Deleted docs are remembered for this many write versions; older copies are read again whole.
GONE_KEEP = 10_000
#: Dense score arrays are indexed by doc; beyond this many docs, scores go through np.unique.
DENSE_MAX = 20_000_000
#: Terms read per statement while warming the cache.
_WARM_BATCH = 64
#: doc -> tool id pairs remembered (a doc's id never changes; a deleted doc is never scored).
_IDS_MAX = 1_000_000


@dataclass(frozen=True)
class PostingList:
    """One term's postings as of ``version``: docs, token counts, tf per field."""

    version: int
    docs: NDArray[np.int64]  # in no particular order
    doc_len: NDArray[np.int32]
    tf: NDArray[np.int16]  # (postings, fields)
    top: int  # the largest doc, -1 when empty

    @property
    def size(self) -> int:
        return int(self.docs.shape[0])


_Arrays = tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int16]]


def unpack(blob: bytes) -> _Arrays:
    """One term's packed postings as (docs, doc_len, tf) arrays.

    Raises: StoreError when the bytes are not whole postings."""
    if len(blob) % _PACKED.itemsize:
        raise StoreError(
            f"postings read: {len(blob)} bytes are not whole postings of {_PACKED.itemsize} "
            "bytes; the postings table does not have the layout this version expects "
            "(run `toolscout db upgrade`)"
        )
    rows = np.frombuffer(blob, dtype=_PACKED)
    tf = np.stack([rows[f"t{i}"] for i in range(len(TF_COLUMNS))], axis=1).astype(np.int16)
    return rows["doc"].astype(np.int64), rows["len"].astype(np.int32), tf


def read_lists(conn: Conn, query: str, params: Sequence[object], terms: int) -> list[_Arrays]:
    """Run ``_READ`` or ``_READ_DOCS``: the arrays of each of ``terms`` terms, in order."""
    empty: _Arrays = (
        np.empty(0, dtype=np.int64),
        np.empty(0, dtype=np.int32),
        np.empty((0, len(TF_COLUMNS)), dtype=np.int16),
    )
    out = [empty] * terms
    for key, blob in conn.cursor(binary=True).execute(query, params).fetchall():
        if not isinstance(key, int) or not 1 <= key <= terms:
            raise StoreError(f"postings read: unexpected term index {key!r}")
        out[key - 1] = unpack(bytes(blob))
    return out


class PostingsCache:
    """Posting lists by term, bounded by a total count of postings (least recently used out).

    Thread-safe: lists are immutable once stored; only the index is locked."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lists: OrderedDict[str, PostingList] = OrderedDict()
        self._held = 0
        self._epoch: str | None = None
        self._ids: dict[int, str] = {}
        self._lock = threading.Lock()
        #: Lists read whole, lists refreshed in place, filtered searches left to SQL, and
        #: searches left to SQL because their lists outsize the cache, since the process started.
        self.loaded = 0
        self.refreshed = 0
        self.filter_fallbacks = 0
        self.oversize_fallbacks = 0

    @property
    def held(self) -> int:
        """Postings held now."""
        return self._held

    def lists(
        self, conn: Conn, versions: dict[str, int], epoch: str, gone_after: int
    ) -> dict[str, PostingList]:
        """The lists of ``versions``' terms as of those versions, refreshing or loading the
        stale ones in the caller's snapshot (docs deleted after ``gone_after`` are logged)."""
        got: dict[str, PostingList] = {}
        moved: dict[str, PostingList] = {}
        with self._lock:
            if epoch != self._epoch:
                self._lists.clear()
                self._ids.clear()
                self._held = 0
                self._epoch = epoch
            for term, version in versions.items():
                hit = self._lists.get(term)
                if hit is not None and hit.version == version:
                    self._lists.move_to_end(term)
                    got[term] = hit
                elif hit is not None and gone_after <= hit.version < version:
                    moved[term] = hit
        if moved:
            got.update(self._refresh(conn, moved, versions))
        whole = [t for t in versions if t not in got]
        if whole:
            arrays_of = read_lists(conn, _READ, (whole, whole), len(whole))
            for term, arrays in zip(whole, arrays_of, strict=True):
                got[term] = _plist(versions[term], *arrays)
        fresh = [t for t in versions if t in moved or t in whole]
        if fresh:
            with self._lock:
                self.loaded += len(whole)
                self.refreshed += len(fresh) - len(whole)
                for term in fresh:
                    self._store(term, got[term])
        return got

    def warm(self, conn: Conn, budget: int, stop: threading.Event | None = None) -> int:
        """Read the lists of the most common terms, up to ``budget`` postings (and the cache's
        capacity), in one REPEATABLE READ snapshot on ``conn`` (a fresh transaction), a batch
        of terms at a time until ``stop`` is set. Returns the postings now held."""
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        stats = conn.execute("SELECT epoch, gone_after FROM lexical_stats").fetchone()
        if stats is None:
            return self._held
        rows = conn.execute(
            "SELECT term, version FROM (SELECT term, version, sum(df) OVER "
            "(ORDER BY df DESC, term ROWS UNBOUNDED PRECEDING) AS upto FROM term_stats "
            "WHERE df > 0) s WHERE upto <= %s ORDER BY upto",
            (min(budget, self.capacity),),
        ).fetchall()
        for start in range(0, len(rows), _WARM_BATCH):
            if stop is not None and stop.is_set():
                break
            batch = {str(r[0]): int(r[1]) for r in rows[start : start + _WARM_BATCH]}
            self.lists(conn, batch, str(stats[0]), int(stats[1]))
        return self._held

    def _refresh(
        self, conn: Conn, moved: dict[str, PostingList], versions: dict[str, int]
    ) -> dict[str, PostingList]:
        """New versions of ``moved`` lists: their postings of the docs written or deleted
        since the oldest of their versions replaced by those docs' postings now. Lists with
        too much changed are left out (read again whole by the caller)."""
        since = min(p.version for p in moved.values())
        budget = max(REFRESH_MIN, int(REFRESH_SHARE * sum(p.size for p in moved.values())))
        # Newest first along the version indexes, so the scans stop at the budget whatever
        # the planner's statistics say.
        rows = conn.execute(
            "(SELECT doc FROM tools WHERE lex_version > %s ORDER BY lex_version DESC LIMIT %s) "
            "UNION ALL (SELECT doc FROM gone_docs WHERE version > %s "
            "ORDER BY version DESC LIMIT %s)",
            (since, budget + 1, since, budget + 1),
        ).fetchall()
        if len(rows) > budget:
            return {}
        changed = np.array([int(r[0]) for r in rows], dtype=np.int64)
        terms = list(moved)
        now = read_lists(conn, _READ_DOCS, (terms, [int(d) for d in changed], terms), len(terms))
        top = max([int(changed.max()) if changed.size else -1] + [p.top for p in moved.values()])
        if top < DENSE_MAX:
            mask = np.zeros(top + 1, dtype=bool)
            mask[changed] = True

            def is_changed(docs: NDArray[np.int64]) -> NDArray[np.bool_]:
                return mask[docs]
        else:

            def is_changed(docs: NDArray[np.int64]) -> NDArray[np.bool_]:
                return np.isin(docs, changed)

        out: dict[str, PostingList] = {}
        for term, (docs, lens, tf) in zip(terms, now, strict=True):
            old = moved[term]
            keep = ~is_changed(old.docs)
            out[term] = _plist(
                versions[term],
                np.concatenate([old.docs[keep], docs]),
                np.concatenate([old.doc_len[keep], lens]),
                np.concatenate([old.tf[keep], tf]),
            )
        return out

    def _store(self, term: str, plist: PostingList) -> None:
        if plist.size > self.capacity:
            return  # callers keep lists within capacity; one larger would flush the rest
        old = self._lists.pop(term, None)
        if old is not None:
            self._held -= old.size
        self._lists[term] = plist
        self._held += plist.size
        while self._held > self.capacity:
            _, gone = self._lists.popitem(last=False)
            self._held -= gone.size

    def tool_ids(self, conn: Conn, docs: Sequence[int]) -> dict[int, str]:
        """Tool ids of ``docs`` (docs deleted in the meantime are left out)."""
        with self._lock:
            known = {d: self._ids[d] for d in docs if d in self._ids}
        missing = [d for d in docs if d not in known]
        if missing:
            rows = conn.execute(
                "SELECT doc, id FROM tools WHERE doc = ANY(%s)", (missing,)
            ).fetchall()
            found = {int(r[0]): str(r[1]) for r in rows}
            known.update(found)
            with self._lock:
                if len(self._ids) + len(found) > _IDS_MAX:
                    self._ids.clear()
                self._ids.update(found)
        return known


class Warmer:
    """Preloads a cache with the most common terms' lists (``PostingsCache.warm``) in a
    background thread, so a fresh process's first searches do not read them. An
    optimisation: a failure is logged, never raised."""

    def __init__(
        self, pool: ConnectionPool[Conn], cache: PostingsCache, budget: int, where: str
    ) -> None:
        self._pool, self._cache, self._budget, self._where = pool, cache, budget, where
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="toolscout-warm", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with self._pool.connection() as conn, conn.transaction():
                held = self._cache.warm(conn, self._budget, self._stop)
            log.info("postings preloaded: %d in %s", held, self._where)
        except Exception as exc:
            if not self._stop.is_set():
                log.warning("postings not preloaded from %s: %s", self._where, exc)

    def stop(self) -> None:
        """Stop after the batch being read; wait for the thread."""
        self._stop.set()
        self.thread.join(timeout=30)


def _plist(
    version: int, docs: NDArray[np.int64], lens: NDArray[np.int32], tf: NDArray[np.int16]
) -> PostingList:
    return PostingList(version, docs, lens, tf, int(docs.max()) if docs.size else -1)


def log_gone_docs(conn: Conn, tool_ids: Sequence[str]) -> None:
    """Remember the docs of tools about to be deleted (in the deleting transaction), so
    processes refresh their copied lists without them; forget what is older than GONE_KEEP
    write versions (copies that old are read again whole)."""
    conn.execute(
        "INSERT INTO gone_docs SELECT doc, (SELECT version FROM lexical_stats) FROM tools "
        "WHERE id = ANY(%s) ON CONFLICT (doc) DO NOTHING",
        (list(tool_ids),),
    )
    horizon = conn.execute(
        "UPDATE lexical_stats SET gone_after = greatest(gone_after, version - %s) "
        "RETURNING gone_after",
        (GONE_KEEP,),
    ).fetchone()
    if horizon is not None:
        conn.execute("DELETE FROM gone_docs WHERE version <= %s", (int(horizon[0]),))
