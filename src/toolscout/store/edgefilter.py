"""A search's filters as the keyword conditions a Qdrant payload index answers.

Shared by the embedded store's HNSW shard and the PostgreSQL store's Qdrant leg: both keep the
payload keys ``server``, ``source``, ``item_type``, ``skill_ids`` and ``tool_id``.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolscout.models import Filters


def _fields(filters: Filters) -> list[tuple[str, Sequence[str] | None]]:
    item_types = None if filters.item_types is None else [t.value for t in filters.item_types]
    return [
        ("server", filters.servers),
        ("source", filters.sources),
        ("item_type", item_types),
        ("skill_ids", filters.skill_ids),
        ("tool_id", filters.tool_ids),
    ]


def filter_values(filters: Filters | None) -> list[tuple[str, list[str]]]:
    """(payload key, accepted values) of every restriction ``filters`` makes (all must hold)."""
    if filters is None or filters.is_empty():
        return []
    return [(key, list(values)) for key, values in _fields(filters) if values is not None]


def admits_nothing(filters: Filters | None) -> bool:
    """True when a restriction is an empty list: no point can pass."""
    return any(not values for _, values in filter_values(filters))
