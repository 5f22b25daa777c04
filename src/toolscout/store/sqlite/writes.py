"""Writing a batch of tools to the SQLite file in the caller's transaction: one statement per
table for the whole batch (``executemany``), not five per tool.

A batch touches ``tools``, FTS5's ``tools_fts``, the posting index's ``tools_terms`` and
sqlite-vec's ``tools_vec``; the ``tools_changes`` triggers log every row as before. New rows take
the rowids SQLite would give them one by one (``max(rowid) + 1`` onwards), so the file is the
same as a row-by-row write of the batch, at about half the time per tool for large batches
(docs/benchmarks/scale.md). A tool id given twice in one batch is written once, with its last
definition, as the second write would leave it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from toolscout.errors import StoreError
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry
from toolscout.store.sqlite.lex.rows import encode

_COLUMNS = (
    "name, description, input_schema, output_schema, annotations, item_type, server, source, "
    "category, content_hash, text_hash"
)
_INSERT = f"INSERT INTO tools(rowid, id, {_COLUMNS}) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)"
_UPDATE = (
    "UPDATE tools SET name=?, description=?, input_schema=?, output_schema=?, annotations=?, "
    "item_type=?, server=?, source=?, category=?, content_hash=?, text_hash=? WHERE rowid=?"
)
_FTS = (
    f"INSERT INTO tools_fts(rowid, {', '.join(LEXICAL_FIELDS)}) "
    f"VALUES({','.join('?' * (len(LEXICAL_FIELDS) + 1))})"
)
_TERMS = "INSERT OR REPLACE INTO tools_terms(rowid, length, terms, tf) VALUES(?,?,?,?)"
_VEC = "INSERT INTO tools_vec(rowid, embedding) VALUES(?, ?)"


def _dumps(value: Any) -> str | None:
    # Key order kept: a schema's property order is how its author presents the parameters.
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _values(entry: IndexEntry) -> tuple[Any, ...]:
    tool = entry.tool
    return (
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


def _vectors(entries: Sequence[IndexEntry], dim: int) -> list[bytes]:
    """Each entry's vector as float32 bytes. Raises: StoreError naming a tool of another shape."""
    out = []
    for entry in entries:
        vector = np.asarray(entry.vector, dtype=np.float32)
        if vector.shape != (dim,):
            raise StoreError(
                f"tool {entry.tool.id!r}: vector has shape {vector.shape}, index wants {dim}"
            )
        out.append(vector.tobytes())
    return out


def _existing(conn: Any, ids: Sequence[str]) -> dict[str, int]:
    found = conn.execute(
        "SELECT id, rowid FROM tools WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in found}


def write_entries(conn: Any, entries: Sequence[IndexEntry], dim: int) -> None:
    """Insert or replace ``entries`` (tools, FTS5 rows, terms, vectors) inside the caller's
    write transaction. Raises: StoreError (a vector of the wrong shape; nothing is written)."""
    last = {entry.tool.id: entry for entry in entries}  # first position, last definition
    batch = list(last.values())
    blobs = _vectors(batch, dim)
    known = _existing(conn, list(last))
    top = conn.execute("SELECT max(rowid) FROM tools").fetchone()[0] or 0
    rowids: list[int] = []
    for entry in batch:
        rowid = known.get(entry.tool.id)
        if rowid is None:
            top += 1
            rowid = top
        rowids.append(rowid)
    old = [rowid for entry, rowid in zip(batch, rowids, strict=True) if entry.tool.id in known]
    if old:
        conn.executemany(
            _UPDATE,
            [(*_values(e), r) for e, r in zip(batch, rowids, strict=True) if e.tool.id in known],
        )
        conn.executemany("DELETE FROM tools_fts WHERE rowid=?", [(r,) for r in old])
        conn.executemany("DELETE FROM tools_vec WHERE rowid=?", [(r,) for r in old])
    conn.executemany(
        _INSERT,
        [
            (r, e.tool.id, *_values(e))
            for e, r in zip(batch, rowids, strict=True)
            if e.tool.id not in known
        ],
    )
    conn.executemany(
        _FTS,
        [
            (r, *(e.fields.get(f, "") for f in LEXICAL_FIELDS))
            for e, r in zip(batch, rowids, strict=True)
        ],
    )
    conn.executemany(_TERMS, [(r, *encode(e.fields)) for e, r in zip(batch, rowids, strict=True)])
    conn.executemany(_VEC, list(zip(rowids, blobs, strict=True)))
