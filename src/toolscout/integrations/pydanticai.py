"""pydantic-ai: a toolset that shows the model only the tools toolscout finds for the prompt.

::

    tools = FunctionToolset([get_weather, send_email, ...])          # or any toolset
    found = FoundToolset(tools, engine=engine, limit=3)
    found.index()                                                      # once, or after changes
    agent = Agent(model, toolsets=[found])

Every model request of a run sees the wrapped toolset's tools that ``engine.search`` ranks in
its top ``limit`` for the run's prompt; calls go to the wrapped toolset unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from pydantic_ai import RunContext
from pydantic_ai.toolsets import FunctionToolset, ToolsetTool, WrapperToolset

from toolscout.engine import Engine
from toolscout.integrations.catalog import found_names, tool_catalog
from toolscout.models import IndexReport

SOURCE = "pydantic-ai"


@dataclass
class FoundToolset(WrapperToolset[Any]):
    """Wraps ``wrapped``; each step exposes only the tools found for the run's prompt."""

    engine: Engine = field(kw_only=True)
    limit: int = field(default=5, kw_only=True)
    source: str = field(default=SOURCE, kw_only=True)

    def index(self) -> IndexReport:
        """Index the wrapped :class:`FunctionToolset`'s tools (unchanged ones are not embedded;
        tools it no longer has are deleted).

        Raises:
            TypeError: the wrapped toolset lists its tools only during a run (index it with
                :func:`~toolscout.integrations.catalog.tool_catalog` from its definitions).
            StoreError, EmbedError: from the engine.
        """
        if not isinstance(self.wrapped, FunctionToolset):
            raise TypeError("index() reads a FunctionToolset; use tool_catalog() for others")
        defs = [t.tool_def for t in self.wrapped.tools.values()]
        catalog = tool_catalog(
            ((d.name, d.description, d.parameters_json_schema) for d in defs), source=self.source
        )
        return self.engine.index([catalog], prune=True)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools = await super().get_tools(ctx)
        query = _prompt_text(ctx.prompt)
        if not query:
            return tools
        names = await anyio.to_thread.run_sync(
            lambda: found_names(self.engine, query, source=self.source, limit=self.limit)
        )
        return {name: tools[name] for name in names if name in tools}


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt.strip()[:1000]
    if isinstance(prompt, list | tuple):
        return " ".join(p for p in prompt if isinstance(p, str)).strip()[:1000]
    return ""


__all__ = ["SOURCE", "FoundToolset"]
