"""LangGraph bigtool: toolscout as the ``retrieve_tools`` hook of ``create_agent``.

::

    registry = {tool.name: tool for tool in my_langchain_tools}
    index_tools(engine, registry)
    agent = create_agent(llm, registry, retrieve_tools_function=retrieve_tools(engine),
                         retrieve_tools_coroutine=aretrieve_tools(engine)).compile()

The hook returns registry keys (the tools' names), best first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio.to_thread

from toolscout.engine import Engine
from toolscout.integrations.catalog import found_names, tool_catalog
from toolscout.models import IndexReport

SOURCE = "langgraph"


def index_tools(
    engine: Engine, registry: Mapping[str, Any], *, source: str = SOURCE
) -> IndexReport:
    """Index a bigtool registry (id -> LangChain tool or plain function) under its ids.

    Raises:
        StoreError, EmbedError: from the engine.
    """

    def schema(tool: Any) -> dict[str, Any] | None:
        get = getattr(tool, "get_input_jsonschema", None)
        return get() if callable(get) else None

    def description(tool: Any) -> str:
        return str(getattr(tool, "description", None) or getattr(tool, "__doc__", None) or "")

    catalog = tool_catalog(
        ((key, description(tool), schema(tool)) for key, tool in registry.items()), source=source
    )
    return engine.index([catalog], prune=True)


def retrieve_tools(
    engine: Engine, *, limit: int = 5, source: str = SOURCE
) -> Callable[[str], list[str]]:
    """The synchronous hook: a query in, registry ids out."""

    def retrieve_tools(query: str) -> list[str]:
        """Find the tools that can do what the query describes.

        Args:
            query: What you want to do, in plain words.
        """
        return found_names(engine, query, source=source, limit=limit)

    return retrieve_tools


def aretrieve_tools(
    engine: Engine, *, limit: int = 5, source: str = SOURCE
) -> Callable[[str], Awaitable[list[str]]]:
    """The async hook: the same search in a worker thread."""
    find = retrieve_tools(engine, limit=limit, source=source)

    async def retrieve_tools_async(query: str) -> list[str]:
        """Find the tools that can do what the query describes.

        Args:
            query: What you want to do, in plain words.
        """
        return await anyio.to_thread.run_sync(find, query)

    return retrieve_tools_async
