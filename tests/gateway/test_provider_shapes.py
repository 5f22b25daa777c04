"""Provider names and shapes: valid for Anthropic and OpenAI, checked against the SDKs' own
types (no network), and reversible to toolscout ids. The docs' worked examples run here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import ToolParam, ToolReferenceBlockParam, ToolResultBlockParam
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam, NamespaceToolParam
from pydantic import TypeAdapter

from toolscout.engine import Engine
from toolscout.formats.names import NameMap, provider_name, tool_id_from_name
from toolscout.models import SearchRequest, Strategy, Tool

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
IDS = [
    "github::create_issue",
    "fs::read-file",
    "files::prompt:summarise",
    "files::resource:file:///tmp/a b.txt",
    "a__b",
    "a_::b",
    "x:::y",
    "déjà::vu",
    "plain",
    "_lead::trail_",
    "srv::" + "very_long_tool_name_" * 6,
]


@pytest.mark.parametrize("tool_id", IDS)
def test_provider_names_are_valid_and_map_back_to_the_id(tool_id: str) -> None:
    name = provider_name(tool_id)
    assert PROVIDER_NAME.match(name)
    assert NameMap([tool_id]).tool_id(name) == tool_id
    if len(name) < 64:
        assert tool_id_from_name(name) == tool_id


def test_distinct_ids_never_share_a_name() -> None:
    names = [provider_name(i) for i in IDS]
    assert len(set(names)) == len(names)
    assert provider_name("github::create_issue") == "github__create_issue"
    assert tool_id_from_name("not-an-escape") is None


def test_every_indexed_id_gets_a_valid_reversible_name(gw_engine: Engine) -> None:
    tools, _ = gw_engine.list_tools(limit=500)
    assert tools
    for tool in tools:
        name = provider_name(tool.id)
        assert PROVIDER_NAME.match(name) and tool_id_from_name(name) == tool.id


def _hits(engine: Engine) -> Any:
    return engine.search("what time is it in Tokyo", limit=4)


def test_anthropic_shapes_validate_against_the_sdk_types(gw_engine: Engine) -> None:
    shaped = _hits(gw_engine).to_anthropic()
    tools = TypeAdapter(list[ToolParam]).validate_python(shaped.tools)
    assert all(t["defer_loading"] is True for t in tools)
    result: ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": shaped.references,
    }
    TypeAdapter(ToolResultBlockParam).validate_python(result)
    TypeAdapter(list[ToolReferenceBlockParam]).validate_python(shaped.references)
    first = shaped.references[0]["tool_name"]
    assert shaped.tool_id(first) == _hits(gw_engine).hits[0].tool.id


def test_openai_shapes_validate_against_the_sdk_types(gw_engine: Engine) -> None:
    result = _hits(gw_engine)
    chat = result.to_openai()
    TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(chat.tools)
    responses = result.to_openai(api="responses")
    TypeAdapter(list[FunctionToolParam]).validate_python(responses.tools)
    grouped = result.to_openai(api="responses", by_server=True)
    spaces = TypeAdapter(list[NamespaceToolParam]).validate_python(grouped.tools)
    assert {s["name"] for s in spaces} == {h.tool.server for h in result.hits}
    name = chat.tools[0]["function"]["name"]
    assert chat.tool_id(name) == result.hits[0].tool.id


def test_hierarchical_results_map_skills_to_namespaces(gw_engine: Engine) -> None:
    found = gw_engine.find(
        SearchRequest("what time is it in Tokyo", limit=3, strategy=Strategy.HIERARCHICAL)
    )
    shaped = found.to_openai(api="responses")
    TypeAdapter(list[NamespaceToolParam]).validate_python(shaped.tools)
    TypeAdapter(list[ToolParam]).validate_python(found.to_anthropic().tools)


def test_a_tool_without_schema_still_gets_an_object_schema() -> None:
    from toolscout.formats import to_anthropic, to_openai

    bare = Tool(id="srv::ping", name="ping")
    TypeAdapter(list[ToolParam]).validate_python(to_anthropic([bare]).tools)
    TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(to_openai([bare]).tools)


def _doc_examples() -> list[str]:
    text = (Path(__file__).parents[2] / "docs" / "serving.md").read_text(encoding="utf-8")
    section = text[text.index("### Provider shapes") : text.index("## REST API")]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_documented_sdk_examples_produce_valid_sdk_shapes(
    gateway_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic_example, openai_example = _doc_examples()
    monkeypatch.setenv("TOOLSCOUT_CACHE_DIR", gateway_settings.cache_dir)
    scope: dict[str, Any] = {}
    exec(anthropic_example.replace('"tools.db"', repr(gateway_settings.db)), scope)
    try:
        exec(openai_example, scope)
    finally:
        scope["engine"].close()
    TypeAdapter(list[ToolParam]).validate_python(scope["tools"])
    TypeAdapter(ToolResultBlockParam).validate_python(scope["search_result"])
    assert scope["tool_id"] == "time::get_current_time"
    TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(scope["chat_tools"])
    TypeAdapter(list[NamespaceToolParam]).validate_python(scope["responses_tools"])


def test_rest_format_answers_with_sdk_valid_tool_definitions(
    gw_engine: Engine, gateway_settings: Any
) -> None:
    from fastapi.testclient import TestClient

    from toolscout.api.http import create_app

    app = create_app(gw_engine, gateway_settings)
    # A loopback Host, as a real local client sends (the Host allow-list refuses "testserver").
    with TestClient(app, client=("127.0.0.1", 5000), base_url="http://localhost") as c:
        params: dict[str, str | int] = {"query": "what time is it in Tokyo", "limit": 3}
        plain = c.get("/api/v1/search", params=params).json()
        anthropic = c.get("/api/v1/search", params=params | {"format": "anthropic"}).json()
        chat = c.post("/api/v1/search?format=openai", json=params | {"strategy": "direct"})
        grouped = c.get(
            "/api/v1/search",
            params=params | {"format": "openai-responses", "group_by": "server"},
        ).json()
        wrong = c.get("/api/v1/search", params=params | {"format": "gemini"})
    assert anthropic["format"] == "anthropic"
    TypeAdapter(list[ToolParam]).validate_python(anthropic["tools"])
    TypeAdapter(list[ToolReferenceBlockParam]).validate_python(anthropic["tool_references"])
    first = anthropic["tools"][0]["name"]
    assert anthropic["names"][first] == plain["tools"][0]["id"]
    assert chat.status_code == 200
    TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(chat.json()["tools"])
    spaces = TypeAdapter(list[NamespaceToolParam]).validate_python(grouped["tools"])
    assert {s["name"] for s in spaces} <= {
        provider_name(t["id"].split("::")[0]) for t in plain["tools"]
    }
    assert wrong.status_code == 422
    assert "format" in wrong.text and "anthropic" in wrong.text


def test_cli_format_prints_sdk_valid_tool_definitions(
    gateway_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from typer.testing import CliRunner

    from toolscout.cli import _register, app

    _register()
    monkeypatch.setenv("TOOLSCOUT_CACHE_DIR", gateway_settings.cache_dir)
    base = ["search", "list my git branches", "--db", gateway_settings.db, "--limit", "3"]
    runner = CliRunner()
    anthropic = runner.invoke(app, [*base, "--format", "anthropic"])
    assert anthropic.exit_code == 0, anthropic.output
    shaped = json.loads(anthropic.stdout)
    TypeAdapter(list[ToolParam]).validate_python(shaped["tools"])
    assert all(tool_id_from_name(n) == i for n, i in shaped["names"].items() if len(n) < 64)
    responses = runner.invoke(app, [*base, "--format", "openai-responses", "--group-by", "server"])
    assert responses.exit_code == 0, responses.output
    TypeAdapter(list[NamespaceToolParam]).validate_python(json.loads(responses.stdout)["tools"])
    wrong = runner.invoke(app, [*base, "--format", "gemini"])
    assert wrong.exit_code == 2 and "anthropic" in wrong.output
