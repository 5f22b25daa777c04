import json
from pathlib import Path

import pytest

from toolscout.errors import IngestError
from toolscout.ingest.jsonfile import load_catalog
from toolscout.models import ItemType

SCHEMA = {"type": "object", "properties": {"repo": {"type": "string", "description": "owner/name"}}}


def _write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_mcp_tools_list_result_loads_with_input_schema(tmp_path: Path) -> None:
    doc = {
        "tools": [{"name": "create_issue", "description": "Open an issue", "inputSchema": SCHEMA}]
    }
    loaded = load_catalog(_write(tmp_path / "gh.json", doc), server="github")
    (tool,) = loaded.tools
    assert (tool.id, tool.server, tool.input_schema) == ("github::create_issue", "github", SCHEMA)
    assert loaded.problems == []


def test_json_rpc_wrapped_prompts_and_resources_get_their_item_types(tmp_path: Path) -> None:
    doc = {
        "result": {
            "prompts": [{"name": "review", "arguments": [{"name": "diff", "required": True}]}],
            "resources": [{"name": "readme", "uri": "file:///README.md"}],
        }
    }
    loaded = load_catalog(_write(tmp_path / "x.json", doc))
    by_name = {t.name: t for t in loaded.tools}
    assert by_name["review"].item_type is ItemType.PROMPT
    assert by_name["review"].input_schema["required"] == ["diff"]  # type: ignore[index]
    assert by_name["readme"].item_type is ItemType.RESOURCE
    assert by_name["readme"].annotations["uri"] == "file:///README.md"


def test_openai_function_tools_wrapped_and_bare_load(tmp_path: Path) -> None:
    doc = [
        {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}},
        {"name": "send_email", "description": "Send mail", "parameters": SCHEMA},
    ]
    loaded = load_catalog(_write(tmp_path / "openai.json", doc))
    assert [t.name for t in loaded.tools] == ["get_weather", "send_email"]
    assert all(t.input_schema == SCHEMA for t in loaded.tools)


def test_anthropic_tools_load_with_input_schema(tmp_path: Path) -> None:
    doc = {"tools": [{"name": "search_web", "description": "Search", "input_schema": SCHEMA}]}
    (tool,) = load_catalog(_write(tmp_path / "anthropic.json", doc)).tools
    assert tool.input_schema == SCHEMA


def test_bench_jsonl_keeps_ids_server_and_category(tmp_path: Path) -> None:
    line = {
        "id": "Data::X::y",
        "name": "y",
        "description": "d",
        "input_schema": None,
        "server": "X",
        "category": "Data",
    }
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(line) + "\n\n", encoding="utf-8")
    (tool,) = load_catalog(path).tools
    assert (tool.id, tool.server, tool.category) == ("Data::X::y", "X", "Data")


def test_malformed_entries_are_reported_with_location_and_field_and_the_rest_loads(
    tmp_path: Path,
) -> None:
    lines = [
        json.dumps({"name": "good", "description": "fine"}),
        "{not json",
        json.dumps({"description": "no name"}),
        json.dumps({"name": "bad_schema", "input_schema": "string"}),
        json.dumps({"name": "wrong_type", "input_schema": {"type": "array"}}),
        json.dumps({"type": "function", "function": {"name": 7}}),
        json.dumps({"name": "good"}),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["good"]
    where = [(p.location.rsplit(":", 1)[-1], p.field) for p in loaded.problems]
    assert where == [
        ("2", "(line)"),
        ("3", "name"),
        ("4", "input_schema"),
        ("5", "input_schema.type"),
        ("6", "function.name"),
        ("7", "id"),
    ]
    assert all(str(path) in p.location for p in loaded.problems)


def test_invalid_json_file_is_a_clear_ingest_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"tools": [', encoding="utf-8")
    with pytest.raises(IngestError, match=r"broken.json.*line 1"):
        load_catalog(path)


def test_binary_file_is_a_clear_ingest_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.json"
    path.write_bytes(b"\xff\xfe\x00\x81junk")
    with pytest.raises(IngestError, match="UTF-8"):
        load_catalog(path)
