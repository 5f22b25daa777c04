"""Validation of a search request: every field checked, the error naming the field and the fix.

One function for every door (Python, REST, MCP, CLI, console): :func:`validate`, run once per
search by ``SearchService.lookup``; the stages after it take its typed values as they are
(:func:`check_query` is its query check, for callers that take a bare query).
Doors that receive names as text parse them with :func:`parse_strategy`, :func:`parse_mode` and
:func:`parse_item_type`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from enum import StrEnum
from typing import TypeVar

from toolscout.errors import EmptyQuery, QueryError
from toolscout.models import ItemType, SearchMode, SearchRequest, Strategy

#: Longest query accepted, in characters.
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 50
MAX_SKILL_LIMIT = 20


def validate(request: SearchRequest) -> SearchRequest:
    """Check every field; returns the request with a stripped query and parsed enums.

    Raises:
        QueryError: naming the field (query, limit, skill_limit, skill_threshold, skill_coverage,
        tool_threshold, min_score, strategy, mode, item_type, servers, sources).
    """
    text = check_query(request.query)
    _int_in("limit", request.limit, 1, MAX_LIMIT)
    _int_in("skill_limit", request.skill_limit, 1, MAX_SKILL_LIMIT)
    _unit("skill_threshold", request.skill_threshold)
    _unit("skill_coverage", request.skill_coverage)
    _unit("tool_threshold", request.tool_threshold)
    _unit("min_score", request.min_score)
    strategy = _enum("strategy", Strategy, request.strategy)
    mode = _enum("mode", SearchMode, request.mode)
    item_type = request.item_type
    if item_type is not None:
        item_type = _enum("item_type", ItemType, item_type, none="or null")
    for name in ("servers", "sources"):
        value = getattr(request, name)
        if value is not None and (
            isinstance(value, str) or not all(isinstance(v, str) for v in value)
        ):
            raise QueryError(name, "must be a list of names or null")
    return replace(
        request,
        query=text,
        strategy=strategy,
        mode=mode,
        item_type=item_type,
        servers=tuple(request.servers) if request.servers is not None else None,
        sources=tuple(request.sources) if request.sources is not None else None,
    )


def check_query(query: str) -> str:
    """Validate and strip a query.

    Raises:
        QueryError: empty, or longer than MAX_QUERY_CHARS.
    """
    if not isinstance(query, str):
        raise QueryError("query", "must be a string")
    text = query.strip()
    # A byte-order mark is blank to JSON Schema's ``\s`` though not to str.strip: the OpenAPI
    # document's pattern and this check must agree on what a blank query is.
    if not text or all(c == "\ufeff" or c.isspace() for c in text):
        raise EmptyQuery()
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(
            "query", f"is {len(query)} characters; the limit is {MAX_QUERY_CHARS}, shorten it"
        )
    return text


E = TypeVar("E", bound=StrEnum)


def check_page(offset: int, limit: int) -> None:
    """A page of a listing. Raises: QueryError (offset below 0, limit outside 1..500)."""
    if offset < 0:
        raise QueryError("offset", f"must be 0 or more, got {offset}")
    if not 1 <= limit <= 500:
        raise QueryError("limit", f"must be between 1 and 500, got {limit}")


def parse_item_type(value: object) -> ItemType:
    """Raises: QueryError naming ``item_type`` and its allowed values."""
    return _enum("item_type", ItemType, value)


def parse_strategy(value: object) -> Strategy:
    """Raises: QueryError naming ``strategy`` and its allowed values."""
    return _enum("strategy", Strategy, value)


def parse_mode(value: object) -> SearchMode:
    """Raises: QueryError naming ``mode`` and its allowed values."""
    return _enum("mode", SearchMode, value)


def _enum(name: str, kind: type[E], value: object, none: str = "") -> E:
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value)) if isinstance(value, str) else kind(value)  # type: ignore[arg-type]
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        extra = f" {none}" if none else ""
        raise QueryError(name, f"must be one of {allowed}{extra}; got {value!r}") from None


def _int_in(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise QueryError(name, f"must be an integer from {low} to {high}; got {value!r}")


def _unit(name: str, value: object) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        raise QueryError(name, f"must be a number from 0 to 1; got {value!r}")
