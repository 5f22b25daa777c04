"""Connecting to PostgreSQL: URL options, the first connection (extension, schema, migrations),
the connection pool, pgvector's binary wire format, filters as SQL, and psycopg errors as
StoreErrors.

Store options ride on the URL's query string and are removed before libpq sees it::

    postgresql://user:pass@host:5432/db?schema=toolscout&pool_max=10&statement_timeout_ms=30000

``schema`` keeps toolscout's tables out of the database's ``public`` schema (several indexes can
share one database); ``ef_search`` and ``exact_below`` tune the vector leg (see
``toolscout.store.postgres``).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout

from toolscout.errors import StoreError
from toolscout.models import Filters
from toolscout.store.postgres.migrations import MIGRATIONS, SCHEMA_VERSION
from toolscout.store.sql.dialect import POSTGRES, where

Conn = psycopg.Connection[tuple[Any, ...]]

_INT_OPTIONS = {
    "pool_min": 1,
    "pool_max": 10,
    "statement_timeout_ms": 30_000,
    # The most HNSW search breadth used; a search uses one per hundred tools within [400, this].
    # recall@10 vs exact at 100k near-duplicate-heavy tools, half-precision graph: 0.961 at
    # 400, 0.979 at 800, 0.9885 at 1000 (pgvector's maximum) for short queries, in 9 ms
    # (docs/BENCHMARKS.md section 7); the float32 graph needed 13 ms at 800 for 0.9835.
    "ef_search": 1000,
    "exact_below": 2_000,
    # Postings each process keeps as numpy arrays for BM25 (28 bytes each; 0: score in SQL).
    # 2M covers a 100k-tool catalog (store/postgres/lexical/postings.py).
    "postings_cache": 2_000_000,
    # Postings of the most common terms each process reads into that cache in the background
    # when it opens the store (0: none; lists are then read on first use, which makes a fresh
    # process's first searches slower: docs/BENCHMARKS.md section 7).
    "postings_warm": 0,
}


@dataclass(frozen=True)
class PgTarget:
    """Where and how to connect: libpq conninfo, the display URL (no password), options."""

    conninfo: str
    display: str
    schema: str
    pool_min: int
    pool_max: int
    statement_timeout_ms: int
    ef_search: int
    exact_below: int
    postings_cache: int
    postings_warm: int
    #: A ``qdrant://`` URL when Qdrant holds the vector leg (``store/postgres/vector/qdrant``).
    vectors: str | None = None


def parse_url(url: str) -> PgTarget:
    """Split a ``postgresql://`` URL into libpq's part and toolscout's options.

    Raises: StoreError naming a malformed option.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    mine = {k: v for k, v in query if k in _INT_OPTIONS or k in ("schema", "vectors")}
    rest = [(k, v) for k, v in query if k not in mine]
    if not any(k == "connect_timeout" for k, _ in rest):
        rest.append(("connect_timeout", "10"))
    values: dict[str, int] = {}
    for key, default in _INT_OPTIONS.items():
        raw = mine.get(key)
        try:
            values[key] = default if raw is None else int(raw)
        except ValueError:
            raise StoreError(f"db: option {key}={raw!r} must be an integer") from None
        if values[key] < 0:
            raise StoreError(f"db: option {key} must not be negative")
    schema = mine.get("schema", "toolscout")
    if not schema or not schema.replace("_", "").isalnum():
        raise StoreError(f"db: option schema={schema!r} must be letters, digits and _")
    scheme = "postgresql"
    conninfo = urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), ""))
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(":" + parts.password + "@", ":***@", 1)
    display = urlunsplit((scheme, netloc, parts.path, parts.query, ""))
    return PgTarget(conninfo, display, schema, **values, vectors=mine.get("vectors") or None)


