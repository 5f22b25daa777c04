"""Tool rows: the columns read, and rows turned back into :class:`~toolscout.models.Tool`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from toolscout.models import JSON, ItemType, Tool

TOOL_COLUMNS = (
    "t.id, t.name, t.description, t.input_schema, t.output_schema, t.annotations, "
    "t.item_type, t.server, t.source, t.category"
)
#: Everything but the schemas: the cheap load for ranked results.
LIGHT_COLUMNS = (
    "t.id, t.name, t.description, t.annotations, t.item_type, t.server, t.source, t.category, "
    "t.content_hash"
)
GROUPABLE = frozenset({"server", "source", "item_type", "category"})


def _json(raw: str | None) -> Any:
    return None if raw is None else json.loads(raw)


def row_to_tool(row: Sequence[Any]) -> Tool:
    """A tool from ``TOOL_COLUMNS``."""
    return Tool(
        id=row[0],
        name=row[1],
        description=row[2],
        input_schema=_json(row[3]),
        output_schema=_json(row[4]),
        annotations=json.loads(row[5]),
        item_type=ItemType(row[6]),
        server=row[7],
        source=row[8],
        category=row[9],
    )


def row_to_light_tool(row: Sequence[Any]) -> Tool:
    """A tool without schemas from ``LIGHT_COLUMNS``, with its stored content hash (it covers
    the schemas this load leaves out; nothing is hashed again)."""
    return Tool.stored(
        row[8],
        id=row[0],
        name=row[1],
        description=row[2],
        annotations=json.loads(row[3]),
        item_type=ItemType(row[4]),
        server=row[5],
        source=row[6],
        category=row[7],
    )


def decode_schema(raw: Any) -> JSON | None:
    """A stored input schema, or None when it is missing or cannot be decoded (a schema
    written by another version or damaged on disk must not sink a whole result)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def now_iso() -> str:
    """UTC timestamp used for created/updated times (second precision, ISO 8601)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()
