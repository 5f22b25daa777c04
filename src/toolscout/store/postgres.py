"""The server store: PostgreSQL with pgvector, for many toolscout processes sharing one index.

It answers every :class:`~toolscout.store.base.Store` call the way the embedded SQLite store does
(tests/contract proves it on one suite and a congruence test):

* lexical leg: FTS5's bm25 over a ``postings`` table, computed by each process from its own
  copies of the posting lists a query needs, checked against the table's versions on every
  query (``postgres_bm25``, ``postgres_postings``), or in SQL (``postgres_lexical``);
* vector leg: a ``vector(dim)`` column with an HNSW cosine index. When the rows a query can
  reach are few (``exact_below``, default 2000) the scan is exact, like the SQLite store's;
  above that HNSW answers, with ``hnsw.ef_search`` one per hundred tools (from 400 up to
  the ``ef_search`` option, 1000) and iterative scans for filtered queries. The graph
  indexes half-precision copies of the vectors (``halfvec``, pgvector >= 0.7); extra
  candidates are fetched, re-scored with the exact cosine and re-sorted, so scores are
  exact and ties break by id.
  The index itself is built when the table first outgrows ``exact_below`` (or at the end of
  a ``bulk()`` load).

Several processes: the only index data a store keeps in memory are those posting-list copies,
and each query checks them in its own snapshot, so a write by one process is seen by the next
query of every other. Writes take one transaction-scoped advisory lock per
schema, so concurrent syncs serialise (as SQLite's single writer does) instead of
deadlocking or interleaving half-written tools; ``INSERT ... ON CONFLICT`` keeps ids unique.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from toolscout.errors import ConfigError, StoreError, ToolNotFound
from toolscout.models import Filters, ItemType, Tool
from toolscout.store.base import IndexEntry, IndexIdentity
from toolscout.store.postgres_bm25 import PostgresLexicalLeg
from toolscout.store.postgres_conn import (
    Conn,
    open_pool,
    parse_url,
    prepare_database,
    sql_errors,
    where_sql,
)
from toolscout.store.postgres_enrich import PostgresEnrichments
from toolscout.store.postgres_lexical import (
    COPY_POSTINGS,
    add_postings,
    forget_postings,
)
from toolscout.store.postgres_postings import PostingsCache, Warmer, log_gone_docs
from toolscout.store.postgres_skills import PostgresSkillTables
from toolscout.store.postgres_terms import document_terms
from toolscout.store.postgres_vector import PostgresVectorLeg

_TOOL_COLUMNS = (
    "t.id, t.name, t.description, t.input_schema, t.output_schema, t.annotations, "
    "t.item_type, t.server, t.source, t.category"
)
_GROUPABLE = {"server", "source", "item_type", "category"}
#: Filtered counts remembered per process (a search uses a handful of distinct filters).
_COUNT_CACHE = 512


def _row_to_tool(row: Sequence[Any]) -> Tool:
    return Tool(
        id=row[0],
        name=row[1],
        description=row[2],
        input_schema=json.loads(row[3]) if row[3] is not None else None,
        output_schema=json.loads(row[4]) if row[4] is not None else None,
        annotations=json.loads(row[5]),
        item_type=ItemType(row[6]),
        server=row[7],
        source=row[8],
        category=row[9],
    )


def _dumps(value: Any) -> str | None:
    # The same canonical JSON as the SQLite store, so round trips compare equal.
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _check_text(tool: Tool) -> None:
    for field in ("id", "name", "description", "server", "source", "category"):
        value = getattr(tool, field)
        if isinstance(value, str) and "\x00" in value:
            raise StoreError(
                f"tool {tool.id!r}: field {field} contains a NUL character, which PostgreSQL "
                f"text cannot hold; remove it from the catalog"
            )


class PostgresStore(
    PostgresLexicalLeg, PostgresVectorLeg, PostgresSkillTables, PostgresEnrichments
):
    """A :class:`~toolscout.store.base.Store` in a PostgreSQL schema (pgvector required)."""

    #: Each read takes its own pooled connection and runs on the server.
    parallel_reads = True

    def __init__(self, url: str) -> None:
        self._target = parse_url(url)
        self.url = self._target.display
        search_path = prepare_database(self._target)
        self._pool = open_pool(self._target, search_path)
        self._lock_key = "toolscout-write:" + self._target.schema
        self._bulk = False
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}
        cap = self._target.postings_cache
        self._postings = PostingsCache(cap) if cap > 0 else None
        try:
            ident = self.identity()
        except BaseException:
            self._pool.close()
            raise
        self._dim: int | None = ident.dim if ident else None
        warm = self._target.postings_warm
        self._warmer = (
            Warmer(self._pool, self._postings, warm, self.url)
            if self._postings is not None and warm > 0
            else None
        )

    # -- plumbing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """One write transaction holding the schema's write lock; rolled back on any error.

        Raises: StoreError when PostgreSQL fails."""
        with (
            sql_errors("write", self._target),
            self._pool.connection() as conn,
            conn.transaction(),
        ):
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._lock_key,))
            # Every write moves the version that per-process caches key on (count()).
            conn.execute("UPDATE lexical_stats SET version = version + 1")
            yield conn

    def _query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[Any]:
        with sql_errors("query", self._target), self._pool.connection() as conn:
            cur = conn.cursor(binary=binary)
            return list(cur.execute(sql, params).fetchall())

    def get_meta(self, key: str) -> str | None:
        """Raises: StoreError."""
        rows = self._query("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Raises: StoreError."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value),
            )

    # -- identity ---------------------------------------------------------------------------
    def identity(self) -> IndexIdentity | None:
        """The recorded identity, or None before the first bind. Raises: StoreError."""
        raw = self.get_meta("identity")
        if raw is None:
            return None
        data = json.loads(raw)
        return IndexIdentity(data["embedder"], int(data["dim"]), data["analyzer"])

    def bind(self, identity: IndexIdentity) -> None:
        """Raises: ConfigError on a mismatch, StoreError."""
        with self.transaction() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
            if row is not None:
                data = json.loads(row[0])
                current = IndexIdentity(data["embedder"], int(data["dim"]), data["analyzer"])
                if current != identity:
                    raise ConfigError(
                        f"the index at {self.url} was built with embedder {current.embedder!r} "
                        f"(dim {current.dim}, analyzer {current.analyzer}) but this run uses "
                        f"{identity.embedder!r} (dim {identity.dim}, analyzer "
                        f"{identity.analyzer}). Rebuild it with `toolscout index --rebuild "
                        f"PATH...` (or use another schema= in the URL), or configure the "
                        f"original embedder."
                    )
                self._dim = current.dim
                return
            dim = int(identity.dim)
            conn.execute(f"ALTER TABLE tools ADD COLUMN IF NOT EXISTS embedding vector({dim})")
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('identity', %s)",
                (json.dumps(identity.__dict__),),
            )
        self._dim = identity.dim

    def reset(self) -> None:
        """Drop every tool and the recorded identity (used by ``index --rebuild``).

        The lexical running totals are kept, as FTS5 keeps them in the SQLite store."""
        with self.transaction() as conn:
            conn.execute("TRUNCATE postings, term_stats, tools")
            conn.execute("DELETE FROM tool_skills")
            conn.execute("DELETE FROM tool_classification")
            # Skill vectors come from the old model's space: recomputed after the rebuild.
            conn.execute(
                "UPDATE skills SET vector = NULL, profile_vector = NULL, profile_hash = NULL"
            )
            conn.execute("ALTER TABLE tools DROP COLUMN IF EXISTS embedding")
            # A new epoch: every process drops its copies of posting lists.
            conn.execute(
                "UPDATE lexical_stats SET live_rows = 0, "
                "epoch = md5(random()::text || clock_timestamp()::text)"
            )
            conn.execute("DELETE FROM meta WHERE key = 'identity'")
        self._dim = None

    # -- writes -----------------------------------------------------------------------------
    def _tool_row(self, entry: IndexEntry, doc_len: int) -> tuple[Any, ...]:
        tool = entry.tool
        vector = np.asarray(entry.vector, dtype=np.float32)
        if vector.shape != (self._dim,):
            raise StoreError(
                f"tool {tool.id!r}: vector has shape {vector.shape}, index wants {self._dim}"
            )
        _check_text(tool)
        return (
            tool.id,
            tool.name,
            tool.description,
            _dumps(tool.input_schema),
            _dumps(tool.output_schema),
            json.dumps(tool.annotations, ensure_ascii=False, sort_keys=True),
            tool.item_type.value,
            tool.server,
            tool.source,
            tool.category,
            tool.content_hash,
            entry.text_hash,
            doc_len,
            vector,
        )

    def upsert(self, entries: Sequence[IndexEntry]) -> None:
        """Raises: StoreError (no identity bound, wrong vector shape, PostgreSQL failure)."""
        if not entries:
            return
        if self._bound_dim() is None:
            raise StoreError("the index has no embedder bound yet; call bind() first")
        latest: dict[str, tuple[tuple[Any, ...], dict[str, list[int]]]] = {}
        tokens = 0
        for entry in entries:
            doc_len, freqs = document_terms(entry.fields)
            tokens += doc_len
            latest[entry.tool.id] = (self._tool_row(entry, doc_len), freqs)
        ids = list(latest)
        with self.transaction() as conn:
            existing = conn.execute(
                "SELECT count(*) FROM tools WHERE id = ANY(%s)", (ids,)
            ).fetchone()
            cur = conn.cursor()
            docs: dict[str, int] = {}
            cur.executemany(
                "INSERT INTO tools(id, name, description, input_schema, output_schema, "
                "annotations, item_type, server, source, category, content_hash, text_hash, "
                "doc_len, embedding, lex_version) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%b,"
                "(SELECT version FROM lexical_stats)) "
                "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, "
                "description = EXCLUDED.description, input_schema = EXCLUDED.input_schema, "
                "output_schema = EXCLUDED.output_schema, annotations = EXCLUDED.annotations, "
                "item_type = EXCLUDED.item_type, server = EXCLUDED.server, "
                "source = EXCLUDED.source, category = EXCLUDED.category, "
                "content_hash = EXCLUDED.content_hash, text_hash = EXCLUDED.text_hash, "
                "doc_len = EXCLUDED.doc_len, embedding = EXCLUDED.embedding, "
                "lex_version = EXCLUDED.lex_version RETURNING id, doc",
                [row for row, _ in latest.values()],
                returning=True,
            )
            while True:  # one result set per row; an updated tool keeps its doc
                for tool_id, doc in cur.fetchall():
                    docs[tool_id] = int(doc)
                if not cur.nextset():
                    break
            forget_postings(conn, ids)
            df: dict[str, int] = {}
            with cur.copy(COPY_POSTINGS) as copy:
                for row, freqs in latest.values():
                    doc = docs[row[0]]
                    for term, tf in freqs.items():
                        copy.write_row((term, doc, row[12], *tf))
                        df[term] = df.get(term, 0) + 1
            add_postings(conn, df)
            added = len(ids) - int(existing[0] if existing else 0)
            # Every write counts, as every FTS5 insert does (see postgres_lexical).
            live = conn.execute(
                "UPDATE lexical_stats SET rows_indexed = rows_indexed + %s, "
                "tokens_indexed = tokens_indexed + %s, live_rows = live_rows + %s "
                "RETURNING live_rows",
                (len(entries), tokens, added),
            ).fetchone()
            if not self._bulk and live is not None and int(live[0]) > self._target.exact_below:
                self._ensure_vector_index(conn)

    def delete(self, ids: Sequence[str]) -> int:
        """Raises: StoreError."""
        if not ids:
            return 0
        wanted = list(dict.fromkeys(ids))
        with self.transaction() as conn:
            forget_postings(conn, wanted)
            log_gone_docs(conn, wanted)
            gone = conn.execute(
                "DELETE FROM tools WHERE id = ANY(%s) RETURNING id", (wanted,)
            ).fetchall()
            conn.execute("DELETE FROM tool_skills WHERE tool_id = ANY(%s)", (wanted,))
            conn.execute("DELETE FROM tool_classification WHERE tool_id = ANY(%s)", (wanted,))
            conn.execute("UPDATE lexical_stats SET live_rows = live_rows - %s", (len(gone),))
        return len(gone)

    # -- reads ------------------------------------------------------------------------------
    def get(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound, StoreError."""
        rows = self._query(f"SELECT {_TOOL_COLUMNS} FROM tools t WHERE t.id = %s", (tool_id,))
        if not rows:
            raise ToolNotFound(tool_id)
        return _row_to_tool(rows[0])

    def get_many(self, ids: Sequence[str]) -> dict[str, Tool]:
        """Tools by id (unknown ids are left out). Raises: StoreError."""
        rows = self._query(
            f"SELECT {_TOOL_COLUMNS} FROM tools t WHERE t.id = ANY(%s)", (list(ids),)
        )
        return {r[0]: _row_to_tool(r) for r in rows}

    def hashes(self, filters: Filters | None = None) -> dict[str, tuple[str, str]]:
        """Raises: StoreError."""
        cond, params = where_sql(filters)
        rows = self._query(
            f"SELECT t.id, t.content_hash, t.text_hash FROM tools t WHERE {cond}", params
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def list_tools(
        self, filters: Filters | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[Tool]:
        """Tools in id order. Raises: StoreError."""
        cond, params = where_sql(filters)
        rows = self._query(
            f"SELECT {_TOOL_COLUMNS} FROM tools t WHERE {cond} ORDER BY t.id LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        return [_row_to_tool(r) for r in rows]

    def count(self, filters: Filters | None = None) -> int:
        """Raises: StoreError.

        The whole catalog's count is the running ``live_rows`` total that every write keeps
        exact; a filtered count is cached per process until the next write by any process
        (``lexical_stats.version``), since a search asks for the same counts again and again
        and ``count(*)`` over 100k rows costs milliseconds."""
        cond, params = where_sql(filters)
        if cond == "true":
            return int(self._query("SELECT live_rows FROM lexical_stats")[0][0])
        key = (cond, repr(params))
        version = int(self._query("SELECT version FROM lexical_stats")[0][0])
        cached = self._counts.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        row = self._query(
            f"SELECT (SELECT version FROM lexical_stats), count(*) FROM tools t WHERE {cond}",
            params,
        )[0]
        if len(self._counts) >= _COUNT_CACHE:
            self._counts.clear()
        self._counts[key] = (int(row[0]), int(row[1]))
        return int(row[1])

    def counts_by(self, column: str) -> dict[str, int]:
        """Raises: ValueError for a column that is not groupable (as the SQLite store)."""
        if column not in _GROUPABLE:
            raise ValueError(f"cannot group by {column!r}")
        rows = self._query(f"SELECT {column}, count(*) FROM tools GROUP BY {column}")
        return {str(r[0]): int(r[1]) for r in rows}

    def data_version(self) -> Hashable | None:
        """The write counter every write transaction bumps (shared by all processes).

        Raises: StoreError."""
        return int(self._query("SELECT version FROM lexical_stats")[0][0])

    def close(self) -> None:
        """Stop preloading postings, close the connection pool."""
        if self._warmer is not None:
            self._warmer.stop()
        self._pool.close()
