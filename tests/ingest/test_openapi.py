"""OpenAPI documents as sources: a real FastAPI app indexed from its URL and found by natural
requests; malformed documents and operations reported with their pointer and skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from support.rest_app import serving
from toolscout.cli import _register, app
from toolscout.engine import Engine
from toolscout.errors import IngestError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.ingest.openapi import OpenApiSource, document_tools
from toolscout.ingest.openapi_schema import fallback_id
from toolscout.models import SearchRequest


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    with serving() as url:
        yield url


def _doc(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"}, "paths": paths, **extra}


def _get(op_id: str, **extra: Any) -> dict[str, Any]:
    return {"get": {"operationId": op_id, "responses": {"200": {"description": "ok"}}, **extra}}


def test_an_api_indexed_from_its_url_has_one_tool_per_operation(shop: str) -> None:
    loaded = OpenApiSource(f"{shop}/openapi.json").read()
    assert not loaded.problems
    tools = {t.id: t for t in loaded.tools}
    assert {
        "shop::get_user",
        "shop::get_weather",
        "shop::create_order",
        "shop::cancel_order",
    } <= set(tools)
    assert "shop::slow_slow_get" in tools  # FastAPI's generated operationId is kept as it is
    user = tools["shop::get_user"]
    assert user.server == "shop" and user.category == "users"
    assert "customer's profile" in user.description
    schema = user.input_schema or {}
    assert schema["properties"]["user_id"]["type"] == "integer"
    assert schema["required"] == ["user_id"]
    assert user.annotations["http_method"] == "GET"
    assert user.annotations["http_path"] == "/users/{user_id}"
    assert user.annotations["http_parameters"] == {"user_id": "path", "verbose": "query"}
    assert user.annotations["readOnlyHint"] is True
    assert user.annotations["http_base_url"] == shop
    order = tools["shop::create_order"]
    body = (order.input_schema or {})["properties"]["body"]
    assert "$ref" not in json.dumps(body)  # resolved from #/components/schemas/NewOrder
    assert body["properties"]["item"]["type"] == "string" and body["required"] == ["item"]
    assert "x-api-key" in (order.input_schema or {})["properties"]
    assert order.annotations["destructiveHint"] is True
    assert tools["shop::cancel_order"].annotations["idempotentHint"] is True


def test_the_right_operation_is_found_for_natural_requests(shop: str, engine: Engine) -> None:
    engine.index([OpenApiSource(f"{shop}/openapi.json").read()])
    asks = {
        "what is the weather like in Paris today": "shop::get_weather",
        "place an order for two books": "shop::create_order",
        "cancel my order": "shop::cancel_order",
        "look up the profile of customer 42": "shop::get_user",
    }
    for query, expected in asks.items():
        hits = engine.find(SearchRequest(query=query, limit=3)).hits
        assert hits and hits[0].tool.id == expected, (query, [h.tool.id for h in hits])


def test_the_index_command_takes_a_url(shop: str, tmp_path: Path) -> None:
    _register()
    db = tmp_path / "cli.db"
    result = CliRunner().invoke(app, ["index", f"{shop}/openapi.json", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] >= 6


def test_a_swagger_2_yaml_file_is_read_with_inline_parameters(tmp_path: Path) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "Old API", "version": "1"},
        "host": "old.example.com",
        "basePath": "/v1",
        "definitions": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "paths": {
            "/pets/{petId}": {
                "parameters": [{"name": "petId", "in": "path", "required": True, "type": "string"}],
                "get": {"summary": "Find a pet", "responses": {"200": {"description": "ok"}}},
                "put": {
                    "operationId": "updatePet",
                    "parameters": [
                        {
                            "name": "body",
                            "in": "body",
                            "required": True,
                            "schema": {"$ref": "#/definitions/Pet"},
                        },
                        {"name": "kind", "in": "query", "type": "string", "enum": ["cat", "dog"]},
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
    }
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    loaded = CatalogFile(path).read()
    assert not loaded.problems
    tools = {t.id: t for t in loaded.tools}
    assert set(tools) == {"old_api::get_pets_by_petid", "old_api::updatePet"}
    put = tools["old_api::updatePet"].input_schema or {}
    assert put["properties"]["body"]["properties"]["name"]["type"] == "string"
    assert put["properties"]["kind"]["enum"] == ["cat", "dog"]
    assert put["required"] == ["petId", "body"]
    assert tools["old_api::updatePet"].annotations["http_base_url"] == "https://old.example.com/v1"


def test_a_bad_ref_skips_only_its_operation_and_names_the_pointer() -> None:
    bad = {"$ref": "#/components/schemas/Missing"}
    doc = _doc(
        {"/a": _get("a"), "/b": _get("b", parameters=[{"name": "x", "in": "query", "schema": bad}])}
    )
    loaded = document_tools(doc, location="pets.json", source="pets.json")
    assert [t.id for t in loaded.tools] == ["pets::a"]
    (problem,) = loaded.problems
    assert problem.location == "pets.json#/paths/~1b/get/parameters/0/schema/$ref"
    assert problem.field == "$ref" and "Missing" in problem.message
    assert problem.stands_for == ("pets::b",)


def test_a_reference_cycle_is_reported_and_a_recursive_schema_is_kept() -> None:
    schemas = {
        "A": {"$ref": "#/components/schemas/B"},
        "B": {"$ref": "#/components/schemas/A"},
        "Node": {
            "type": "object",
            "properties": {
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
            },
        },
    }
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
    cyc = {"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/A"}}
    doc = _doc(
        {
            "/loop": _get("loop", parameters=[cyc]),
            "/tree": {"post": {"operationId": "tree", "requestBody": body}},
        },
        components={"schemas": schemas},
    )
    loaded = document_tools(doc, location="x.json", source="x.json")
    assert [t.id for t in loaded.tools] == ["pets::tree"]
    (problem,) = loaded.problems
    assert "cycle" in problem.message and problem.stands_for == ("pets::loop",)
    tree = (loaded.tools[0].input_schema or {})["properties"]["body"]
    assert "recursive" in tree["properties"]["children"]["items"]["description"]


def test_a_skipped_operation_keeps_its_indexed_version_on_prune(engine: Engine) -> None:
    good = _doc({"/a": _get("a"), "/b": _get("b")})
    engine.index([document_tools(good, location="p.json", source="p.json")], prune=True)
    broken = _doc({"/a": _get("a"), "/b": _get("b", parameters=[{"in": "query"}])})
    report = engine.index([document_tools(broken, location="p.json", source="p.json")], prune=True)
    assert report.deleted == 0
    assert report.skipped[0].location == "p.json#/paths/~1b/get/parameters/0"
    assert any("last good version stays" in p.message for p in report.skipped)
    assert engine.get_tool("pets::b").id == "pets::b"


def test_a_document_that_is_not_openapi_fails_the_source(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="version"):
        document_tools({"openapi": "4.0", "paths": {}}, location="z", source="z")
    with pytest.raises(IngestError, match="paths"):
        document_tools({"openapi": "3.1.0"}, location="z", source="z")
    path = tmp_path / "broken.yaml"
    path.write_text("openapi: [unclosed", encoding="utf-8")
    with pytest.raises(IngestError, match="neither JSON nor YAML"):
        OpenApiSource(path).read()


def test_ten_thousand_operations_are_all_converted() -> None:
    item = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "next": {"$ref": "#/components/schemas/Item"}},
    }
    ok = {
        "200": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}},
        }
    }
    paths = {
        f"/items{i}/{{id}}": {
            "get": {
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Item"}}
                    }
                },
                "responses": ok,
            }
        }
        for i in range(10_000)
    }
    doc = _doc(paths, components={"schemas": {"Item": item}})
    loaded = document_tools(doc, location="big.json", source="big.json")
    assert len(loaded.tools) == 10_000 and not loaded.problems
    assert loaded.tools[0].id == "pets::get_items0_by_id"


def test_an_exponentially_expanding_document_is_cut_per_operation() -> None:
    schemas: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, 30):
        below = {"$ref": f"#/components/schemas/L{level - 1}"}
        schemas[f"L{level}"] = {"type": "object", "properties": {"a": below, "b": below}}
    param = {"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/L29"}}
    doc = _doc(
        {"/bomb": _get("bomb", parameters=[param]), "/ok": _get("ok")},
        components={"schemas": schemas},
    )
    loaded = document_tools(doc, location="bomb.json", source="bomb.json")
    assert [t.id for t in loaded.tools] == ["pets::ok"]
    assert "schema nodes" in loaded.problems[0].message


def test_response_schemas_are_not_expanded_whatever_their_size() -> None:
    schemas: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, 30):
        below = {"$ref": f"#/components/schemas/L{level - 1}"}
        schemas[f"L{level}"] = {"type": "object", "properties": {"a": below, "b": below}}
    huge = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L29"}}}}
    doc = _doc(
        {"/report": _get("report", responses={"200": huge})}, components={"schemas": schemas}
    )
    loaded = document_tools(doc, location="r.json", source="r.json")
    assert loaded.problems == []
    assert [t.id for t in loaded.tools] == ["pets::report"]


def test_fallback_names_are_readable_and_stable() -> None:
    assert fallback_id("GET", "/users/{id}") == "get_users_by_id"
    assert (
        fallback_id("delete", "/v1/orders/{order-id}/items") == "delete_v1_orders_by_order_id_items"
    )


def test_watch_syncs_an_api_from_its_url(shop: str, engine: Engine) -> None:
    import threading

    from toolscout.sync.sync import ApiSpec, SourceSet
    from toolscout.sync.watch import Watcher

    synced = threading.Event()
    sources = SourceSet(apis=(ApiSpec(f"{shop}/openapi.json", name="store"),))
    watcher = Watcher(engine, sources, on_sync=lambda summary: synced.set())
    stop = watcher.start_in_thread()
    try:
        assert synced.wait(30), "the API was not synced within 30 s"
    finally:
        assert stop(10.0)
    assert engine.get_tool("store::get_weather").source == f"{shop}/openapi.json"


def test_openapi_3_0_schema_words_become_json_schema() -> None:
    schema = {"type": "integer", "nullable": True, "minimum": 0, "exclusiveMinimum": True}
    doc = _doc({"/n": _get("n", parameters=[{"name": "n", "in": "query", "schema": schema}])})
    (tool,) = document_tools(doc, location="n.json", source="n.json").tools
    converted = (tool.input_schema or {})["properties"]["n"]
    assert converted == {"type": ["integer", "null"], "exclusiveMinimum": 0}


def test_sync_takes_a_url_among_its_catalogs(tmp_path: Path) -> None:
    from toolscout.sync.sync import ApiSpec, resolve_sources

    catalog = tmp_path / "tools.json"
    catalog.write_text("[]", encoding="utf-8")
    found = resolve_sources(catalogs=["https://api.example.com/openapi.json", str(catalog)])
    assert found.apis == (ApiSpec("https://api.example.com/openapi.json"),)
    assert found.catalogs == (catalog,)


@pytest.mark.slow
def test_two_thousand_operations_are_all_indexed(engine: Engine) -> None:
    param = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    paths = {
        f"/things{i}/{{id}}": {
            "get": {
                "operationId": f"get_thing_{i}",
                "summary": f"Fetch thing {i}",
                "parameters": [param],
            }
        }
        for i in range(2000)
    }
    report = engine.index([document_tools(_doc(paths), location="big.json", source="big.json")])
    assert report.added == 2000 and not report.skipped
