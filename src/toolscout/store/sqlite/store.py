"""SQLiteStore: the embedded :class:`~toolscout.store.base.Store`, composed of its database,
the shared SQL tables (:class:`~toolscout.store.sql.SQLStore`), the lexical leg (FTS5, and an
in-memory posting index above ``lex_min_tools`` tools) and the vector leg (the exact mirror,
and a Qdrant Edge shard above ``ann_min_tools`` tools).

URL options (``sqlite:///PATH?mode=ro&ann_min_tools=50000``): ``mode=ro`` opens the index
read-only; ``ann_min_tools`` is the size from which the HNSW shard answers (0: always; see
:mod:`toolscout.store.sqlite.ann.leg`); ``ann_ef`` the shard's search breadth;
``lex_min_tools`` the size from which the posting index answers (see
:mod:`toolscout.store.sqlite.lex.leg`).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError, StoreError
from toolscout.models import Filters, Scored
from toolscout.store.base import IndexEntry, IndexIdentity, IndexState
from toolscout.store.sql import SQLStore
from toolscout.store.sqlite.ann.leg import DEFAULT_MIN_TOOLS, AnnVectorLeg
from toolscout.store.sqlite.ann.shard import GraphParams
from toolscout.store.sqlite.database import SQLiteDatabase
from toolscout.store.sqlite.lex.leg import DEFAULT_MIN_TOOLS as LEX_MIN_TOOLS
from toolscout.store.sqlite.lex.leg import LexicalLeg
from toolscout.store.sqlite.lexical import FTS5Lexical
from toolscout.store.sqlite.runs import RunLock, replace_from, staging_path
from toolscout.store.sqlite.vectors import VectorMirror
from toolscout.store.sqlite.writes import write_entries

#: Appended to a path (``index.db?mode=ro``), opens the index read-only.
READ_ONLY_SUFFIX = "?mode=ro"
_OPTIONS = ("mode", "ann_min_tools", "ann_ef", "lex_min_tools")
#: Change-log entries kept; a shard further behind is rebuilt from the rows.
LOG_KEEP = 500_000


def _options(url: str, path: str) -> tuple[str, dict[str, str]]:
    """The path and its options. Raises: ConfigError naming an unknown or bad option."""
    if "?" not in path:
        return path, {}
    path, query = path.split("?", 1)
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ConfigError(
            f"db: unknown option(s) {', '.join(unknown)} in {url!r}; the SQLite store takes "
            f"{', '.join(_OPTIONS)}"
        )
    if options.get("mode", "ro") != "ro":
        raise ConfigError(f"db: mode={options['mode']!r} in {url!r}; the only mode is ro")
    for key in ("ann_min_tools", "ann_ef", "lex_min_tools"):
        if key in options and not options[key].isdigit():
            raise ConfigError(f"db: {key}={options[key]!r} in {url!r} must be a whole number")
    return path, options


class SQLiteStore(SQLStore):
    """A :class:`~toolscout.store.base.Store` in one SQLite file (WAL mode)."""

    #: One connection behind one lock, work done in this process: concurrent legs only add
    #: thread hand-offs (measured: +1 ms CPU per search at 10k, no faster).
    parallel_reads = False

    def __init__(self, url: str) -> None:
        """``PATH?mode=ro`` opens the index read-only. Raises: StoreError."""
        self.url = url
        path = url.split("sqlite:///", 1)[1] if url.startswith("sqlite:///") else url
        path, options = _options(url, path)
        self.read_only = options.get("mode") == "ro"
        self.path = Path(path)
        self.database = SQLiteDatabase(self.path, read_only=self.read_only)
        self._runs = RunLock(self.database)
        super().__init__(self.database)
        self.lexical_leg = FTS5Lexical(self.database)
        self.lex = LexicalLeg(
            self.database,
            self.lexical_leg,
            min_tools=int(options.get("lex_min_tools", LEX_MIN_TOOLS)),
        )
        self.vector_leg = VectorMirror(self.database)
        graph = GraphParams()
        if "ann_ef" in options:
            graph = replace(graph, ef=int(options["ann_ef"]))
        self.ann = AnnVectorLeg(
            self.database,
            self.vector_leg,
            min_tools=int(options.get("ann_min_tools", DEFAULT_MIN_TOOLS)),
            graph=graph,
        )
        ident = self.identity()
        self.vector_leg.dim = ident.dim if ident else None

    # -- identity ---------------------------------------------------------------------------
    def bind(self, identity: IndexIdentity) -> None:
        """Raises: ConfigError on a mismatch, StoreError."""
        current = self.identity()
        if current is not None:
            if current != identity:
                raise ConfigError(
                    f"the index at {self.path} was built with embedder {current.embedder!r} "
                    f"(dim {current.dim}, analyzer {current.analyzer}) but this run uses "
                    f"{identity.embedder!r} (dim {identity.dim}, analyzer {identity.analyzer}). "
                    f"Rebuild it with `toolscout index --rebuild PATH...` (or point --db at a "
                    f"new file), or configure the original embedder."
                )
            return
        with self.database.transaction() as conn:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS tools_vec USING vec0("
                f"embedding float[{int(identity.dim)}] distance_metric=cosine)"
            )
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('identity', ?)",
                (json.dumps(identity.__dict__),),
            )
        self.vector_leg.dim = identity.dim

    # -- whole runs -------------------------------------------------------------------------
    def writer_lock(self) -> AbstractContextManager[None]:
        """See :class:`~toolscout.store.sqlite.runs.RunLock`. Raises: StoreError."""
        return self._runs.held()

    def staging(self) -> str:
        """Raises: StoreError."""
        return staging_path(self.database)

    def replace_with(self, staging: str) -> None:
        """Raises: StoreError."""
        replace_from(self.database, staging)
        self.ann.reset()
        self.lex.reset()
        ident = self.identity()
        self.vector_leg.dim = ident.dim if ident else None

    def reset(self) -> None:
        """Drop every tool and the recorded identity (used by ``index --rebuild``).

        Raises: StoreError."""
        with self.database.transaction() as conn:
            conn.execute("DELETE FROM tools")
            conn.execute("DELETE FROM tool_skills")
            conn.execute("DELETE FROM tool_classification")
            # Skill vectors come from the old model's space: recomputed after the rebuild.
            conn.execute("UPDATE skills SET vector=NULL, profile_vector=NULL, profile_hash=NULL")
            conn.execute("DELETE FROM tools_fts")
            conn.execute("DELETE FROM tools_terms")
            conn.execute("DROP TABLE IF EXISTS tools_vec")
            conn.execute("DELETE FROM meta WHERE key='identity'")
            conn.execute("DELETE FROM tools_changes")
            conn.execute(
                "UPDATE meta SET value=lower(hex(randomblob(16))) WHERE key='vectors_epoch'"
            )
        self.vector_leg.dim = None
        self.ann.reset()
        self.lex.reset()

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Nothing to defer: FTS5 and vec0 upkeep per row is already cheap."""
        yield

    # -- writes -----------------------------------------------------------------------------
    def upsert(self, entries: Sequence[IndexEntry]) -> None:
        """Raises: StoreError (no identity bound, wrong vector shape, SQLite failure)."""
        if not entries:
            return
        if self.vector_leg.dim is None:
            raise StoreError("the index has no embedder bound yet; call bind() first")
        with self.database.transaction() as conn:
            write_entries(conn, entries, self.vector_leg.dim)
            _prune_log(conn)
        self.ann.written()
        self.lex.written()

    def delete(self, ids: Sequence[str]) -> int:
        """Raises: StoreError."""
        removed = 0
        with self.database.transaction() as conn:
            for tool_id in ids:
                row = conn.execute("SELECT rowid FROM tools WHERE id=?", (tool_id,)).fetchone()
                if row is None:
                    continue
                self._delete_rowid(conn, row[0])
                removed += 1
            _prune_log(conn)
        self.ann.written()
        self.lex.written()
        return removed

    def _delete_rowid(self, conn: Any, rowid: int) -> None:
        for table in ("tool_skills", "tool_classification"):
            conn.execute(
                f"DELETE FROM {table} WHERE tool_id=(SELECT id FROM tools WHERE rowid=?)", (rowid,)
            )
        conn.execute("DELETE FROM tools_fts WHERE rowid=?", (rowid,))
        conn.execute("DELETE FROM tools_terms WHERE rowid=?", (rowid,))
        if self.vector_leg.dim is not None:
            conn.execute("DELETE FROM tools_vec WHERE rowid=?", (rowid,))
        conn.execute("DELETE FROM tools WHERE rowid=?", (rowid,))

    # -- retrieval legs and counts ----------------------------------------------------------
    def count(self, filters: Filters | None = None, *, at: Hashable | None = None) -> int:
        """Raises: StoreError."""
        return self.lexical_leg.count(filters, at=at)

    def state(self) -> IndexState:
        """Raises: StoreError."""
        version = self.database.version()
        return IndexState(version, self.lexical_leg.count(None, at=version))

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
        state: IndexState | None = None,
    ) -> list[Scored]:
        """Raises: ValueError (weights of the wrong length), StoreError."""
        at = state.version if state is not None else None
        return self.lex.lexical(tokens, limit=limit, filters=filters, weights=weights, at=at)

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Raises: StoreError."""
        rows = np.asarray(vector)[None, :]
        return self.ann.nearest_many(rows, limit=limit, filters=filters)[0]

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        state: IndexState | None = None,
    ) -> list[list[Scored]]:
        """Raises: StoreError."""
        at = state.version if state is not None else None
        return self.ann.nearest_many(vectors, limit=limit, filters=filters, at=at)

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Raises: StoreError."""
        return self.vector_leg.vectors(ids)

    def close(self) -> None:
        self.lex.close()
        self.ann.close()
        self.database.close()


def _prune_log(conn: Any) -> None:
    """Keep the change log bounded (a shard behind the kept part is rebuilt)."""
    conn.execute(
        "DELETE FROM tools_changes WHERE seq <= (SELECT max(seq) FROM tools_changes) - ?",
        (LOG_KEEP,),
    )
