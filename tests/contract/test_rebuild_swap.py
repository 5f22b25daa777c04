"""The store half of ``index --rebuild``: an index built at ``staging()`` replaces the current
one in one step, on SQLite and on PostgreSQL, and readers opened before see the new one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from support.backends import entry, open_backend, unit, with_options
from toolscout.config import Settings
from toolscout.errors import ConfigError
from toolscout.models import Loaded, Tool
from toolscout.store.base import IndexEntry, IndexIdentity, Store, open_store
from toolscout.sync.rebuild import rebuild_index

NEW_IDENTITY = IndexIdentity("another-embedder", 4, "a2")


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_staged_index_replaces_the_current_one_whole(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    current: Store = open_backend(kind, tmp_path, url)
    current.upsert([entry("files::read_file", "read a file", unit(1.0))])
    reader = open_store(current.url if kind == "sqlite" else url or "")
    assert reader.count() == 1
    staging_url = current.staging()
    staged = open_store(staging_url)
    staged.bind(NEW_IDENTITY)
    new = entry("chat::send", "send a message", unit(1.0))
    staged.upsert(
        [entry_with_dim(new, 4), entry_with_dim(entry("chat::read", "read", unit(0.5, 1.0)), 4)]
    )
    staged.close()
    assert current.count() == 1  # nothing changes before the swap
    current.replace_with(staging_url)
    assert current.identity() == NEW_IDENTITY
    assert sorted(current.tools.hashes()) == ["chat::read", "chat::send"]
    assert current.nearest(np.array([1, 0, 0, 0], np.float32), limit=1)[0].id == "chat::send"
    assert sorted(reader.tools.hashes()) == ["chat::read", "chat::send"]  # opened before the swap
    reader.close()
    current.close()
    again = open_store(staging_url)  # the staging index is gone: a new, empty one opens
    assert again.identity() is None
    again.close()


def entry_with_dim(e: IndexEntry, dim: int) -> IndexEntry:
    """``e`` with its vector cut to ``dim`` values (the new index's model is smaller)."""
    vector = np.asarray(e.vector[:dim], dtype=np.float32)
    return IndexEntry(e.tool, e.fields, vector / np.linalg.norm(vector), e.text_hash)


@pytest.mark.postgres
def test_a_rebuild_with_qdrant_vectors_is_refused_and_leaves_the_index_as_it_was(
    pg_url: str, qdrant_vectors: Callable[[Path], str], tmp_path: Path
) -> None:
    """A Qdrant collection cannot be staged and swapped with the schema in one step: the
    rebuild says so before anything changes (Qdrant Edge in a local folder)."""
    url = with_options(pg_url, vectors=qdrant_vectors(tmp_path / "qdrant"))
    store = open_store(url)
    store.bind(IndexIdentity("test-embedder", 4, "a2"))
    kept = entry_with_dim(entry("files::read_file", "read a file", unit(1.0)), 4)
    store.upsert([kept])
    store.close()
    loads = [Loaded(source="new", tools=[Tool(id="chat::send", name="send", description="x")])]
    with pytest.raises(ConfigError, match="Qdrant") as refused:
        rebuild_index(Settings(db=url), loads)
    assert "left as it was" in str(refused.value)
    again = open_store(url)
    try:
        assert sorted(again.tools.hashes()) == ["files::read_file"]
        assert again.nearest(np.array([1, 0, 0, 0], np.float32), limit=1)[0].id == kept.tool.id
        assert again.count() == 1
    finally:
        again.close()
