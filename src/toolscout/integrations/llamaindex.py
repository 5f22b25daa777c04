"""LlamaIndex: toolscout as an agent's ``tool_retriever``.

::

    retriever = ToolscoutToolRetriever(engine, tools, limit=3)   # indexes the tools once
    agent = FunctionAgent(tool_retriever=retriever, llm=llm)

``retrieve`` / ``aretrieve`` return the LlamaIndex tool objects toolscout ranks best.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio.to_thread
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.objects import ObjectRetriever, SimpleToolNodeMapping
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import BaseTool

from toolscout.engine import Engine
from toolscout.integrations.catalog import tool_catalog

SOURCE = "llamaindex"


class _EngineRetriever(BaseRetriever):
    """Nodes for the tools ``engine`` finds; the node's ``name`` metadata maps it back."""

    def __init__(self, engine: Engine, *, limit: int, source: str) -> None:
        super().__init__()
        self._engine = engine
        self._limit = limit
        self._source = source

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self._engine.search(
            query_bundle.query_str[:1000], limit=self._limit, sources=[self._source]
        )
        return [
            NodeWithScore(
                node=TextNode(
                    id_=h.tool.id, text=h.tool.description, metadata={"name": h.tool.name}
                ),
                score=h.score,
            )
            for h in result.hits
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await anyio.to_thread.run_sync(self._retrieve, query_bundle)


class ToolscoutToolRetriever(ObjectRetriever[BaseTool]):
    """An :class:`ObjectRetriever` of LlamaIndex tools backed by a toolscout engine."""

    def __init__(
        self,
        engine: Engine,
        tools: Sequence[BaseTool],
        *,
        limit: int = 5,
        source: str = SOURCE,
        index: bool = True,
    ) -> None:
        """Raises: StoreError, EmbedError (indexing the tools)."""
        if index:
            catalog = tool_catalog(
                (
                    (t.metadata.name, t.metadata.description, _schema(t))
                    for t in tools
                    if t.metadata.name
                ),
                source=source,
            )
            engine.index([catalog], prune=True)
        super().__init__(
            retriever=_EngineRetriever(engine, limit=limit, source=source),
            object_node_mapping=SimpleToolNodeMapping.from_objects(list(tools)),
        )


def _schema(tool: BaseTool) -> dict[str, Any] | None:
    fn_schema = tool.metadata.fn_schema
    return fn_schema.model_json_schema() if fn_schema is not None else None
