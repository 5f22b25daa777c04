"""A tool's analysed terms as the ``tools_terms`` row the in-memory lexical leg is built from,
written in the tool's own transaction (FTS5's table is contentless: it cannot give them back).

A row holds the tool's token count (FTS5's document length ``D``), its distinct terms
(space-separated, in order of first appearance) and one little-endian ``uint32`` record per
(term, field) pair: ``term index << 11 | field << 8 | count``. A count above 255 is split over
several records (their sum is the count). Terms are FTS5's own tokens of the field texts
(:func:`toolscout.store.fts5.fts5_tokens`), so frequencies and lengths are FTS5's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolscout.errors import StoreError
from toolscout.store.base import LEXICAL_FIELDS
from toolscout.store.fts5 import fts5_tokens
from toolscout.store.sqlite.rowreads import in_chunks, of_rowids

#: Bits of a record: the count (8), the field (3), the term's index within the row (21).
_COUNT_BITS, _FIELD_BITS = 8, 3
_MAX_TERMS = 1 << (32 - _COUNT_BITS - _FIELD_BITS)
assert len(LEXICAL_FIELDS) <= 1 << _FIELD_BITS
RECORD = np.dtype("<u4")

_SELECT = (
    "SELECT t.rowid, t.id, x.length, x.terms, x.tf FROM tools t "
    "JOIN tools_terms x ON x.rowid = t.rowid"
)
#: Rows read per step of a load or a catch-up.
CHUNK = 5000


@dataclass(frozen=True)
class TermsRow:
    """One tool's ``tools_terms`` row, with its tool id."""

    rowid: int
    tool_id: str
    length: int
    terms: str
    tf: bytes


def encode(fields: Mapping[str, str]) -> tuple[int, str, bytes]:
    """``(length, terms, tf)`` of a tool's analysed fields. Raises: StoreError when a tool has
    more distinct terms than a record can number (two million)."""
    order: dict[str, int] = {}
    records: list[int] = []
    length = 0
    for col, name in enumerate(LEXICAL_FIELDS):
        tokens = fts5_tokens(fields.get(name, ""))
        length += len(tokens)
        # Counter keeps first appearances in order: terms are numbered as the tokens come.
        for token, count in Counter(tokens).items():
            index = order.setdefault(token, len(order))
            while count > 0:
                part = min(count, 255)
                records.append(index << (_COUNT_BITS + _FIELD_BITS) | col << _COUNT_BITS | part)
                count -= part
    if len(order) > _MAX_TERMS:
        raise StoreError(f"a tool has {len(order)} distinct terms; at most {_MAX_TERMS} fit")
    return length, " ".join(order), np.asarray(records, dtype=RECORD).tobytes()


def decode(tf: bytes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(term index within its row, field, count) of every record in ``tf``."""
    raw = np.frombuffer(tf, dtype=RECORD)
    index = (raw >> (_COUNT_BITS + _FIELD_BITS)).astype(np.int64)
    field = ((raw >> _COUNT_BITS) & ((1 << _FIELD_BITS) - 1)).astype(np.intp)
    count = (raw & ((1 << _COUNT_BITS) - 1)).astype(np.float64)
    return index, field, count


def _row(raw: Sequence[Any]) -> TermsRow:
    return TermsRow(int(raw[0]), str(raw[1]), int(raw[2]), str(raw[3]), bytes(raw[4]))


def all_rows(conn: Any) -> Iterator[list[TermsRow]]:
    """Every tool's terms row, in chunks, in rowid order (inside the caller's transaction)."""
    return in_chunks(conn, _SELECT, _row, CHUNK)


def rows_of(conn: Any, rowids: Sequence[int]) -> tuple[list[TermsRow], list[int]]:
    """The present rows among ``rowids`` and the rowids that are gone."""
    return of_rowids(conn, _SELECT, _row, rowids)


def fts5_totals(conn: Any) -> tuple[int, int]:
    """FTS5's own row count and token total, which its ``bm25()`` takes ``N`` and ``avgdl``
    from: the table's averages record (id 1 of ``tools_fts_data``: varints, the row count
    then one token total per column). For a ``contentless_delete`` table FTS5 never lowers
    them on a delete, so they count every row ever inserted; reading them keeps that quirk."""
    found = conn.execute("SELECT block FROM tools_fts_data WHERE id=1").fetchone()
    if found is None or not found[0]:
        return 0, 0
    values = varints(bytes(found[0]))
    return values[0], sum(values[1:])


def varints(data: bytes) -> list[int]:
    """SQLite's big-endian varints (seven bits a byte; a ninth byte carries eight)."""
    out: list[int] = []
    i = 0
    while i < len(data):
        value = 0
        for n in range(9):
            byte = data[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out
