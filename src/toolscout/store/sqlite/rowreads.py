"""Reads of tool-keyed rows by rowid, for the copies a leg keeps beside the rows (the HNSW
shard, the posting index): every row in chunks, or the rows of some rowids and which are gone.

``select`` is a ``SELECT`` over the ``tools`` table aliased ``t``, without ``WHERE`` or
``ORDER BY``; ``make`` turns one result row into the caller's record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

#: Rowids asked for in one ``IN (...)`` list.
BATCH = 500


class HasRowid(Protocol):
    @property
    def rowid(self) -> int: ...


R = TypeVar("R", bound=HasRowid)


def in_chunks(
    conn: Any, select: str, make: Callable[[Sequence[Any]], R], size: int
) -> Iterator[list[R]]:
    """Every row, ``size`` at a time, in rowid order (inside the caller's transaction)."""
    cursor = conn.execute(f"{select} ORDER BY t.rowid")
    while True:
        chunk = cursor.fetchmany(size)
        if not chunk:
            return
        yield [make(r) for r in chunk]


def of_rowids(
    conn: Any, select: str, make: Callable[[Sequence[Any]], R], rowids: Sequence[int]
) -> tuple[list[R], list[int]]:
    """The present rows among ``rowids`` and the rowids that are gone."""
    found: list[R] = []
    for start in range(0, len(rowids), BATCH):
        batch = list(rowids[start : start + BATCH])
        marks = ",".join("?" * len(batch))
        found.extend(make(r) for r in conn.execute(f"{select} WHERE t.rowid IN ({marks})", batch))
    present = {r.rowid for r in found}
    return found, [r for r in rowids if r not in present]
