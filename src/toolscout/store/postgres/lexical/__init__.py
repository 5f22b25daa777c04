"""The PostgreSQL store's lexical leg: the whole BM25 posting machinery behind one object.

* :mod:`.terms` - FTS5's tokens for the postings table;
* :mod:`.bm25` - the formula and its constants, as SQL and as numpy;
* :mod:`.sql` - scoring in SQL (exhaustive, and pruned with MaxScore) and the write hooks;
* :mod:`.postings` - the process's copies of posting lists, kept exact on every query, and the
  warmer that preloads them;
* :mod:`.cached` - scoring from those copies.

:class:`PostgresLexical` is what the store holds: it writes postings inside the store's write
transactions and answers ``lexical()`` by the cheapest exact path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolscout.models import Filters, Scored
from toolscout.store.base import LEXICAL_FIELDS
from toolscout.store.postgres.conn import Conn, sql_errors, where_sql
from toolscout.store.postgres.database import PostgresDatabase
from toolscout.store.postgres.lexical.cached import top_bm25_cached
from toolscout.store.postgres.lexical.postings import PostingsCache, Warmer, log_gone_docs
from toolscout.store.postgres.lexical.sql import (
    PRUNE_MAX_TERMS,
    add_postings,
    bm25_sql,
    forget_postings,
    top_bm25,
)
from toolscout.store.postgres.lexical.terms import COPY_POSTINGS, document_terms, query_terms

__all__ = ["PostgresLexical", "document_terms"]


class PostgresLexical:
    """BM25 over the ``postings`` table, from copies in this process when it can."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        target = db.target
        cap = target.postings_cache
        #: This process's posting-list copies (None: every query is scored in SQL).
        self.cache = PostingsCache(cap) if cap > 0 else None
        warm = target.postings_warm
        self._warmer = (
            Warmer(db.pool, self.cache, warm, target.display)
            if self.cache is not None and warm > 0
            else None
        )

    # -- writes, inside the store's transaction ---------------------------------------------
    def forget(self, conn: Conn, tool_ids: Sequence[str]) -> None:
        """Drop the postings of tools about to be rewritten."""
        forget_postings(conn, tool_ids)

    def forget_deleted(self, conn: Conn, tool_ids: Sequence[str]) -> None:
        """Drop the postings of tools about to be deleted, and log their docs as gone."""
        forget_postings(conn, tool_ids)
        log_gone_docs(conn, tool_ids)

    def add(self, conn: Conn, docs: Sequence[tuple[int, int, Mapping[str, list[int]]]]) -> None:
        """Write the postings of freshly written tools: ``(doc, doc_len, {term: tf per
        field})`` each, and count them into the terms' document frequencies."""
        df: dict[str, int] = {}
        with conn.cursor().copy(COPY_POSTINGS) as copy:
            for doc, doc_len, freqs in docs:
                for term, tf in freqs.items():
                    copy.write_row((term, doc, doc_len, *tf))
                    df[term] = df.get(term, 0) + 1
        add_postings(conn, df)

    # -- reads ------------------------------------------------------------------------------
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
        target = self.db.target
        if self.cache is not None:
            with (
                sql_errors("lexical query", target),
                self.db.pool.connection() as conn,
                conn.transaction(),
            ):
                cached = top_bm25_cached(conn, self.cache, terms, w, limit, filter_sql, params)
            if cached is not None:
                return [Scored(i, s) for i, s in cached]
            # a filter that passes few tools (the SQL below starts from it), or lists too
            # large for the cache
        # The pruning's bounds need non-negative weights; chatty queries of many terms match
        # so much of the catalog that looking terms up tool by tool costs more than it saves.
        if any(x < 0 for x in w) or len(set(terms)) > PRUNE_MAX_TERMS:
            rows = self.db.query(bm25_sql(w, filter_sql), [terms, *params, limit, limit])
            return [Scored(r[0], float(r[1])) for r in rows]
        with (
            sql_errors("lexical query", target),
            self.db.pool.connection() as conn,
            conn.transaction(),
        ):
            top = top_bm25(conn, terms, w, filter_sql, params, limit)
        return [Scored(i, s) for i, s in top]

    def close(self) -> None:
        """Stop preloading postings."""
        if self._warmer is not None:
            self._warmer.stop()
