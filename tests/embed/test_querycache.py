"""The query-vector LRU over the real packaged model."""

from __future__ import annotations

import numpy as np

from toolscout.embed.base import open_embedder
from toolscout.embed.querycache import QueryCache


def test_cached_vectors_equal_fresh_ones_and_old_entries_are_evicted() -> None:
    model = open_embedder("local:minilm-l6-int8", threads=1)
    cache = QueryCache(model, size=2)
    texts = ["send an email", "create a calendar event", "convert currency"]
    first = cache.embed_query(texts[:2])
    again = cache.embed_query(texts[:2])
    assert np.array_equal(first, again)
    assert np.allclose(first, model.embed_query(texts[:2]), atol=1e-6)
    assert cache.stats() == {"hits": 2, "misses": 2, "entries": 2}
    cache.embed_query([texts[2]])  # evicts the least recently used: "send an email"
    cache.embed_query([texts[0]])
    assert cache.stats() == {"hits": 2, "misses": 4, "entries": 2}


def test_returned_rows_can_be_changed_without_touching_the_cache() -> None:
    cache = QueryCache(open_embedder("local:minilm-l6-int8", threads=1), size=8)
    row = cache.embed_query(["search the web"])
    row[:] = 0
    assert np.linalg.norm(cache.embed_query(["search the web"])[0]) > 0.99
