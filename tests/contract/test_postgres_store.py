"""What only the PostgreSQL store has: connection errors, pgvector and schema checks, timeouts,
several processes and writers on one database, the HNSW path, FTS5-identical tokens."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

import numpy as np
import psycopg
import pytest
import sqlean

from toolscout.errors import StoreError
from toolscout.models import Tool
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity
from toolscout.store.postgres import PostgresStore
from toolscout.store.postgres.lexical.terms import fts5_tokens
from toolscout.store.sqlite import SQLiteStore

pytestmark = pytest.mark.postgres
IDENTITY = IndexIdentity("test-embedder", 8, "a2")


def make_entry(i: int, rng: np.random.Generator, words: str = "") -> IndexEntry:
    tool = Tool(id=f"s{i % 4}::t{i:03d}", name=f"t{i:03d}", server=f"s{i % 4}")
    fields = {f: "" for f in LEXICAL_FIELDS}
    fields["description"] = words or f"word{i % 7} common w{i % 3}"
    v = rng.standard_normal(8).astype(np.float32)
    return IndexEntry(tool, fields, v / np.linalg.norm(v), text_hash=f"h{i}")


def test_an_unreachable_server_is_a_store_error_naming_it() -> None:
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL at .*127\.0\.0\.1:1"):
        PostgresStore("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2")


@pytest.mark.parametrize(
    ("query", "message"),
    [("pool_max=ten", "pool_max='ten' must be an integer"), ("schema=a;b", "schema='a;b'")],
)
def test_a_bad_url_option_is_named(query: str, message: str) -> None:
    with pytest.raises(StoreError, match=re.escape(message)):
        PostgresStore(f"postgresql://u@127.0.0.1:1/db?{query}")


def test_the_password_never_shows_in_the_store_url(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    url = pg_url.replace(f"{parts.netloc}", "postgres:hunter2@", 1)
    store = PostgresStore(url)
    try:
        assert "hunter2" not in store.url and ":***@" in store.url
    finally:
        store.close()


def test_a_database_without_pgvector_says_how_to_enable_it(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS novector")
        admin.execute("DROP ROLE IF EXISTS plain_user")
        admin.execute("CREATE ROLE plain_user LOGIN")
        admin.execute("CREATE DATABASE novector OWNER plain_user")
    parts = urlsplit(postgres_url)
    url = parts._replace(netloc=parts.netloc.replace("postgres", "plain_user", 1), path="/novector")
    with pytest.raises(StoreError, match="CREATE EXTENSION vector"):
        PostgresStore(url.geturl())


def test_a_schema_newer_than_the_code_is_refused(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.set_meta("schema_version", "999")
    store.close()
    with pytest.raises(StoreError, match="newer than this toolscout"):
        PostgresStore(pg_url)


def test_a_slow_statement_hits_the_timeout(pg_url: str, url_with: Callable[..., str]) -> None:
    store = PostgresStore(url_with(pg_url, statement_timeout_ms=50))
    try:
        with pytest.raises(StoreError, match="timed out after 50 ms"):
            store.database.query("SELECT pg_sleep(2)")
    finally:
        store.close()


def test_a_write_in_another_process_is_seen_by_the_next_query(pg_url: str) -> None:
    reader = PostgresStore(pg_url)
    reader.bind(IDENTITY)
    try:
        assert reader.lexical(["remote"], limit=5) == []
        script = (
            "import sys, numpy as np\n"
            "from toolscout.models import Tool\n"
            "from toolscout.store.base import IndexEntry, IndexIdentity, LEXICAL_FIELDS\n"
            "from toolscout.store.postgres import PostgresStore\n"
            "s = PostgresStore(sys.argv[1]); s.bind(IndexIdentity('test-embedder', 8, 'a2'))\n"
            "f = {k: '' for k in LEXICAL_FIELDS}; f['description'] = 'remote write'\n"
            "v = np.ones(8, dtype=np.float32) / np.sqrt(8)\n"
            "s.upsert([IndexEntry(Tool(id='x::remote', name='remote'), f, v, 'h')]); s.close()\n"
        )
        subprocess.run([sys.executable, "-c", script, pg_url], check=True, timeout=120)
        assert [h.id for h in reader.lexical(["remote"], limit=5)] == ["x::remote"]
        assert reader.nearest(np.ones(8, dtype=np.float32), limit=1)[0].id == "x::remote"
    finally:
        reader.close()


def test_concurrent_writers_neither_duplicate_nor_lose_tools(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(2)]
    for s in stores:
        s.bind(IDENTITY)
    rng = np.random.default_rng(7)
    batches = [[make_entry(i, rng) for i in range(60)] for _ in range(2)]
    errors: list[BaseException] = []

    def sync(store: PostgresStore, batch: list[IndexEntry]) -> None:
        try:
            for _ in range(5):
                store.upsert(batch[::-1] if store is stores[1] else batch)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [
        threading.Thread(target=sync, args=(s, b)) for s, b in zip(stores, batches, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors and not any(t.is_alive() for t in threads)
        assert stores[0].count() == 60
        stats = stores[0].database.query("SELECT rows_indexed, live_rows FROM lexical_stats")[0]
        assert tuple(stats) == (600, 60)
        terms = stores[0].database.query("SELECT count(*) FROM postings WHERE term = 'common'")[0][
            0
        ]
        assert terms == 60
    finally:
        for s in stores:
            s.close()


def index_names(store: PostgresStore) -> set[str]:
    rows = store.database.query(
        "SELECT indexname FROM pg_indexes "
        "WHERE tablename = 'tools' AND schemaname = current_schema()"
    )
    return {r[0] for r in rows}


def test_hnsw_answers_like_the_exact_scan(pg_url: str, url_with: Callable[..., str]) -> None:
    exact = PostgresStore(pg_url)
    exact.bind(IDENTITY)
    rng = np.random.default_rng(11)
    entries = [make_entry(i, rng) for i in range(300)]
    exact.upsert(entries[:150])
    # Below exact_below (2000) the index would never be used, so it is not built.
    assert "tools_embedding_hnsw" not in index_names(exact)
    approximate = PostgresStore(url_with(pg_url, exact_below=100))
    approximate.upsert(entries[150:])
    assert "tools_embedding_hnsw" in index_names(approximate)
    approximate.close()
    approximate = PostgresStore(url_with(pg_url, exact_below=0))
    try:
        with approximate.database.pool.connection() as conn, conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = conn.execute(
                "EXPLAIN SELECT id FROM tools "
                "ORDER BY embedding::halfvec(8) <=> %b::halfvec(8) LIMIT 20",
                [np.ones(8, dtype=np.float32)],
            ).fetchall()
        assert any("tools_embedding_hnsw" in row[0] for row in plan)
        for _ in range(20):
            q = rng.standard_normal(8).astype(np.float32)
            q /= np.linalg.norm(q)
            want = [h.id for h in exact.nearest(q, limit=10)]
            assert [h.id for h in approximate.nearest(q, limit=10)] == want
    finally:
        exact.close()
        approximate.close()


def test_a_bulk_load_rebuilds_the_vector_index_once_at_the_end(
    pg_url: str, url_with: Callable[..., str]
) -> None:
    store = PostgresStore(url_with(pg_url, exact_below=50))
    store.bind(IDENTITY)
    rng = np.random.default_rng(3)
    try:
        with store.bulk():
            store.upsert([make_entry(i, rng) for i in range(120)])
            assert "tools_embedding_hnsw" not in index_names(store)
        assert "tools_embedding_hnsw" in index_names(store)
        assert store.count() == 120
    finally:
        store.close()


def test_term_splitting_matches_fts5_unicode61() -> None:
    conn = sqlean.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(a, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    samples = [chr(c) for c in range(0x3040, 0x3100)] + ["中文", "한국어", "É", "ß", "a_b", "x-y"]
    for sample in samples:
        text = f"ab{sample}cd {sample} 9"
        conn.execute("DELETE FROM f")
        conn.execute("INSERT INTO f(a) VALUES (?)", (text,))
        got = [r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset")]
        assert fts5_tokens(text) == got, sample


def test_stores_agree_on_bm25_after_updates_and_deletes(
    pg_url: str, tmp_path: pytest.TempPathFactory
) -> None:
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(25)] + ["中文", "ト・", "データ"]
    pg = PostgresStore(pg_url)
    lite = SQLiteStore(f"sqlite:///{tmp_path}/agree.db")
    try:
        for store in (pg, lite):
            store.bind(IDENTITY)

        def batch(ids: range) -> list[IndexEntry]:
            return [make_entry(i, rng, " ".join(rng.choice(vocab, 6))) for i in ids]

        writes = [batch(range(120)), batch(range(0, 120, 3)), batch(range(100, 150))]
        for entries in writes:
            for store in (pg, lite):
                store.upsert(entries)
        for store in (pg, lite):
            store.delete([f"s{i % 4}::t{i:03d}" for i in range(0, 150, 5)])
        for _ in range(40):
            tokens = list(rng.choice(vocab, 3))
            a = lite.lexical(tokens, limit=20, weights=(3, 2.5, 2, 2, 1.5, 1.5, 1, 1))
            b = pg.lexical(tokens, limit=20, weights=(3, 2.5, 2, 2, 1.5, 1.5, 1, 1))
            assert [(h.id, h.score) for h in b] == [(h.id, h.score) for h in a]
    finally:
        pg.close()
        lite.close()


def test_a_pgvector_without_halfvec_is_refused_with_the_fix() -> None:
    from toolscout.store.postgres.conn import check_pgvector_version, parse_url

    target = parse_url("postgresql://u@localhost:5432/db")
    with pytest.raises(StoreError, match=r"pgvector 0\.6\.2.*ALTER EXTENSION vector UPDATE"):
        check_pgvector_version("0.6.2", target)
    check_pgvector_version("0.7.0", target)
    check_pgvector_version("0.8.1", target)
