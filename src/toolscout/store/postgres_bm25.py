"""The lexical leg of the PostgreSQL store: BM25 from the process's copies of posting lists
(``postgres_postings``), the same floats as ``postgres_lexical``'s SQL and SQLite's FTS5, in a
few milliseconds; SQL (``postgres_lexical``) when copies are off or a filter passes few tools.

A mixin of :class:`~toolscout.store.postgres.PostgresStore`, like ``postgres_vector``.

Unfiltered searches rank every doc that holds a query term. Filtered ones check their best docs
against the filter in SQL, batch by batch; a filter that lets too few through goes to the SQL
path, which starts from the filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from psycopg_pool import ConnectionPool

from toolscout.models import Filters, Scored
from toolscout.store.base import LEXICAL_FIELDS
from toolscout.store.postgres_conn import Conn, PgTarget, sql_errors, where_sql
from toolscout.store.postgres_lexical import PRUNE_MAX_TERMS, bm25_sql, idf, top_bm25
from toolscout.store.postgres_postings import DENSE_MAX, PostingList, PostingsCache
from toolscout.store.postgres_terms import query_terms

#: Scores are summed in an array indexed by doc when the docs' range is at most this many times
#: the query's postings: allocating and scanning it then costs less than sorting the postings
#: (np.unique); the two cost the same at ~100x (measured, 1k-100k postings, 100k-10M docs).
#: Docs only grow (every insert, even one that updates, draws from the sequence), so the
#: range can outgrow the catalog after many syncs.
DENSE_SPREAD = 64


def bm25_scores(
    terms: Sequence[str],
    lists: dict[str, PostingList],
    df: dict[str, int],
    rows: int,
    avgdl: float,
    weights: Sequence[float],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Every doc holding a query term, and its BM25 score: ``bm25_sql``'s operations in its
    order (field sum in column order, terms summed in query order), so the same floats."""
    present = [t for t in terms if t in lists and lists[t].size]
    if not present:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    top_doc = max(lists[t].top for t in present)
    postings = sum(lists[t].size for t in present)
    dense = top_doc < DENSE_MAX and top_doc <= DENSE_SPREAD * postings + 65_536
    if dense:
        acc = np.zeros(top_doc + 1)
        seen = np.zeros(top_doc + 1, dtype=bool)
    else:
        universe, inverse = np.unique(
            np.concatenate([lists[t].docs for t in present]), return_inverse=True
        )
        acc = np.zeros(universe.shape[0])
        offsets = np.cumsum([0] + [lists[t].size for t in present])
    k1_plus_1 = 1.2 + 1.0
    norm = 1.0 - 0.75
    for i, term in enumerate(present):
        plist = lists[term]
        tf = plist.tf.astype(np.float64)
        f = float(weights[0]) * tf[:, 0]
        for c in range(1, tf.shape[1]):
            f = f + float(weights[c]) * tf[:, c]
        length = (0.75 * plist.doc_len.astype(np.float64)) / avgdl
        v = idf(df[term], rows) * ((f * k1_plus_1) / (f + 1.2 * (norm + length)))
        if dense:
            acc[plist.docs] += v
            seen[plist.docs] = True
        else:
            acc[inverse[offsets[i] : offsets[i + 1]]] += v
    if dense:
        docs = np.flatnonzero(seen).astype(np.int64)
        return docs, acc[docs]
    return universe.astype(np.int64), acc


#: A filtered search checks its best-scored docs against the filter in SQL, FILTER_BATCH per
#: result wanted (at least 64) at a time, for up to FILTER_ROUNDS batches; a filter that lets
#: fewer through is left to the SQL path (``postgres_lexical``), which starts from the filter.
FILTER_BATCH = 8
FILTER_ROUNDS = 3


def _passing(
    conn: Conn,
    docs: NDArray[np.int64],
    scores: NDArray[np.float64],
    filter_sql: str,
    params: Sequence[object],
    limit: int,
) -> NDArray[np.int64] | None:
    """Positions in ``docs`` of the filter-passing docs that can make the ``limit`` best
    (ties at the cut included), or None when the batches could not settle it."""
    n = int(docs.size)
    batch = max(64, FILTER_BATCH * limit)
    span = min(n, batch * FILTER_ROUNDS)
    idx = np.argpartition(-scores, span - 1)[:span] if span < n else np.arange(n)
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    statement = f"SELECT t.doc FROM tools t WHERE t.doc = ANY(%s) AND {filter_sql}"
    passed: list[int] = []
    i = 0
    while True:
        if len(passed) >= limit:
            kth = scores[passed[limit - 1]]
            more = i < idx.size and scores[idx[i]] >= kth  # a tie with the cut still unchecked
            if not more:
                if i >= idx.size and span < n and scores[idx[-1]] >= kth:
                    return None  # ties with the cut beyond the sorted span
                return np.array([p for p in passed if scores[p] >= kth], dtype=np.int64)
        if i >= idx.size:
            return np.array(passed, dtype=np.int64) if span == n else None
        part = idx[i : i + batch]
        i += int(part.size)
        rows = conn.execute(statement, [[int(d) for d in docs[part]], *params]).fetchall()
        ok = {int(r[0]) for r in rows}
        passed.extend(int(p) for p in part if int(docs[p]) in ok)


