"""The vector leg of the PostgreSQL store: exact scans for small or narrow queries, HNSW above.

The store builds one :class:`PgVectorLeg` over its database; the leg owns the HNSW index's
upkeep (built when the table outgrows ``exact_below``, dropped and rebuilt around a bulk load).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg.sql
from numpy.typing import NDArray

from toolscout.errors import StoreError
from toolscout.models import Filters, Scored
from toolscout.store.base import IndexIdentity, IndexState
from toolscout.store.postgres.conn import Conn, sql_errors, where_sql
from toolscout.store.postgres.database import PostgresDatabase

#: Extra HNSW candidates, re-scored exactly: the graph orders by half-precision distance,
#: which can swap near-duplicates by ~1e-3, and equal scores at the cut must still break by
#: id. 10 extra gave recall@10 0.979 at 100k tools, 40 extra 0.98+ (docs/BENCHMARKS.md §7).
_RERANK_MARGIN = 40
#: The smallest HNSW search breadth used (see ``_ef_search``).
_MIN_EF = 400


#: The graph indexes the vectors rounded to half precision (``halfvec``): the same recall as a
#: float32 graph at 100k tools (0.9835 short / 0.9989 long queries at ef_search 800) for half
#: the memory traffic, so a KNN search took 7.3 instead of 13.2 ms (docs/BENCHMARKS.md section
#: 7). Candidates are re-scored with the exact float32 cosine before they are ranked.
#: ef_construction 200 (pgvector's default is 64): at 100k tools full of near-duplicates,
#: recall@10 of short queries at ef_search 800 rises from 0.96 to 0.99 for twice the build
#: time; m 32 was slower and no better.
def hnsw_index_sql(dim: int) -> str:
    """The HNSW index statement for ``dim``-dimensional vectors (halfvec needs pgvector 0.7)."""
    return (
        f"CREATE INDEX IF NOT EXISTS tools_embedding_hnsw ON tools USING hnsw "
        f"((embedding::halfvec({int(dim)})) halfvec_cosine_ops) "
        f"WITH (m = 16, ef_construction = 200)"
    )


class PgVectorLeg:
    """``nearest``, ``vectors`` and the HNSW index's upkeep, over the rows themselves (so the
    follow-up hooks of :class:`~toolscout.store.postgres.vector.base.VectorLeg` have nothing
    to do)."""

    elsewhere: str | None = None

    def __init__(self, db: PostgresDatabase, identity: Callable[[], IndexIdentity | None]) -> None:
        self.db = db
        self._target = db.target
        self._pool = db.pool
        self._query = db.query
        self._identity = identity
        #: The index dimension (None before an embedder is bound).
        self.dim: int | None = None
        #: True inside ``bulk()``: writes leave the HNSW index to the end.
        self.in_bulk = False

    def bound_dim(self) -> int | None:
        """The index dimension; re-read when unknown, since another process may have bound
        the index after this one opened it."""
        if self.dim is None:
            ident = self._identity()
            self.dim = ident.dim if ident else None
        return self.dim

    def ensure_index(self, conn: Conn) -> None:
        """Build the HNSW index if it is missing (in the caller's write transaction)."""
        # Built only once exact scans stop being cheap: until then queries never use it, and
        # inserting into an HNSW graph row by row is most of a write's cost (docs/BENCHMARKS.md).
        exists = conn.execute("SELECT to_regclass('tools_embedding_hnsw')").fetchone()
        if exists is not None and exists[0] is not None:
            return
        # A one-off build of a large graph outlasts the per-statement limit meant for queries,
        # and is several times faster when the graph fits in maintenance_work_mem.
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        dim = self.bound_dim()
        if dim is None:  # no vectors yet: nothing to index
            return
        conn.execute(hnsw_index_sql(dim))

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Load many tools at once: the HNSW index is dropped, and rebuilt in one pass at the
        end (much faster than row-by-row upkeep). Meanwhile queries scan exactly.

        Raises: StoreError."""
        with self.db.transaction() as conn:
            conn.execute("DROP INDEX IF EXISTS tools_embedding_hnsw")
        self.in_bulk = True
        try:
            yield
        finally:
            self.in_bulk = False
            with self.db.transaction() as conn:
                live = conn.execute("SELECT live_rows FROM lexical_stats").fetchone()
                if live is not None and int(live[0]) > self._target.exact_below:
                    self.ensure_index(conn)
            # Index-only BM25 scans need the visibility map, which autovacuum would set only
            # later; fresh statistics also keep the planner's estimates honest.
            with sql_errors("vacuum after a bulk load", self._target), self._pool.connection() as c:
                c.execute("SET statement_timeout = 0")
                c.execute("VACUUM (ANALYZE) postings, tools")
                c.execute(
                    psycopg.sql.SQL("SET statement_timeout = {}").format(
                        psycopg.sql.Literal(self._target.statement_timeout_ms)
                    )
                )

    def _scan_plan(self, cond: str, params: list[Any], live: int | None) -> tuple[bool, int]:
        """Whether few enough rows pass the filters for an exact scan to be cheap, and how
        many tools the graph holds (``live``: as the search read it; None: ask)."""
        cap = self._target.exact_below
        if live is None:
            live = int(self._query("SELECT live_rows FROM lexical_stats")[0][0])
        if cond == "true":
            return live <= cap, live
        rows = self._query(
            f"SELECT count(*) FROM (SELECT 1 FROM tools t WHERE {cond} LIMIT %s) s",
            [*params, cap + 1],
        )
        return int(rows[0][0]) <= cap, live

    def _ef_search(self, live: int, want: int) -> int:
        """The graph's search breadth: one per hundred tools, within [400, ef_search]. At 10k
        tools 400 already finds the exact top 10; at 100k near-duplicate-heavy tools recall@10
        needs 1000 (docs/BENCHMARKS.md section 7)."""
        cap = self._target.ef_search
        return max(want, min(cap, max(_MIN_EF, live // 100)))

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Raises: StoreError (wrong dimension, PostgreSQL failure)."""
        return self.nearest_many(np.asarray(vector)[None, :], limit=limit, filters=filters)[0]

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        state: IndexState | None = None,
    ) -> list[list[Scored]]:
        """``nearest`` for each row (one query's clauses): the scan-or-index decision and the
        session settings are made once (from ``state``'s tool count when given), and every
        row runs on one connection.

        Raises: StoreError (wrong dimension, PostgreSQL failure)."""
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        dim = self.bound_dim()
        if dim is None or limit <= 0:
            return [[] for _ in queries]
        if queries.shape[1] != dim:
            raise StoreError(f"query vector has dimension {queries.shape[1]}, index wants {dim}")
        cond, params = where_sql(filters)
        exact, live = self._scan_plan(cond, params, state.tools if state is not None else None)
        if exact:
            # A second sort key keeps the planner off the HNSW index: an exact scan.
            statement = (
                f"SELECT t.id, 1 - (t.embedding <=> %b) AS s FROM tools t "
                f"WHERE {cond} AND t.embedding IS NOT NULL "
                f"ORDER BY t.embedding <=> %b, t.id LIMIT %s"
            )
            want, settings = limit, None
        else:
            # Ordered by the indexed half-precision distance; scored with the exact one.
            half = f"halfvec({dim})"
            statement = (
                f"SELECT t.id, 1 - (t.embedding <=> %b) AS s FROM tools t "
                f"WHERE {cond} AND t.embedding IS NOT NULL "
                f"ORDER BY t.embedding::{half} <=> %b::{half} LIMIT %s"
            )
            want = limit + _RERANK_MARGIN
            settings = str(self._ef_search(live, want))
        out: list[list[Scored]] = []
        with (
            sql_errors("vector query", self._target),
            self._pool.connection() as conn,
            conn.transaction(),
        ):
            if settings is not None:
                # Above exact_below the index is wanted even where the planner's estimate
                # would pick a scan, so the choice stays the store's (its recall is what the
                # bench measured); ef_search must cover the rows asked for.
                conn.execute(
                    "SELECT set_config('enable_seqscan', 'off', true), "
                    "set_config('hnsw.ef_search', %s, true)",
                    (settings,),
                )
            for query in queries:
                rows = conn.execute(statement, [query, *params, query, want]).fetchall()
                ranked = sorted(
                    ((float(r[1]), str(r[0])) for r in rows), key=lambda p: (-p[0], p[1])
                )
                out.append([Scored(i, s) for s, i in ranked[:limit]])
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors by id. Raises: StoreError."""
        if not ids or self.bound_dim() is None:
            return {}
        rows = self._query(
            "SELECT id, embedding FROM tools WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (list(ids),),
            binary=True,
        )
        return {str(r[0]): r[1] for r in rows}

    # -- follow-up hooks: the rows are the vectors, nothing to follow -----------------------------
    def bind(self, dim: int) -> None:
        pass

    def written(self, tool_ids: Sequence[str]) -> None:
        pass

    def skills_changed(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        pass

    def skill_vectors(self) -> dict[str, NDArray[np.float32]] | None:
        return None

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass
