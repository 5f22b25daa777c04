"""The framework adapters, through the runnable examples (offline stand-ins for the LLMs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import anyio
import pytest

import toolscout

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_pydantic_ai_model_sees_only_the_found_tools_and_calls_them(
    tmp_path: Path, vector_cache: Path
) -> None:
    demo = example("pydantic_ai_toolset")
    output = demo.main("what's the weather in Berlin?", tmp_path / "p.db", vector_cache)
    assert output == "Sunny in Berlin, 21 °C"
    shown = demo.SEEN[0]
    assert shown[0] == "get_weather" and len(shown) == 2


def test_pydantic_ai_index_prunes_tools_the_toolset_dropped(
    tmp_path: Path, vector_cache: Path
) -> None:
    from pydantic_ai.toolsets import FunctionToolset

    from toolscout.integrations.pydanticai import FoundToolset

    demo = example("pydantic_ai_toolset")
    engine = toolscout.Engine.open(db=str(tmp_path / "q.db"), cache_dir=str(vector_cache))
    try:
        FoundToolset(FunctionToolset([demo.get_weather, demo.send_email]), engine=engine).index()
        report = FoundToolset(FunctionToolset([demo.get_weather]), engine=engine).index()
        assert (report.deleted, report.added) == (1, 0)
    finally:
        engine.close()


@pytest.mark.filterwarnings("ignore:The default value of `allowed_objects`")
def test_bigtool_agent_gets_its_tools_from_the_retrieve_hook(
    tmp_path: Path, vector_cache: Path
) -> None:
    demo = example("bigtool_agent")
    messages = demo.main("convert 20 euros to dollars", tmp_path / "b.db", vector_cache)
    retrieved = next(m for m in messages if m.type == "tool")
    assert retrieved.content.startswith("Available tools: ['convert_currency'")
    assert messages[-1].content == "20 EUR is about 22 USD."
    assert any(m.type == "tool" and "22.00 USD" in m.content for m in messages)


def test_bigtool_async_hook_answers_like_the_sync_one(tmp_path: Path, vector_cache: Path) -> None:
    from toolscout.integrations.bigtool import aretrieve_tools, retrieve_tools
    from toolscout.integrations.catalog import tool_catalog

    engine = toolscout.Engine.open(db=str(tmp_path / "a.db"), cache_dir=str(vector_cache))
    try:
        tools = [("forecast", "Weather forecast for a city", None), ("post", "Post a chat", None)]
        engine.index([tool_catalog(tools, source="langgraph")])
        sync_ids = retrieve_tools(engine, limit=1)("will it rain")
        async_ids = anyio.run(aretrieve_tools(engine, limit=1), "will it rain")
    finally:
        engine.close()
    assert sync_ids == async_ids == ["forecast"]


def test_llamaindex_retriever_returns_the_tool_objects_found(
    tmp_path: Path, vector_cache: Path
) -> None:
    demo = example("llamaindex_retriever")
    assert demo.main("send a note to my team", tmp_path / "l.db", vector_cache) == ["send_email"]


def test_llamaindex_aretrieve_runs_in_a_worker_thread_with_the_same_answer(
    tmp_path: Path, vector_cache: Path
) -> None:
    from llama_index.core.tools import FunctionTool

    from toolscout.integrations.llamaindex import ToolscoutToolRetriever

    demo = example("llamaindex_retriever")
    tools = [FunctionTool.from_defaults(f) for f in (demo.get_weather, demo.create_event)]
    engine = toolscout.Engine.open(db=str(tmp_path / "m.db"), cache_dir=str(vector_cache))
    try:
        retriever = ToolscoutToolRetriever(engine, tools, limit=1)
        found = anyio.run(retriever.aretrieve, "put a meeting in my calendar")
    finally:
        engine.close()
    assert [t.metadata.name for t in found] == ["create_event"]