def top_bm25_cached(
    conn: Conn,
    cache: PostingsCache,
    terms: Sequence[str],
    weights: Sequence[float],
    limit: int,
    filter_sql: str | None = None,
    params: Sequence[object] = (),
) -> list[tuple[str, float]] | None:
    """The ``limit`` best tools by BM25, ties by id, from cached lists (run inside one
    REPEATABLE READ transaction); with ``filter_sql`` (a condition on tools ``t``) only tools
    that pass it. None when the filter passes too few of the best, or when the query's lists
    hold more postings than the whole cache: the caller asks SQL (both counted in ``cache``)."""
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    found = conn.execute(
        "SELECT l.rows_indexed, l.tokens_indexed, l.epoch, l.gone_after, s.term, s.df, s.version "
        "FROM lexical_stats l LEFT JOIN term_stats s ON s.term = ANY(%s) AND s.df > 0",
        (list(set(terms)),),
    ).fetchall()
    rows, tokens, epoch, gone_after = (
        int(found[0][0]),
        int(found[0][1]),
        str(found[0][2]),
        int(found[0][3]),
    )
    live = [r for r in found if r[4] is not None]
    if not live or rows <= 0:
        return []
    df = {str(r[4]): int(r[5]) for r in live}
    if sum(df.values()) > cache.capacity:
        # Lists that cannot stay would be read whole on every such query: SQL prunes instead.
        cache.oversize_fallbacks += 1
        return None
    lists = cache.lists(conn, {str(r[4]): int(r[6]) for r in live}, epoch, gone_after)
    docs, scores = bm25_scores(terms, lists, df, rows, tokens / rows, weights)
    if docs.size == 0:
        return []
    if filter_sql is not None:
        keep_at = _passing(conn, docs, scores, filter_sql, params, limit)
        if keep_at is None:
            cache.filter_fallbacks += 1
            return None
        docs, scores = docs[keep_at], scores[keep_at]
    elif docs.size > limit:
        cut = np.partition(scores, docs.size - limit)[docs.size - limit]
        keep = scores >= cut  # ties at the cut stay: ids decide among them
        docs, scores = docs[keep], scores[keep]
    ids = cache.tool_ids(conn, [int(d) for d in docs])
    ranked = sorted(
        ((ids[int(d)], float(s)) for d, s in zip(docs, scores, strict=True) if int(d) in ids),
        key=lambda p: (-p[1], p[0]),
    )
    return ranked[:limit]


class PostgresLexicalLeg:
    """``lexical()`` for :class:`~toolscout.store.postgres.PostgresStore`."""

    _target: PgTarget
    _pool: ConnectionPool[Conn]
    _postings: PostingsCache | None

    def _query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[Any]:
        raise NotImplementedError  # provided by the store

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
    ) -> list[Scored]:
        """Raises: ValueError (weights of the wrong length), StoreError."""
        terms = query_terms([t for t in tokens if t])
        if not terms or limit <= 0:
            return []
        w = list(weights) if weights is not None else [1.0] * len(LEXICAL_FIELDS)
        if len(w) != len(LEXICAL_FIELDS):
            raise ValueError(f"weights must have {len(LEXICAL_FIELDS)} entries")
        cond, params = where_sql(filters)
        filter_sql = None if cond == "true" else cond
        if self._postings is not None:
            with (
                sql_errors("lexical query", self._target),
                self._pool.connection() as conn,
                conn.transaction(),
            ):
                cached = top_bm25_cached(conn, self._postings, terms, w, limit, filter_sql, params)
            if cached is not None:
                return [Scored(i, s) for i, s in cached]
            # a filter that passes few tools (the SQL below starts from it), or lists too
            # large for the cache
        # The pruning's bounds need non-negative weights; chatty queries of many terms match
        # so much of the catalog that looking terms up tool by tool costs more than it saves.
        if any(x < 0 for x in w) or len(set(terms)) > PRUNE_MAX_TERMS:
            rows = self._query(bm25_sql(w, filter_sql), [terms, *params, limit, limit])
            return [Scored(r[0], float(r[1])) for r in rows]
        with (
            sql_errors("lexical query", self._target),
            self._pool.connection() as conn,
            conn.transaction(),
        ):
            top = top_bm25(conn, terms, w, filter_sql, params, limit)
        return [Scored(i, s) for i, s in top]
