"""Schema migrations of the PostgreSQL store: an index written by an older schema is upgraded
in place when a newer toolscout opens it, and answers as before."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from toolscout.models import Tool
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity
from toolscout.store.postgres import PostgresStore
from toolscout.store.postgres.conn import Conn

pytestmark = pytest.mark.postgres
IDENTITY = IndexIdentity("test-embedder", 8, "a2")
WEIGHTS = (3, 2.5, 2, 2, 1.5, 1.5, 1, 1)


def make_entry(i: int, rng: np.random.Generator) -> IndexEntry:
    tool = Tool(id=f"s{i % 4}::t{i:03d}", name=f"t{i:03d}", server=f"s{i % 4}")
    fields = {f: "" for f in LEXICAL_FIELDS}
    fields["name"] = f"t{i:03d} word{i % 5}"
    fields["description"] = f"word{i % 7} common w{i % 3} w{i % 3}"
    v = rng.standard_normal(8).astype(np.float32)
    return IndexEntry(tool, fields, v / np.linalg.norm(v), text_hash=f"h{i}")


def back_to_schema_4(conn: Conn) -> None:
    """Put the lexical tables back as schema 4 left them: postings keyed by text id, one
    smallint array of term frequencies, no integer doc on tools, no term or tool versions."""
    conn.execute(
        """CREATE TABLE tool_terms (
            term text COLLATE "C" NOT NULL,
            tool_id text COLLATE "C" NOT NULL REFERENCES tools(id) ON DELETE CASCADE,
            doc_len integer NOT NULL,
            tf smallint[] NOT NULL,
            PRIMARY KEY (term, tool_id) INCLUDE (doc_len, tf)
        )"""
    )
    conn.execute("CREATE INDEX tool_terms_tool ON tool_terms(tool_id)")
    conn.execute(
        "INSERT INTO tool_terms SELECT p.term, t.id, p.doc_len, "
        "ARRAY[p.tf1, p.tf2, p.tf3, p.tf4, p.tf5, p.tf6, p.tf7, p.tf8] "
        "FROM postings p JOIN tools t ON t.doc = p.doc"
    )
    conn.execute("DROP TABLE postings")
    conn.execute("ALTER TABLE tools DROP COLUMN doc")
    conn.execute("ALTER TABLE term_stats DROP COLUMN version")
    conn.execute("ALTER TABLE lexical_stats DROP COLUMN epoch, DROP COLUMN gone_after")
    conn.execute("ALTER TABLE tools DROP COLUMN lex_version")
    conn.execute("DROP TABLE gone_docs")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")


def test_schema_5_moves_postings_to_integer_docs_and_ranks_the_same(
    pg_url: str, url_with: Callable[..., str]
) -> None:
    store = PostgresStore(url_with(pg_url, exact_below=10))
    store.bind(IDENTITY)
    rng = np.random.default_rng(9)
    store.upsert([make_entry(i, rng) for i in range(60)])
    store.delete(["s0::t004"])
    queries = [["common", "word3"], ["w1", "word2", "t007"], ["nothing"], ["w2"]]
    before = [store.lexical(q, limit=10, weights=WEIGHTS) for q in queries]
    postings = store.database.query("SELECT count(*) FROM postings")[0][0]
    with store.database.pool.connection() as conn, conn.transaction():
        back_to_schema_4(conn)
    store.close()
    reopened = PostgresStore(url_with(pg_url, exact_below=10))
    try:
        version = reopened.database.query("SELECT value FROM meta WHERE key = 'schema_version'")
        assert int(version[0][0]) >= 5
        assert reopened.database.query("SELECT to_regclass('tool_terms')")[0][0] is None
        assert reopened.database.query("SELECT count(*) FROM postings")[0][0] == postings
        after = [reopened.lexical(q, limit=10, weights=WEIGHTS) for q in queries]
        assert after == before and before[0]
        # New tools get docs of their own; an updated tool keeps its postings consistent.
        reopened.upsert([make_entry(i, rng) for i in (3, 61)])
        docs = reopened.database.query("SELECT count(DISTINCT doc), count(*) FROM tools")[0]
        assert docs[0] == docs[1] == 60
        hit = reopened.lexical(["t061"], limit=3, weights=WEIGHTS)
        assert [h.id for h in hit] == ["s1::t061"]
    finally:
        reopened.close()


def test_schema_4_rebuilds_a_float_graph_over_half_precision_vectors(
    pg_url: str, url_with: Callable[..., str]
) -> None:
    store = PostgresStore(url_with(pg_url, exact_below=10))
    store.bind(IDENTITY)
    rng = np.random.default_rng(5)
    entries = [make_entry(i, rng) for i in range(40)]
    store.upsert(entries)
    # Put the index back as schema 3 left it: a float32 graph, schema version 3.
    with store.database.pool.connection() as conn, conn.transaction():
        back_to_schema_4(conn)
        conn.execute("DROP INDEX tools_embedding_hnsw")
        conn.execute(
            "CREATE INDEX tools_embedding_hnsw ON tools USING hnsw "
            "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200)"
        )
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    store.close()
    reopened = PostgresStore(url_with(pg_url, exact_below=10))
    try:
        with reopened.database.pool.connection() as conn:
            (definition,) = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'tools_embedding_hnsw' "
                "AND schemaname = current_schema()"
            ).fetchone() or ("",)
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            assert version is not None and int(version[0]) >= 4
        assert "halfvec(8)" in definition and "halfvec_cosine_ops" in definition
        q = entries[7].vector
        assert reopened.nearest(q, limit=3)[0].id == entries[7].tool.id
    finally:
        reopened.close()