@contextmanager
def sql_errors(what: str, target: PgTarget) -> Iterator[None]:
    """Turn psycopg and pool failures into StoreErrors that say what was being done.

    Raises: StoreError.
    """
    try:
        yield
    except pg_errors.QueryCanceled as exc:
        raise StoreError(
            f"{what} on {target.display} timed out after {target.statement_timeout_ms} ms "
            f"(statement_timeout_ms in the URL raises the limit): {exc}"
        ) from exc
    except PoolTimeout as exc:
        raise StoreError(
            f"{what}: no connection to PostgreSQL at {target.display} became free in time "
            f"(server down, or raise pool_max in the URL): {exc}"
        ) from exc
    except psycopg.OperationalError as exc:
        raise StoreError(f"{what}: PostgreSQL at {target.display} is unreachable: {exc}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"{what} on {target.display} failed: {exc}") from exc


def where_sql(filters: Filters | None, alias: str = "t") -> tuple[str, list[Any]]:
    """SQL condition (``%s`` placeholders) restricting tools to ``filters``; 'true' when empty."""
    return where(filters, POSTGRES, alias)


# -- pgvector binary format: uint16 dim, uint16 unused, dim big-endian float32 ------------------
class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        arr = np.asarray(obj, dtype=">f4").reshape(-1)
        return struct.pack(">HH", arr.shape[0], 0) + arr.tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> NDArray[np.float32]:
        raw = bytes(data)
        dim = struct.unpack_from(">H", raw)[0]
        return np.frombuffer(raw, dtype=">f4", count=dim, offset=4).astype(np.float32)


def register_vector(conn: Conn) -> None:
    """Send numpy arrays as pgvector values (binary) and load vectors as float32 arrays."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the vector type is not visible; is the vector extension enabled?")
    dumper = type("PgVectorDumper", (_VectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(info.oid, _VectorLoader)


# -- first connection: extension, schema, migrations ------------------------------------------
def connect_once(target: PgTarget) -> Conn:
    """One direct connection, so an unreachable server gets libpq's own reason.

    Raises: StoreError.
    """
    try:
        return psycopg.connect(target.conninfo, autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to PostgreSQL at {target.display}: {str(exc).strip()}. "
            f"Check the URL and that the server is running and accepts connections."
        ) from exc


#: The HNSW index is built over ``halfvec`` (vector/pgvector.py), new in pgvector 0.7.
MIN_PGVECTOR = (0, 7)


def check_pgvector_version(version: str, target: PgTarget) -> None:
    """Raises: StoreError naming the fix when ``version`` is older than ``MIN_PGVECTOR``."""
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    if parts and parts < MIN_PGVECTOR:
        raise StoreError(
            f"PostgreSQL at {target.display} has pgvector {version}; toolscout needs 0.7 or "
            f"newer (its HNSW index is over halfvec). Install a newer pgvector on the server, "
            f"then run `ALTER EXTENSION vector UPDATE;` in the database."
        )


def _ensure_vector(conn: Conn, target: PgTarget) -> str:
    row = conn.execute(
        "SELECT n.nspname, e.extversion FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    if row is not None:
        check_pgvector_version(str(row[1]), target)
        return str(row[0])
    db = conn.info.dbname
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (pg_errors.UndefinedFile, pg_errors.FeatureNotSupported) as exc:
        raise StoreError(
            f"PostgreSQL at {target.display} does not have the pgvector extension installed "
            f"({str(exc).strip()}). Install pgvector on the server (e.g. the "
            f"postgresql-<version>-pgvector package), then run `CREATE EXTENSION vector;` in "
            f"database {db!r}."
        ) from exc
    except pg_errors.InsufficientPrivilege as exc:
        raise StoreError(
            f"the vector extension is not enabled in database {db!r} at {target.display}, and "
            f"user {conn.info.user!r} may not enable it. Ask an administrator to run "
            f"`CREATE EXTENSION vector;` in that database."
        ) from exc
    return _ensure_vector(conn, target)


def _migrate(conn: Conn, target: PgTarget) -> None:
    with conn.transaction():
        conn.execute(
            'CREATE TABLE IF NOT EXISTS meta (key text COLLATE "C" PRIMARY KEY, '
            "value text NOT NULL)"
        )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"schema {target.schema!r} at {target.display} has schema version {current}, "
                f"newer than this toolscout ({SCHEMA_VERSION}); upgrade toolscout"
            )
        for version, statements in MIGRATIONS:
            if version > current:
                for statement in statements:
                    conn.execute(statement)
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(max(current, SCHEMA_VERSION)),),
        )


def _ready_schema(conn: Conn, target: PgTarget) -> str | None:
    """The ``search_path`` when pgvector and the schema at the current version exist, by reads
    alone (so a read replica, or a role without DDL rights, can open an up-to-date index)."""
    row = conn.execute(
        "SELECT n.nspname, e.extversion FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    if row is None:
        return None
    check_pgvector_version(str(row[1]), target)
    meta = sql.Identifier(target.schema, "meta")
    exists = conn.execute("SELECT to_regclass(%s)", (f'"{target.schema}".meta',)).fetchone()
    if exists is None or exists[0] is None:
        return None
    version = conn.execute(
        sql.SQL("SELECT value FROM {} WHERE key = 'schema_version'").format(meta)
    ).fetchone()
    if version is None or int(version[0]) != SCHEMA_VERSION:
        return None
    path = sql.SQL("{}, {}").format(sql.Identifier(target.schema), sql.Identifier(str(row[0])))
    return path.as_string(conn)


def prepare_database(target: PgTarget) -> str:
    """Enable pgvector, create the schema and apply pending migrations, once per database even
    when several processes start together (a session advisory lock). Returns the
    ``search_path`` value the pool's connections use.

    Raises: StoreError (unreachable, no pgvector, newer schema, no privileges).
    """
    with connect_once(target) as conn, sql_errors("preparing the schema", target):
        ready = _ready_schema(conn, target)
        if ready is not None:  # nothing to create or migrate: open without writing
            return ready
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", ("toolscout-migrate",))
        try:
            ext_schema = _ensure_vector(conn, target)
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(target.schema))
            )
            path = sql.SQL("{}, {}").format(
                sql.Identifier(target.schema), sql.Identifier(ext_schema)
            )
            conn.execute(sql.SQL("SET search_path TO {}").format(path))
            _migrate(conn, target)
            return path.as_string(conn)
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", ("toolscout-migrate",))


def open_pool(target: PgTarget, search_path: str) -> ConnectionPool[Conn]:
    """A pool whose connections use the store's schema, statement timeout and HNSW settings.

    Raises: StoreError when no connection can be made.
    """

    def configure(conn: Conn) -> None:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.SQL(search_path)))
        conn.execute(
            sql.SQL("SET statement_timeout = {}").format(sql.Literal(target.statement_timeout_ms))
        )
        # Filtered vector queries keep walking the HNSW graph until enough rows pass the
        # filter (pgvector >= 0.8); the store re-sorts what comes back.
        conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(target.ef_search)))
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        # BM25 over common terms aggregates ~100k postings at 100k tools: keep that in memory.
        conn.execute("SET work_mem = '32MB'")
        register_vector(conn)

    pool: ConnectionPool[Conn] = ConnectionPool(
        target.conninfo,
        min_size=max(1, min(target.pool_min, target.pool_max)),
        max_size=max(1, target.pool_max),
        kwargs={"autocommit": True},
        configure=configure,
        open=False,
        timeout=30.0,
        name="toolscout",
    )
    try:
        pool.open(wait=True, timeout=30.0)
    except PoolTimeout as exc:
        pool.close()
        raise StoreError(
            f"cannot open a connection pool to PostgreSQL at {target.display}: {exc}"
        ) from exc
    return pool
