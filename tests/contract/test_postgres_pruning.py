"""The PostgreSQL store's shortcuts give the answers of the long way: BM25 over cached posting
lists and pruned BM25 (MaxScore) both equal the exhaustive statement, document frequencies follow
every write, cached counts follow writes made through another store."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from toolscout.models import Filters, Tool
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity
from toolscout.store.postgres import PostgresStore
from toolscout.store.postgres.conn import where_sql
from toolscout.store.postgres.lexical.sql import bm25_sql, essential_terms
from toolscout.store.postgres.lexical.terms import query_terms

pytestmark = pytest.mark.postgres
IDENTITY = IndexIdentity("test-embedder", 8, "a2")
WEIGHTS = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)
VOCAB = [f"w{i}" for i in range(80)]
# Zipf-like: a few words in most tools, most words in a few (as in real catalogs).
P = 1.0 / np.arange(1, len(VOCAB) + 1)
P /= P.sum()


def zipf_entry(i: int, rng: np.random.Generator) -> IndexEntry:
    tool = Tool(id=f"s{i % 5}::t{i:04d}", name=f"t{i:04d}", server=f"s{i % 5}")
    fields = {f: "" for f in LEXICAL_FIELDS}
    for field, n in (("name", 2), ("description", 12), ("params", 5), ("keywords", 3)):
        fields[field] = " ".join(rng.choice(VOCAB, size=int(rng.integers(1, n + 1)), p=P))
    v = rng.standard_normal(8).astype(np.float32)
    return IndexEntry(tool, fields, v / np.linalg.norm(v), text_hash=f"h{i}")


@pytest.fixture(params=["cached", "sql"])
def zipf_store(
    request: pytest.FixtureRequest, pg_url: str, url_with: Callable[..., str]
) -> Iterator[PostgresStore]:
    # "cached": BM25 over the process's copies of posting lists (postgres_postings);
    # "sql": no copies, MaxScore-pruned SQL (postgres_lexical).
    url = pg_url if request.param == "cached" else url_with(pg_url, postings_cache=0)
    store = PostgresStore(url)
    try:
        store.bind(IDENTITY)
        rng = np.random.default_rng(11)
        store.upsert([zipf_entry(i, rng) for i in range(700)])
        store.upsert([zipf_entry(i, rng) for i in range(0, 700, 7)])  # updates move the stats
        store.delete([f"s{i % 5}::t{i:04d}" for i in range(3, 700, 11)])
        yield store
    finally:
        store.close()


def exhaustive(
    store: PostgresStore, tokens: list[str], limit: int, filters: Filters | None
) -> list[tuple[str, float]]:
    cond, params = where_sql(filters)
    sql = bm25_sql(list(WEIGHTS), None if cond == "true" else cond)
    rows = store.database.query(sql, [query_terms(tokens), *params, limit, limit])
    return [(r[0], float(r[1])) for r in rows]


def test_bm25_returns_exactly_the_exhaustive_top_k(zipf_store: PostgresStore) -> None:
    rng = np.random.default_rng(3)
    df = dict(zipf_store.database.query("SELECT term, df FROM term_stats"))
    rows = int(zipf_store.database.query("SELECT rows_indexed FROM lexical_stats")[0][0])
    pruned = 0
    for trial in range(120):
        tokens = [str(w) for w in rng.choice([*VOCAB, "nowhere"], size=int(rng.integers(1, 9)))]
        limit = int(rng.choice([1, 3, 10, 40, 100]))
        filters = None
        if trial % 4 == 0:  # two servers of five
            filters = Filters(servers=("s1", "s3"))
        elif trial % 8 == 1:  # a handful of tools: cached lists give way to SQL
            filters = Filters(tool_ids=tuple(f"s{i % 5}::t{i:04d}" for i in rng.choice(700, 6)))
        got = zipf_store.lexical(tokens, limit=limit, filters=filters, weights=WEIGHTS)
        want = exhaustive(zipf_store, tokens, limit, filters)
        assert [(h.id, h.score) for h in got] == want, (tokens, limit, filters)
        terms = query_terms(tokens)
        first = essential_terms(terms, df, rows, limit=limit, theta=None, cover=10)
        pruned += len(first) < len({t for t in terms if df.get(t, 0) > 0})
    assert pruned > 30  # the pruned path, not only the exhaustive fallback, was exercised
    if zipf_store.lexical_leg.cache is not None:  # filters both settled from cached lists and not
        assert 0 < zipf_store.lexical_leg.cache.filter_fallbacks < 15


def test_document_frequencies_follow_updates_and_deletes(zipf_store: PostgresStore) -> None:
    stats = dict(zipf_store.database.query("SELECT term, df FROM term_stats WHERE df > 0"))
    counted = dict(zipf_store.database.query("SELECT term, count(*) FROM postings GROUP BY term"))
    assert stats == counted
    zipf_store.reset()
    assert zipf_store.database.query("SELECT count(*) FROM term_stats")[0][0] == 0


def test_a_cached_count_follows_a_write_through_another_store(
    zipf_store: PostgresStore, pg_url: str
) -> None:
    other = PostgresStore(pg_url)
    try:
        only_s1 = Filters(servers=("s1",))
        before, total = zipf_store.count(only_s1), zipf_store.count()
        assert zipf_store.count(only_s1) == before  # served from the cache
        other.upsert([zipf_entry(5001, np.random.default_rng(0))])  # server s1
        assert zipf_store.count(only_s1) == before + 1
        assert zipf_store.count() == total + 1
        other.delete(["s1::t5001"])
        assert zipf_store.count(only_s1) == before
    finally:
        other.close()
