"""Reads of tool rows shared by the SQL stores (``get``, ``get_many``, ``get_light``,
``names``, ``name_page``, ``schemas``, ``hashes``, ``list_tools``, ``counts_by``)."""

from __future__ import annotations

from collections.abc import Sequence

from toolscout.errors import ToolNotFound
from toolscout.models import JSON, Filters, Tool
from toolscout.store.sql.dialect import Database, where
from toolscout.store.sql.rows import (
    GROUPABLE,
    LIGHT_COLUMNS,
    TOOL_COLUMNS,
    decode_schema,
    row_to_light_tool,
    row_to_tool,
)


class ToolRows:
    """Tool reads over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.d = db.dialect

    def get(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound, StoreError."""
        rows = self.db.query(
            self.d.sql(f"SELECT {TOOL_COLUMNS} FROM tools t WHERE t.id = ?"), (tool_id,)
        )
        if not rows:
            raise ToolNotFound(tool_id)
        return row_to_tool(rows[0])

    def _by_ids(self, columns: str, ids: Sequence[str]) -> list[tuple[object, ...]]:
        out: list[tuple[object, ...]] = []
        for batch in self.d.batches(ids):
            cond, params = self.d.any_of("t.id", batch)
            out.extend(
                self.db.query(self.d.sql(f"SELECT {columns} FROM tools t WHERE {cond}"), params)
            )
        return out

    def get_many(self, ids: Sequence[str]) -> dict[str, Tool]:
        """Tools by id (unknown ids are left out). Raises: StoreError."""
        return {str(r[0]): row_to_tool(r) for r in self._by_ids(TOOL_COLUMNS, ids)}

    def get_light(self, ids: Sequence[str]) -> dict[str, Tool]:
        """Tools without their schemas. Raises: StoreError."""
        return {str(r[0]): row_to_light_tool(r) for r in self._by_ids(LIGHT_COLUMNS, ids)}

    def light_rows(self, ids: Sequence[str]) -> dict[str, tuple[Tool, int]]:
        """Tools without their schemas, with their row keys. Raises: StoreError."""
        columns = f"{LIGHT_COLUMNS}, t.{self.d.row_key}"
        return {
            str(r[0]): (row_to_light_tool(r), int(r[9]))  # type: ignore[call-overload]
            for r in self._by_ids(columns, ids)
        }

    def names(self, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """Names and servers by tool id. Raises: StoreError."""
        rows = self._by_ids("t.id, t.name, t.server", ids)
        return {str(r[0]): (str(r[1]), None if r[2] is None else str(r[2])) for r in rows}

    def name_page(self, after: str, limit: int) -> list[tuple[str, str, str | None]]:
        """``(id, name, server)`` of up to ``limit`` tools in id order, ids past ``after``
        (``""``: from the first). Raises: StoreError."""
        rows = self.db.query(
            self.d.sql("SELECT id, name, server FROM tools WHERE id > ? ORDER BY id LIMIT ?"),
            (after, limit),
        )
        return [(str(r[0]), str(r[1]), None if r[2] is None else str(r[2])) for r in rows]

    def schemas(self, ids: Sequence[str]) -> dict[str, JSON | None]:
        """Input schemas by tool id. Raises: StoreError."""
        rows = self._by_ids("t.id, t.input_schema", ids)
        return {str(r[0]): decode_schema(r[1]) for r in rows}

    def hashes(self, filters: Filters | None = None) -> dict[str, tuple[str, str]]:
        """Raises: StoreError."""
        cond, params = where(filters, self.d)
        rows = self.db.query(
            f"SELECT t.id, t.content_hash, t.text_hash FROM tools t WHERE {cond}", params
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def list_tools(
        self, filters: Filters | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[Tool]:
        """Tools in id order. Raises: StoreError."""
        cond, params = where(filters, self.d)
        rows = self.db.query(
            f"SELECT {TOOL_COLUMNS} FROM tools t WHERE {cond} ORDER BY t.id "
            + self.d.sql("LIMIT ? OFFSET ?"),
            [*params, limit, offset],
        )
        return [row_to_tool(r) for r in rows]

    def counts_by(self, column: str) -> dict[str, int]:
        """Raises: ValueError for a column that cannot be grouped by; StoreError."""
        if column not in GROUPABLE:
            raise ValueError(f"cannot group by {column!r}")
        rows = self.db.query(f"SELECT {column}, count(*) FROM tools GROUP BY {column}")
        return {str(r[0]): int(r[1]) for r in rows}

    def ids_where(self, column: str, value: str) -> list[str]:
        """Raises: ValueError for a column that cannot be grouped by; StoreError."""
        if column not in GROUPABLE:
            raise ValueError(f"cannot select by {column!r}")
        sql = self.d.sql(f"SELECT id FROM tools WHERE {column} = ? ORDER BY id")
        return [str(r[0]) for r in self.db.query(sql, [value])]
