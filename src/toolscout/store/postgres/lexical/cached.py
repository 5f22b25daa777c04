"""BM25 from the process's copies of posting lists (:mod:`.postings`): the same floats as
the SQL in :mod:`.sql` and SQLite's FTS5 (:mod:`.bm25` holds the formula), in a few
milliseconds.

Unfiltered searches rank every doc that holds a query term. Filtered ones check their best docs
against the filter in SQL, batch by batch; a filter that lets too few through goes to the SQL
path, which starts from the filter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from toolscout.store.postgres.conn import Conn
from toolscout.store.postgres.lexical.bm25 import bm25_scores
from toolscout.store.postgres.lexical.postings import PostingsCache

#: A filtered search checks its best-scored docs against the filter in SQL, FILTER_BATCH per
#: result wanted (at least 64) at a time, for up to FILTER_ROUNDS batches; a filter that lets
#: fewer through is left to the SQL path (:mod:`.sql`), which starts from the filter.
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
