"""The PostgreSQL store's copies of posting lists are never stale: writes by another store, a
re-created schema and a small cache all leave BM25 equal to the exhaustive SQL statement."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import psycopg
import pytest

from toolscout.errors import StoreError
from toolscout.models import Tool
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity
from toolscout.store.postgres import PostgresStore
from toolscout.store.postgres.conn import parse_url
from toolscout.store.postgres.lexical import bm25 as postgres_bm25
from toolscout.store.postgres.lexical import postings
from toolscout.store.postgres.lexical.postings import unpack
from toolscout.store.postgres.lexical.sql import bm25_sql
from toolscout.store.postgres.lexical.terms import query_terms

pytestmark = pytest.mark.postgres
IDENTITY = IndexIdentity("test-embedder", 8, "a2")
WEIGHTS = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)
VOCAB = [f"w{i}" for i in range(40)]
QUERIES = [["w0", "w1"], ["w2", "w17", "w33"], ["w5"], ["w0", "w0", "w9"], ["rare", "w3"]]


def entry(i: int, rng: np.random.Generator, extra: str = "") -> IndexEntry:
    tool = Tool(id=f"s{i % 3}::t{i:04d}", name=f"t{i:04d}", server=f"s{i % 3}")
    fields = {f: "" for f in LEXICAL_FIELDS}
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    fields["name"] = " ".join(rng.choice(VOCAB, size=2, p=p / p.sum()))
    fields["description"] = " ".join(rng.choice(VOCAB, size=8, p=p / p.sum())) + extra
    v = rng.standard_normal(8).astype(np.float32)
    return IndexEntry(tool, fields, v / np.linalg.norm(v), text_hash=f"h{i}{extra}")


def exhaustive(store: PostgresStore, tokens: list[str], limit: int) -> list[tuple[str, float]]:
    rows = store.database.query(bm25_sql(list(WEIGHTS), None), [query_terms(tokens), limit, limit])
    return [(r[0], float(r[1])) for r in rows]


def answers(store: PostgresStore, limit: int = 15) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, h.score) for h in store.lexical(q, limit=limit, weights=WEIGHTS)] for q in QUERIES
    ]


def test_cached_lists_follow_writes_made_through_another_store(pg_url: str) -> None:
    reader, writer = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        writer.bind(IDENTITY)
        rng = np.random.default_rng(2)
        writer.upsert([entry(i, rng) for i in range(300)])
        writer.upsert([entry(7, rng, " rare")])
        first = answers(reader)
        assert first == [exhaustive(reader, q, 15) for q in QUERIES]
        assert reader.lexical_leg.cache is not None and reader.lexical_leg.cache.held > 0
        kept = reader.lexical_leg.cache._lists["rare"]
        # Another process changes texts, deletes and adds tools.
        writer.upsert([entry(i, rng) for i in range(0, 300, 4)])
        writer.delete([f"s{i % 3}::t{i:04d}" for i in range(1, 300, 9)])
        writer.upsert([entry(i, rng) for i in range(300, 330)])
        loaded = reader.lexical_leg.cache.loaded
        second = answers(reader)
        assert second == [exhaustive(reader, q, 15) for q in QUERIES]
        assert second != first
        # Refreshed in place with the changed tools' postings, not read again whole.
        assert reader.lexical_leg.cache.refreshed > 0 and reader.lexical_leg.cache.loaded == loaded
        # A list no write touched was not loaded again.
        assert reader.lexical_leg.cache._lists["rare"] is kept
        writer.delete(["s1::t0007"])
        assert reader.lexical(["rare"], limit=5, weights=WEIGHTS) == []
    finally:
        reader.close()
        writer.close()


def test_a_schema_created_again_empties_the_cache(pg_url: str) -> None:
    first, again = Tool(id="a::one", name="one"), Tool(id="b::two", name="two")
    fields = {f: "" for f in LEXICAL_FIELDS}
    fields["description"] = "alpha beta"
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    reader = PostgresStore(pg_url)
    try:
        reader.bind(IDENTITY)
        reader.upsert([IndexEntry(first, fields, vector, "h")])
        assert [h.id for h in reader.lexical(["alpha"], limit=3)] == ["a::one"]
        target = parse_url(pg_url)
        with psycopg.connect(target.conninfo, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {target.schema} CASCADE")
        # Same writes in the same order: every version number repeats, and so do the docs.
        other = PostgresStore(pg_url)
        other.bind(IDENTITY)
        other.upsert([IndexEntry(again, fields, vector, "h")])
        other.close()
        assert [h.id for h in reader.lexical(["alpha"], limit=3)] == ["b::two"]
    finally:
        reader.close()


def test_a_small_cache_evicts_lists_and_answers_the_same(
    pg_url: str, url_with: Callable[..., str]
) -> None:
    # The queries' lists hold ~680 postings in all, each query's at most ~340.
    small = PostgresStore(url_with(pg_url, postings_cache=400))
    try:
        small.bind(IDENTITY)
        rng = np.random.default_rng(4)
        small.upsert([entry(i, rng) for i in range(200)])
        for _ in range(2):
            assert answers(small) == [exhaustive(small, q, 15) for q in QUERIES]
            assert small.lexical_leg.cache is not None and small.lexical_leg.cache.held <= 400
        cache = small.lexical_leg.cache
        assert cache is not None
        live = {t for q in QUERIES for t in q if t != "rare"}
        assert cache.loaded > len(live)  # evicted lists were read again
        assert cache.oversize_fallbacks == 0
    finally:
        small.close()


def test_lists_larger_than_the_cache_are_left_to_sql(
    pg_url: str, url_with: Callable[..., str]
) -> None:
    tiny = PostgresStore(url_with(pg_url, postings_cache=100))
    try:
        tiny.bind(IDENTITY)
        rng = np.random.default_rng(4)
        tiny.upsert([entry(i, rng) for i in range(200)])
        for _ in range(2):
            assert answers(tiny) == [exhaustive(tiny, q, 15) for q in QUERIES]
        assert tiny.lexical_leg.cache is not None and tiny.lexical_leg.cache.held <= 100
        # "w0" alone is in most tools: those queries go to SQL each time, the rest are cached
        assert 0 < tiny.lexical_leg.cache.oversize_fallbacks < 2 * len(QUERIES)
        assert tiny.lexical_leg.cache.loaded > 0
    finally:
        tiny.close()


def test_a_warmed_process_answers_from_preloaded_lists(
    pg_url: str, url_with: Callable[..., str]
) -> None:
    writer = PostgresStore(pg_url)
    try:
        writer.bind(IDENTITY)
        rng = np.random.default_rng(6)
        writer.upsert([entry(i, rng) for i in range(200)])
        postings_in_all = int(writer.database.query("SELECT count(*) FROM postings")[0][0])
        warm = PostgresStore(url_with(pg_url, postings_warm=postings_in_all))
        partial = PostgresStore(url_with(pg_url, postings_warm=400))
        try:
            for store in (warm, partial):
                assert store.lexical_leg._warmer is not None and store.lexical_leg.cache is not None
                store.lexical_leg._warmer.thread.join(timeout=60)
            assert warm.lexical_leg.cache is not None and partial.lexical_leg.cache is not None
            assert warm.lexical_leg.cache.held == postings_in_all
            assert 0 < partial.lexical_leg.cache.held <= 400
            assert "w0" in partial.lexical_leg.cache._lists  # the most common terms first
            loaded = warm.lexical_leg.cache.loaded
            assert answers(warm) == [exhaustive(warm, q, 15) for q in QUERIES]
            assert warm.lexical_leg.cache.loaded == loaded  # nothing read on first use
            # preloaded lists still follow writes made elsewhere
            writer.upsert([entry(i, rng, extra=" w0 w5") for i in range(40)])
            assert answers(warm) == [exhaustive(warm, q, 15) for q in QUERIES]
            assert warm.lexical_leg.cache.refreshed > 0
        finally:
            warm.close()
            partial.close()
    finally:
        writer.close()


def test_closing_a_store_while_it_warms_is_quiet(
    pg_url: str, url_with: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    writer = PostgresStore(pg_url)
    try:
        writer.bind(IDENTITY)
        writer.upsert([entry(i, np.random.default_rng(7)) for i in range(200)])
    finally:
        writer.close()
    store = PostgresStore(url_with(pg_url, postings_warm=10**6))
    store.close()
    assert store.lexical_leg._warmer is not None and not store.lexical_leg._warmer.thread.is_alive()
    assert "not preloaded" not in caplog.text


@pytest.mark.parametrize("spread", [0, 10**9])
def test_scores_are_the_same_summed_densely_or_sparsely(
    pg_url: str, spread: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_bm25, "DENSE_SPREAD", spread)
    monkeypatch.setattr(postgres_bm25, "DENSE_MAX", 10**9 if spread else 0)
    store = PostgresStore(pg_url)
    try:
        store.bind(IDENTITY)
        rng = np.random.default_rng(5)
        store.upsert([entry(i, rng) for i in range(200)])
        store.delete([f"s{i % 3}::t{i:04d}" for i in range(0, 200, 7)])  # gaps in the docs
        assert answers(store) == [exhaustive(store, q, 15) for q in QUERIES]
    finally:
        store.close()


def test_packed_postings_unpack_or_fail_with_a_store_error() -> None:
    one = (
        (7).to_bytes(8, "big")
        + (12).to_bytes(4, "big")
        + b"".join((i).to_bytes(2, "big") for i in range(8))
    )
    docs, lens, tf = unpack(one + one.replace(b"\x07", b"\x09", 1))
    assert docs.tolist() == [7, 9] and lens.tolist() == [12, 12]
    assert tf.tolist() == [list(range(8))] * 2
    with pytest.raises(StoreError, match=r"not whole postings.*db upgrade"):
        unpack(one[:-1])


@pytest.mark.parametrize("case", ["too much changed", "deletions forgotten"])
def test_lists_are_read_again_whole_when_a_refresh_cannot_be_trusted(
    pg_url: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        writer.bind(IDENTITY)
        rng = np.random.default_rng(6)
        writer.upsert([entry(i, rng) for i in range(150)])
        assert answers(reader) == [exhaustive(reader, q, 15) for q in QUERIES]
        assert reader.lexical_leg.cache is not None
        if case == "too much changed":
            monkeypatch.setattr(postings, "REFRESH_MIN", 0)
            monkeypatch.setattr(postings, "REFRESH_SHARE", 0.0)
        else:  # deleted docs are kept for one write version only
            monkeypatch.setattr(postings, "GONE_KEEP", 1)
            writer.delete(["s0::t0000"])
        writer.upsert([entry(i, rng) for i in range(0, 150, 5)])
        writer.delete(["s1::t0001", "s2::t0002"])
        loaded, refreshed = reader.lexical_leg.cache.loaded, reader.lexical_leg.cache.refreshed
        assert answers(reader) == [exhaustive(reader, q, 15) for q in QUERIES]
        assert (
            reader.lexical_leg.cache.loaded > loaded
            and reader.lexical_leg.cache.refreshed == refreshed
        )
        if case == "deletions forgotten":
            kept = writer.database.query("SELECT count(*), min(version) FROM gone_docs")[0]
            after = writer.database.query("SELECT gone_after FROM lexical_stats")[0][0]
            assert kept[0] == 2 and kept[1] > after
    finally:
        reader.close()
        writer.close()
