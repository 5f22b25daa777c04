"""The server store: PostgreSQL with pgvector, for many toolscout processes sharing one index.

It answers every :class:`~toolscout.store.base.Store` call the way the embedded SQLite store does
(tests/contract proves it on one suite and a congruence test):

* lexical leg: FTS5's bm25 over a ``postings`` table, computed by each process from its own
  copies of the posting lists a query needs, checked against the table's versions on every
  query, or in SQL (all of it behind :class:`~toolscout.store.postgres.lexical.PostgresLexical`);
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
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError, StoreError
from toolscout.models import Filters, Scored, Tool
from toolscout.store.base import IndexEntry, IndexIdentity, IndexState
from toolscout.store.postgres.conn import open_pool, parse_url, prepare_database, where_sql
from toolscout.store.postgres.database import PostgresDatabase
from toolscout.store.postgres.lexical import PostgresLexical, document_terms
from toolscout.store.postgres.runs import RunLock, replace_schema, staging_url
from toolscout.store.postgres.vector.base import VectorLeg
from toolscout.store.postgres.vector.pgvector import PgVectorLeg
from toolscout.store.sql import SQLStore

#: Filtered counts remembered per process (a search uses a handful of distinct filters).
_COUNT_CACHE = 512


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


class PostgresStore(SQLStore):
    """A :class:`~toolscout.store.base.Store` in a PostgreSQL schema (pgvector required),
    composed of its database, the shared SQL tables, the lexical leg and the vector leg."""

    #: Each read takes its own pooled connection and runs on the server.
    parallel_reads = True

    def __init__(self, url: str) -> None:
        """Raises: StoreError."""
        self._target = parse_url(url)
        self._given_url = url  # with its password: a rebuild's staging URL is derived from it
        self.url = self._target.display
        search_path = prepare_database(self._target)
        self.database = PostgresDatabase(self._target, open_pool(self._target, search_path))
        super().__init__(self.database)
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}
        self.vector_leg: VectorLeg
        if self._target.vectors:
            from toolscout.store.postgres.vector.qdrant import QdrantVectorLeg, parse_qdrant_url

            self.vector_leg = QdrantVectorLeg(
                self.database,
                self.identity,
                parse_qdrant_url(self._target.vectors),
                skill_source=self.skills.stored_vectors,
            )
        else:
            self.vector_leg = PgVectorLeg(self.database, self.identity)
        try:
            ident = self.identity()
        except BaseException:
            self.database.close()
            raise
        self.vector_leg.dim = ident.dim if ident else None
        self.skills.mirror = self.vector_leg
        self.lexical_leg = PostgresLexical(self.database)
        self._runs = RunLock(self.database)

    # -- identity ---------------------------------------------------------------------------
    def bind(self, identity: IndexIdentity) -> None:
        """Check ``identity`` against the recorded one (reads only), or record it on a new
        index. Raises: ConfigError on a mismatch, StoreError."""
        if self.identity() is not None:
            self._check_identity(identity)
            return
        with self.database.transaction() as conn:
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
                self.vector_leg.dim = current.dim
                self._mirror_bound()
                return
            dim = int(identity.dim)
            conn.execute(f"ALTER TABLE tools ADD COLUMN IF NOT EXISTS embedding vector({dim})")
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('identity', %s)",
                (json.dumps(identity.__dict__),),
            )
        self.vector_leg.dim = identity.dim
        self._mirror_bound()

    def _mirror_bound(self) -> None:
        """A leg outside PostgreSQL prepares for the dimension once one is bound."""
        if self.vector_leg.dim is not None:
            self.vector_leg.bind(self.vector_leg.dim)

    def _check_identity(self, identity: IndexIdentity) -> None:
        current = self.identity()
        if current is not None and current != identity:
            raise ConfigError(
                f"the index at {self.url} was built with embedder {current.embedder!r} "
                f"(dim {current.dim}, analyzer {current.analyzer}) but this run uses "
                f"{identity.embedder!r} (dim {identity.dim}, analyzer {identity.analyzer}). "
                f"Rebuild it with `toolscout index --rebuild PATH...` (or use another schema= "
                f"in the URL), or configure the original embedder."
            )
        self.vector_leg.dim = identity.dim
        self._mirror_bound()

    # -- whole runs -------------------------------------------------------------------------
    def writer_lock(self) -> AbstractContextManager[None]:
        """See :class:`~toolscout.store.postgres.runs.RunLock`. Raises: StoreError."""
        return self._runs.held()

    def staging(self) -> str:
        """Raises:
        ConfigError: the vector leg is in Qdrant, whose collections cannot be built beside
            the live ones and swapped in one step with the schema (nothing is changed).
        StoreError."""
        if self.vector_leg.elsewhere is not None:
            raise ConfigError(
                f"index --rebuild cannot build beside the live index when its vectors are in "
                f"Qdrant ({self.vector_leg.elsewhere}): a Qdrant collection cannot be swapped "
                f"with the PostgreSQL schema in one step. The index was left as it was. Build "
                f"the new index under another schema= and Qdrant collection and point "
                f"TOOLSCOUT_DB and TOOLSCOUT_VECTORS at it when it is done, or run "
                f"`toolscout index` without --rebuild."
            )
        return staging_url(self.database, self._given_url)

    def replace_with(self, staging: str) -> None:
        """Raises: StoreError."""
        replace_schema(self.database, staging)
        self._counts.clear()
        ident = self.identity()
        self.vector_leg.dim = ident.dim if ident else None

    def reset(self) -> None:
        """Drop every tool and the recorded identity (used by ``index --rebuild``).

        The lexical running totals are kept, as FTS5 keeps them in the SQLite store."""
        with self.database.transaction() as conn:
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
        self.vector_leg.dim = None
        self.vector_leg.reset()

    def bulk(self) -> AbstractContextManager[None]:
        """Load many tools at once (the HNSW index is rebuilt once at the end).

        Raises: StoreError."""
        return self.vector_leg.bulk()

    # -- writes -----------------------------------------------------------------------------
    def _tool_row(self, entry: IndexEntry, doc_len: int) -> tuple[Any, ...]:
        tool = entry.tool
        vector = np.asarray(entry.vector, dtype=np.float32)
        dim = self.vector_leg.dim
        if vector.shape != (dim,):
            raise StoreError(
                f"tool {tool.id!r}: vector has shape {vector.shape}, index wants {dim}"
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
        if self.vector_leg.bound_dim() is None:
            raise StoreError("the index has no embedder bound yet; call bind() first")
        latest: dict[str, tuple[tuple[Any, ...], dict[str, list[int]]]] = {}
        tokens = 0
        for entry in entries:
            doc_len, freqs = document_terms(entry.fields)
            tokens += doc_len
            latest[entry.tool.id] = (self._tool_row(entry, doc_len), freqs)
        ids = list(latest)
        with self.database.transaction() as conn:
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
            self.lexical_leg.forget(conn, ids)
            self.lexical_leg.add(
                conn, [(docs[row[0]], row[12], freqs) for row, freqs in latest.values()]
            )
            added = len(ids) - int(existing[0] if existing else 0)
            # Every write counts, as every FTS5 insert does (see postgres_lexical).
            live = conn.execute(
                "UPDATE lexical_stats SET rows_indexed = rows_indexed + %s, "
                "tokens_indexed = tokens_indexed + %s, live_rows = live_rows + %s "
                "RETURNING live_rows",
                (len(entries), tokens, added),
            ).fetchone()
            big = live is not None and int(live[0]) > self._target.exact_below
            if big and not self.vector_leg.in_bulk:
                self.vector_leg.ensure_index(conn)
        self.vector_leg.written(ids)

    def delete(self, ids: Sequence[str]) -> int:
        """Raises: StoreError."""
        if not ids:
            return 0
        wanted = list(dict.fromkeys(ids))
        with self.database.transaction() as conn:
            self.lexical_leg.forget_deleted(conn, wanted)
            gone = conn.execute(
                "DELETE FROM tools WHERE id = ANY(%s) RETURNING id", (wanted,)
            ).fetchall()
            conn.execute("DELETE FROM tool_skills WHERE tool_id = ANY(%s)", (wanted,))
            conn.execute("DELETE FROM tool_classification WHERE tool_id = ANY(%s)", (wanted,))
            conn.execute("UPDATE lexical_stats SET live_rows = live_rows - %s", (len(gone),))
        self.vector_leg.written(wanted)
        return len(gone)

    # -- reads ------------------------------------------------------------------------------
    def count(self, filters: Filters | None = None, *, at: Hashable | None = None) -> int:
        """Raises: StoreError.

        The whole catalog's count is the running ``live_rows`` total that every write keeps
        exact; a filtered count is cached per process until the next write by any process
        (``lexical_stats.version``), since a search asks for the same counts again and again
        and ``count(*)`` over 100k rows costs milliseconds."""
        cond, params = where_sql(filters)
        if cond == "true":
            return int(self.database.query("SELECT live_rows FROM lexical_stats")[0][0])
        key = (cond, repr(params))
        version = at if at is not None else self.database.version()
        cached = self._counts.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        row = self.database.query(
            f"SELECT (SELECT version FROM lexical_stats), count(*) FROM tools t WHERE {cond}",
            params,
        )[0]
        if len(self._counts) >= _COUNT_CACHE:
            self._counts.clear()
        self._counts[key] = (int(row[0]), int(row[1]))
        return int(row[1])

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
        state: IndexState | None = None,
    ) -> list[Scored]:
        """``state`` is not needed: the leg checks its posting-list copies inside the read
        snapshot it scores in. Raises: ValueError (weights of the wrong length), StoreError."""
        return self.lexical_leg.lexical(tokens, limit=limit, filters=filters, weights=weights)

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Raises: StoreError (wrong dimension, PostgreSQL failure)."""
        return self.vector_leg.nearest(vector, limit=limit, filters=filters)

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        state: IndexState | None = None,
    ) -> list[list[Scored]]:
        """Raises: StoreError (wrong dimension, PostgreSQL failure)."""
        return self.vector_leg.nearest_many(vectors, limit=limit, filters=filters, state=state)

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Raises: StoreError."""
        return self.vector_leg.vectors(ids)

    def state(self) -> IndexState:
        """Raises: StoreError."""
        row = self.database.query("SELECT version, live_rows FROM lexical_stats")[0]
        return IndexState(int(row[0]), int(row[1]))

    def close(self) -> None:
        """Stop preloading postings, close the connection pool (and the Qdrant client)."""
        self.lexical_leg.close()
        self.vector_leg.close()
        self.database.close()
