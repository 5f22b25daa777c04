"""Thin adapters for agent frameworks; each is an optional extra and one engine call per use.

=====================  ==========================================  =========================
framework              adapter                                     install
=====================  ==========================================  =========================
pydantic-ai            :class:`~.pydanticai.FoundToolset`          ``toolscout[pydantic-ai]``
LangGraph bigtool      :func:`~.bigtool.retrieve_tools`            ``toolscout[langgraph]``
LlamaIndex             :class:`~.llamaindex.ToolscoutToolRetriever`  ``toolscout[llamaindex]``
=====================  ==========================================  =========================

Each indexes the framework's own tool objects with :func:`~.catalog.tool_catalog` (a name,
a description and a JSON Schema per tool) and answers with those objects, found by
:meth:`toolscout.Engine.search`; the async paths run the search in a worker thread.
"""
