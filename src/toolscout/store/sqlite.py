"""The embedded store: one SQLite file with the tools, an FTS5 index and a sqlite-vec table.

Python's own ``sqlite3`` here cannot load extensions, so the connection comes from ``sqlean``
(SQLite 3.50 with extension loading), which loads ``sqlite-vec``.

Vectors are stored durably in a ``vec0`` table. Exact cosine search is answered from an
in-process float32 matrix mirrored from that table: a numpy mat-vec over 10k x 384 takes ~1 ms
where vec0's brute-force scan takes ~5 ms (docs/BENCHMARKS.md). The mirror is reloaded whenever
``PRAGMA data_version`` or this connection's own write counter says the table changed, so other
processes' writes are seen on the next query.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import sqlean
import sqlite_vec
from numpy.typing import NDArray

from toolscout.errors import ConfigError, StoreError, ToolNotFound
from toolscout.models import Filters, ItemType, Scored, Tool
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity
from toolscout.store.migrations.sqlite import MIGRATIONS, SCHEMA_VERSION
from toolscout.store.sqlite_enrich import SQLiteEnrichments
from toolscout.store.sqlite_lexical import SQLiteLexical, where_clause
from toolscout.store.sqlite_skills import SQLiteSkillTables

_TOOL_COLUMNS = (
    "t.id, t.name, t.description, t.input_schema, t.output_schema, t.annotations, "
    "t.item_type, t.server, t.source, t.category"
)
_GROUPABLE = {"server", "source", "item_type", "category"}


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
    # Key order kept: a schema's property order is how its author presents the parameters.
    return None if value is None else json.dumps(value, ensure_ascii=False)


class SQLiteStore(SQLiteLexical, SQLiteSkillTables, SQLiteEnrichments):
    """A :class:`~toolscout.store.base.Store` in one SQLite file (WAL mode)."""

    #: One connection behind one lock, work done in this process: concurrent legs only add
    #: thread hand-offs (measured: +1 ms CPU per search at 10k, no faster).
    parallel_reads = False

    def __init__(self, url: str) -> None:
        self.url = url
        path = url.split("sqlite:///", 1)[1] if url.startswith("sqlite:///") else url
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlean.connect(str(self.path), check_same_thread=False, isolation_level=None)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute("PRAGMA foreign_keys=ON")
        except (sqlean.Error, OSError) as exc:
            raise StoreError(f"cannot open SQLite index at {self.path}: {exc}") from exc
        self._conn = conn
        self._lock = threading.RLock()
        self._writes = 0
        self._counts: dict[Filters | None, int] = {}
        self._counts_version: Hashable | None = None
        self._counts_lock = threading.Lock()
        self._mirror_key: tuple[int, int] | None = None
        self._mirror_ids: list[str] = []
        self._mirror_rowids: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._mirror: NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._dim: int | None = None
        self._migrate()
        ident = self.identity()
        self._dim = ident.dim if ident else None

    # -- plumbing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error).

        Raises: StoreError when SQLite fails."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlean.Error as exc:
                raise StoreError(f"cannot start a write on {self.path}: {exc}") from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlean.Error):
                    raise StoreError(f"write to {self.path} failed: {exc}") from exc
                raise
            finally:
                self._writes += 1

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, params).fetchall())
            except sqlean.Error as exc:
                raise StoreError(f"query on {self.path} failed: {exc}") from exc

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {current}, newer than this toolscout "
                    f"({SCHEMA_VERSION}); upgrade toolscout"
                )
            for version, sql in MIGRATIONS:
                if version > current:
                    for statement in (s for s in sql.split(";") if s.strip()):
                        conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    # -- identity ---------------------------------------------------------------------------
    def identity(self) -> IndexIdentity | None:
        raw = self.get_meta("identity")
        if raw is None:
            return None
        data = json.loads(raw)
        return IndexIdentity(data["embedder"], int(data["dim"]), data["analyzer"])

    def bind(self, identity: IndexIdentity) -> None:
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
        with self.transaction() as conn:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS tools_vec USING vec0("
                f"embedding float[{int(identity.dim)}] distance_metric=cosine)"
            )
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('identity', ?)",
                (json.dumps(identity.__dict__),),
            )
        self._dim = identity.dim

    def reset(self) -> None:
        """Drop every tool and the recorded identity (used by ``index --rebuild``)."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM tools")
            conn.execute("DELETE FROM tool_skills")
            conn.execute("DELETE FROM tool_classification")
            # Skill vectors come from the old model's space: recomputed after the rebuild.
            conn.execute("UPDATE skills SET vector=NULL, profile_vector=NULL, profile_hash=NULL")
            conn.execute("DELETE FROM tools_fts")
            conn.execute("DROP TABLE IF EXISTS tools_vec")
            conn.execute("DELETE FROM meta WHERE key='identity'")
        self._dim = None

    # -- writes -----------------------------------------------------------------------------
    def upsert(self, entries: Sequence[IndexEntry]) -> None:
        if not entries:
            return
        if self._dim is None:
            raise StoreError("the index has no embedder bound yet; call bind() first")
        with self.transaction() as conn:
            for entry in entries:
                self._write_one(conn, entry)

    def _write_one(self, conn: Any, entry: IndexEntry) -> None:
        tool = entry.tool
        vector = np.asarray(entry.vector, dtype=np.float32)
        if vector.shape != (self._dim,):
            raise StoreError(
                f"tool {tool.id!r}: vector has shape {vector.shape}, index wants {self._dim}"
            )
        row = conn.execute("SELECT rowid FROM tools WHERE id=?", (tool.id,)).fetchone()
        values = (
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
        )
        if row is None:
            cur = conn.execute(
                "INSERT INTO tools(id, name, description, input_schema, output_schema, "
                "annotations, item_type, server, source, category, content_hash, text_hash) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                (tool.id, *values),
            )
            rowid = cur.lastrowid
        else:
            rowid = row[0]
            conn.execute(
                "UPDATE tools SET name=?, description=?, input_schema=?, output_schema=?, "
                "annotations=?, item_type=?, server=?, source=?, category=?, content_hash=?, "
                "text_hash=? WHERE rowid=?",
                (*values, rowid),
            )
            conn.execute("DELETE FROM tools_fts WHERE rowid=?", (rowid,))
            conn.execute("DELETE FROM tools_vec WHERE rowid=?", (rowid,))
        cols = ", ".join(LEXICAL_FIELDS)
        marks = ",".join("?" * (len(LEXICAL_FIELDS) + 1))
        conn.execute(
            f"INSERT INTO tools_fts(rowid, {cols}) VALUES({marks})",
            (rowid, *(entry.fields.get(f, "") for f in LEXICAL_FIELDS)),
        )
        conn.execute(
            "INSERT INTO tools_vec(rowid, embedding) VALUES(?, ?)", (rowid, vector.tobytes())
        )

    def delete(self, ids: Sequence[str]) -> int:
        removed = 0
        with self.transaction() as conn:
            for tool_id in ids:
                row = conn.execute("SELECT rowid FROM tools WHERE id=?", (tool_id,)).fetchone()
                if row is None:
                    continue
                self._delete_rowid(conn, row[0])
                removed += 1
        return removed

    def _delete_rowid(self, conn: Any, rowid: int) -> None:
        for table in ("tool_skills", "tool_classification"):
            conn.execute(
                f"DELETE FROM {table} WHERE tool_id=(SELECT id FROM tools WHERE rowid=?)", (rowid,)
            )
        conn.execute("DELETE FROM tools_fts WHERE rowid=?", (rowid,))
        if self._dim is not None:
            conn.execute("DELETE FROM tools_vec WHERE rowid=?", (rowid,))
        conn.execute("DELETE FROM tools WHERE rowid=?", (rowid,))

    # -- reads ------------------------------------------------------------------------------
    def get(self, tool_id: str) -> Tool:
        rows = self._query(f"SELECT {_TOOL_COLUMNS} FROM tools t WHERE t.id=?", (tool_id,))
        if not rows:
            raise ToolNotFound(tool_id)
        return _row_to_tool(rows[0])

    def get_many(self, ids: Sequence[str]) -> dict[str, Tool]:
        out: dict[str, Tool] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT {_TOOL_COLUMNS} FROM tools t WHERE t.id IN ({marks})", chunk
            )
            out.update((r[0], _row_to_tool(r)) for r in rows)
        return out

    def hashes(self, filters: Filters | None = None) -> dict[str, tuple[str, str]]:
        cond, params = where_clause(filters)
        rows = self._query(
            f"SELECT t.id, t.content_hash, t.text_hash FROM tools t WHERE {cond}", params
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def list_tools(
        self, filters: Filters | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[Tool]:
        cond, params = where_clause(filters)
        rows = self._query(
            f"SELECT {_TOOL_COLUMNS} FROM tools t WHERE {cond} ORDER BY t.id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [_row_to_tool(r) for r in rows]

    def counts_by(self, column: str) -> dict[str, int]:
        if column not in _GROUPABLE:
            raise ValueError(f"cannot group by {column!r}")
        rows = self._query(f"SELECT {column}, count(*) FROM tools GROUP BY {column}")
        return {str(r[0]): int(r[1]) for r in rows}

    def _refresh_mirror(self) -> None:
        version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        key = (version, self._writes)
        if key == self._mirror_key:
            return
        rows = self._conn.execute(
            "SELECT t.rowid, t.id, v.embedding FROM tools t JOIN tools_vec v ON v.rowid = t.rowid "
            "ORDER BY t.rowid"
        ).fetchall()
        dim = self._dim or 0
        self._mirror_rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._mirror_ids = [r[1] for r in rows]
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        self._mirror = matrix.reshape(len(rows), dim) if rows else np.zeros((0, dim), np.float32)
        self._mirror_key = key

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        return self.nearest_many(np.asarray(vector)[None, :], limit=limit, filters=filters)[0]

    def nearest_many(
        self, vectors: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[list[Scored]]:
        """One matrix product for all rows; the filter's SQL runs once, as a mask."""
        queries = np.asarray(vectors, dtype=np.float32)
        if self._dim is None:
            return [[] for _ in queries]
        with self._lock:
            try:
                self._refresh_mirror()
            except sqlean.Error as exc:
                raise StoreError(f"cannot read vectors from {self.path}: {exc}") from exc
            matrix, ids, rowids = self._mirror, self._mirror_ids, self._mirror_rowids
        if len(ids) == 0:
            return [[] for _ in queries]
        scores = queries @ matrix.T
        if filters is not None and not filters.is_empty():
            cond, params = where_clause(filters)
            allowed = np.array(
                [r[0] for r in self._query(f"SELECT t.rowid FROM tools t WHERE {cond}", params)],
                dtype=np.int64,
            )
            mask = np.isin(rowids, allowed)
            scores = np.where(mask[None, :], scores, -np.inf)
            limit = min(limit, int(mask.sum()))
        if limit <= 0:
            return [[] for _ in queries]
        k = min(limit, len(ids))
        out: list[list[Scored]] = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
            ranked = sorted(((float(row[i]), ids[i]) for i in top), key=lambda p: (-p[0], p[1]))
            out.append([Scored(i, s) for s, i in ranked if s != -np.inf])
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        out: dict[str, NDArray[np.float32]] = {}
        if self._dim is None:
            return out
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._query(
                f"SELECT t.id, v.embedding FROM tools t JOIN tools_vec v ON v.rowid=t.rowid "
                f"WHERE t.id IN ({marks})",
                chunk,
            )
            out.update((r[0], np.frombuffer(r[1], dtype=np.float32).copy()) for r in rows)
        return out

    def data_version(self) -> Hashable | None:
        """SQLite's ``data_version`` (bumped by other connections' commits) plus this
        connection's own write count: together they change with every write to the file."""
        with self._lock:
            try:
                row = self._conn.execute("PRAGMA data_version").fetchone()
            except sqlean.Error as exc:
                raise StoreError(f"cannot read the data version of {self.path}: {exc}") from exc
            return (int(row[0]), self._writes)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
