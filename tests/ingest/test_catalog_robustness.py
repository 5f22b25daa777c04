"""Hostile or damaged catalog files cost only the entries that are damaged, with a message that
names where and what to fix; nothing raises past the loader but IngestError."""

import json
from pathlib import Path

import pytest

from toolscout.errors import IngestError
from toolscout.ingest.jsonfile import load_catalog

MAX_DEPTH = 64  # the documented nesting limit (ingest/entries.py)


def _tool(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "description": f"does {name}", **extra}


def _jsonl(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"\n".join(x if isinstance(x, bytes) else x.encode() for x in lines))
    return path


def test_a_jsonl_line_that_is_not_an_object_costs_only_that_line(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "c.jsonl",
        [json.dumps(_tool("a")), '"just a string"', "42", "null", json.dumps(_tool("b"))],
    )
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["a", "b"]
    assert [p.location for p in loaded.problems] == [f"{path}:2", f"{path}:3", f"{path}:4"]
    assert "expected a JSON object" in loaded.problems[0].message


def test_deep_nesting_is_a_problem_not_a_recursion_error(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    path = _jsonl(tmp_path / "c.jsonl", [json.dumps(_tool("a")), deep])
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["a"]
    assert "nested too deeply" in loaded.problems[0].message
    whole = tmp_path / "deep.json"
    whole.write_text(deep, encoding="utf-8")
    with pytest.raises(IngestError, match="nested too deeply"):
        load_catalog(whole)


def test_a_schema_nested_past_the_limit_skips_that_entry_and_names_the_field(
    tmp_path: Path,
) -> None:
    schema: dict[str, object] = {"type": "object"}
    inner = schema
    for _ in range(MAX_DEPTH + 5):
        child: dict[str, object] = {"type": "object"}
        inner["properties"] = {"x": child}
        inner = child
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_tool("deep", inputSchema=schema), _tool("ok")]), encoding="utf-8")
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["ok"]
    (problem,) = loaded.problems
    assert problem.field.startswith("inputSchema.properties.x")
    assert f"more than {MAX_DEPTH} levels" in problem.message


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_rejected_with_their_path(tmp_path: Path, literal: str) -> None:
    bad = (
        '{"name": "bad", "inputSchema": {"type": "object", "properties": '
        '{"n": {"type": "number", "default": ' + literal + "}}}}"
    )
    path = tmp_path / "c.json"
    path.write_text(f"[{bad}, {json.dumps(_tool('ok'))}]", encoding="utf-8")
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["ok"]
    (problem,) = loaded.problems
    assert problem.field == "inputSchema.properties.n.default"
    assert literal in problem.message and "finite number" in problem.message


def test_a_non_utf8_jsonl_line_costs_only_that_line(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "c.jsonl",
        [json.dumps(_tool("a")), b'{"name": "caf\xe9"}', json.dumps(_tool("b"))],
    )
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["a", "b"]
    (problem,) = loaded.problems
    assert problem.location == f"{path}:2" and "not UTF-8" in problem.message


def test_a_non_utf8_json_file_is_an_ingest_error_that_says_how_to_fix_it(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b'[{"name": "caf\xe9"}]')
    with pytest.raises(IngestError, match=r"not UTF-8.*save it as UTF-8"):
        load_catalog(path)


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([_tool("a")]).encode())
    assert [t.name for t in load_catalog(path).tools] == ["a"]


def test_a_truncated_jsonl_file_keeps_every_complete_line(tmp_path: Path) -> None:
    full = "\n".join(json.dumps(_tool(f"t{i}")) for i in range(5))
    path = tmp_path / "c.jsonl"
    path.write_text(full[:-7], encoding="utf-8")  # as a writer caught mid-line would leave it
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["t0", "t1", "t2", "t3"]
    assert loaded.problems[0].location == f"{path}:5"


def test_a_huge_entry_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(60_000)}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_tool("huge", inputSchema=huge), _tool("ok")]), encoding="utf-8")
    loaded = load_catalog(path)
    assert [t.name for t in loaded.tools] == ["ok"]
    assert "the limit is" in loaded.problems[0].message


def test_ref_cycles_in_a_schema_are_stored_as_written(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_tool("linked", inputSchema=schema)]), encoding="utf-8")
    (tool,) = load_catalog(path).tools
    assert tool.input_schema == schema
