"""One upsert of many tools: new and existing rows mixed, an id given twice, a bad entry among
good ones; and, on SQLite, the batch path writes the file a row-by-row write would."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.backends import entry, unit
from toolscout.errors import StoreError
from toolscout.store.base import IndexEntry, IndexIdentity, Store
from toolscout.store.sqlite.store import SQLiteStore


def _batch() -> list[IndexEntry]:
    return [
        entry("files::read_file", "read file content disk", unit(1, 0.1)),
        entry("git::commit", "commit chang repositori", unit(0, 1), server="git"),
        entry("web::fetch", "fetch web page url", unit(0, 0, 1), server="web"),
    ]


def test_a_batch_mixing_new_and_existing_tools_keeps_each_ids_last_definition(
    store: Store,
) -> None:
    store.upsert(_batch())
    store.upsert(
        [
            entry("git::commit", "record snapshot", unit(0, 0, 0, 1), server="git"),
            entry("files::stat", "file size owner", unit(0, 0, 0, 0, 1)),
            entry("git::commit", "rewrite histori", unit(0, 0, 0, 0, 0, 1), server="git"),
        ]
    )
    assert store.count() == 4
    assert store.tools.get("git::commit").description == "rewrite histori"
    assert [h.id for h in store.lexical(["histori"], limit=5)] == ["git::commit"]
    assert store.lexical(["snapshot"], limit=5) == []
    assert store.nearest(unit(0, 0, 0, 0, 0, 1), limit=1)[0].id == "git::commit"
    assert store.nearest(unit(0, 0, 0, 0, 1), limit=1)[0].id == "files::stat"
    assert [h.id for h in store.lexical(["disk"], limit=5)] == ["files::read_file"]


def test_a_batch_with_one_bad_vector_writes_nothing(store: Store) -> None:
    store.upsert(_batch())
    bad = entry("web::fetch", "download remot blob", unit(1))
    bad = IndexEntry(bad.tool, bad.fields, np.ones(3, dtype=np.float32), bad.text_hash)
    with pytest.raises(StoreError, match="web::fetch"):
        store.upsert([entry("files::new", "brand new tool", unit(0, 0, 0, 1)), bad])
    assert store.count() == 3
    assert store.tools.get("web::fetch").description == "fetch web page url"
    assert store.lexical(["brand"], limit=5) == []
    assert store.nearest(unit(0, 0, 1), limit=1)[0].id == "web::fetch"


def _written(path: Path, batches: list[list[IndexEntry]]) -> dict[str, list[tuple[object, ...]]]:
    store = SQLiteStore(str(path))
    store.bind(IndexIdentity(embedder="test", dim=8, analyzer="a"))
    for batch in batches:
        store.upsert(batch)
    tables = {
        "tools": "SELECT * FROM tools ORDER BY rowid",
        "terms": "SELECT * FROM tools_terms ORDER BY rowid",
        "vectors": "SELECT rowid, embedding FROM tools_vec ORDER BY rowid",
        "log": "SELECT row FROM tools_changes ORDER BY row",  # the rows changed, in any order
        "fts": "SELECT rowid FROM tools_fts WHERE tools_fts MATCH 'file OR commit OR url'",
    }
    found = {name: [tuple(r) for r in store.database.query(sql)] for name, sql in tables.items()}
    store.close()
    return found


def test_a_batch_writes_the_rows_a_row_by_row_write_would(tmp_path: Path) -> None:
    first = _batch()
    second = [
        entry("files::stat", "file size owner", unit(0, 0, 0, 0, 1)),
        entry("git::commit", "rewrite commit histori", unit(0, 1, 1), server="git"),
    ]
    together = _written(tmp_path / "batch.db", [first, second])
    one_by_one = _written(tmp_path / "rows.db", [[e] for e in [*first, *second]])
    assert together == one_by_one
    assert len(together["tools"]) == 4
