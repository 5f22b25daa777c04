"""The few ways SQLite and PostgreSQL SQL differ for the shared tables, as one small object.

Statements are written once with ``?`` placeholders and standard upsert syntax (``INSERT ...
ON CONFLICT ... DO UPDATE``, ``RETURNING``: SQLite has both since 3.35); the dialect turns the
placeholders into the driver's and says how a list of values is matched.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from toolscout.models import Filters


@dataclass(frozen=True)
class Dialect:
    """``placeholder``: the driver's parameter marker; ``arrays``: lists bind as one array
    parameter (``= ANY(%s)``) instead of one marker per value (SQLite, in batches)."""

    name: str
    placeholder: str
    arrays: bool
    #: The integer key of a tool row (``rowid`` / ``doc``), reported as its ``db_id``.
    row_key: str
    #: Values per batch where lists bind value by value (SQLite's parameter limit).
    batch: int = 500

    def sql(self, text: str) -> str:
        """``text`` with ``?`` markers in this dialect's placeholder."""
        return _convert(text, self.placeholder)

    def batches(self, values: Sequence[str]) -> Iterator[list[str]]:
        """``values`` in as few batches as the driver can bind (one with arrays)."""
        if self.arrays:
            if values:
                yield list(values)
            return
        for start in range(0, len(values), self.batch):
            yield list(values[start : start + self.batch])

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition ``column`` is one of ``values`` (``?`` markers), with its parameters."""
        if self.arrays:
            return f"{column} = ANY(?)", [list(values)]
        if not values:
            return "false", []
        return f"{column} IN ({','.join('?' * len(values))})", list(values)


@lru_cache(maxsize=1024)
def _convert(text: str, placeholder: str) -> str:
    return text if placeholder == "?" else text.replace("?", placeholder)


SQLITE = Dialect("sqlite", "?", arrays=False, row_key="rowid")
POSTGRES = Dialect("postgresql", "%s", arrays=True, row_key="doc")


class Database(Protocol):
    """A connection source the shared tables run on."""

    dialect: Dialect

    def transaction(self) -> AbstractContextManager[Any]:
        """One write transaction yielding a connection (``execute``, ``cursor``).

        Raises: StoreError."""
        ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of one read (``sql`` already in the dialect). Raises: StoreError."""
        ...


def where(filters: Filters | None, dialect: Dialect, alias: str = "t") -> tuple[str, list[Any]]:
    """SQL condition (in ``dialect``'s placeholders) restricting tools ``alias`` to ``filters``;
    ``true`` when there is nothing to restrict."""
    if filters is None or filters.is_empty():
        return "true", []
    parts: list[str] = []
    params: list[Any] = []
    columns: list[tuple[str, Sequence[str] | None]] = [
        ("server", filters.servers),
        ("source", filters.sources),
        (
            "item_type",
            None if filters.item_types is None else [t.value for t in filters.item_types],
        ),
        ("id", filters.tool_ids),
    ]
    for column, values in columns:
        if values is not None:
            cond, more = dialect.any_of(f"{alias}.{column}", values)
            parts.append(cond)
            params.extend(more)
    if filters.skill_ids is not None:
        cond, more = dialect.any_of("skill_id", filters.skill_ids)
        parts.append(f"{alias}.id IN (SELECT tool_id FROM tool_skills WHERE {cond})")
        params.extend(more)
    return dialect.sql(" AND ".join(parts)), params
