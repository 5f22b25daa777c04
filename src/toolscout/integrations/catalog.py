"""Framework tool objects as a toolscout catalog: name, description and input schema each."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolscout.models import Loaded, Problem, Tool


def tool_catalog(
    tools: Iterable[tuple[str, str | None, dict[str, Any] | None]], *, source: str
) -> Loaded:
    """A :class:`Loaded` listing of ``(name, description, input schema)`` triples; the id of
    each tool is ``<source>::<name>``, its server ``source``. Index it with
    ``engine.index([catalog], prune=True)`` so tools dropped from the list leave the index.

    A tool without a name, or a name given twice, is reported as a problem and skipped.
    """
    loaded = Loaded(source=source)
    seen: set[str] = set()
    for name, description, schema in tools:
        if not name or name in seen:
            why = "tool without a name" if not name else f"name {name!r} given twice"
            loaded.problems.append(Problem(source, "name", f"{why}; skipped"))
            continue
        seen.add(name)
        loaded.tools.append(
            Tool(
                id=f"{source}::{name}",
                name=name,
                description=description or "",
                input_schema=schema,
                server=source,
                source=source,
            )
        )
    return loaded


def found_names(engine: Any, query: str, *, source: str, limit: int) -> list[str]:
    """Names of the tools of ``source`` that ``engine`` finds for ``query``, best first.

    Raises:
        QueryError: an empty or over-long query, a limit outside 1..50.
    """
    result = engine.search(query, limit=limit, sources=[source])
    return [hit.tool.name for hit in result.hits]
