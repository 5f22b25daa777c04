"""References to other documents: files beside a file document and URLs on a fetched
document's host are followed (each opened once); a missing file, a path out of the folder and
another host are reported for the operations that use them, and the rest is indexed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI

from support.rest_app import serving
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.ingest.openapi import OpenApiSource

COMMON = {
    "components": {
        "schemas": {
            "Pet": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"$ref": "#/components/schemas/Kind"},
                    "owner": {"$ref": "people/owner.yaml#/Owner"},
                },
            },
            "Kind": {"type": "string", "enum": ["cat", "dog"]},
        }
    }
}
OWNER = {
    "Owner": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}
}


def _document(refs: dict[str, str]) -> dict[str, Any]:
    paths = {
        f"/{name}": {
            "post": {
                "operationId": name,
                "requestBody": {"content": {"application/json": {"schema": {"$ref": ref}}}},
            }
        }
        for name, ref in refs.items()
    }
    return {"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"}, "paths": paths}


def _write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_a_file_beside_the_document_is_read_with_its_own_references(tmp_path: Path) -> None:
    _write(tmp_path / "common.yaml", COMMON)
    _write(tmp_path / "people" / "owner.yaml", OWNER)
    api = _write(tmp_path / "api.yaml", _document({"add": "common.yaml#/components/schemas/Pet"}))
    loaded = OpenApiSource(api).read()
    assert loaded.problems == []
    (tool,) = loaded.tools
    pet = (tool.input_schema or {})["properties"]["body"]
    assert pet["required"] == ["name"]
    assert pet["properties"]["kind"]["enum"] == ["cat", "dog"]
    assert pet["properties"]["owner"]["properties"]["email"]["format"] == "email"


def test_a_missing_file_is_reported_for_its_operation_only(tmp_path: Path) -> None:
    _write(tmp_path / "common.yaml", COMMON)
    _write(tmp_path / "people" / "owner.yaml", OWNER)
    doc = _document({"add": "common.yaml#/components/schemas/Pet", "lost": "gone.yaml#/Pet"})
    api = _write(tmp_path / "api.yaml", doc)
    loaded = OpenApiSource(api).read()
    assert [t.id for t in loaded.tools] == ["pets::add"]
    (problem,) = loaded.problems
    assert (
        problem.location
        == f"{api}#/paths/~1lost/post/requestBody/content/application~1json/schema/$ref"
    )
    assert "gone.yaml" in problem.message and "No such file" in problem.message
    assert problem.stands_for == ("pets::lost",)


def test_a_file_outside_the_document_s_folder_is_not_read(tmp_path: Path) -> None:
    _write(tmp_path / "secret.yaml", {"Pet": {"type": "string", "description": "private text"}})
    api = _write(tmp_path / "api" / "api.yaml", _document({"peek": "../secret.yaml#/Pet"}))
    loaded = OpenApiSource(api).read()
    assert loaded.tools == []
    (problem,) = loaded.problems
    assert "outside the document's folder" in problem.message
    assert "private text" not in str(problem)


@pytest.fixture
def spec_host() -> Iterator[tuple[str, list[str]]]:
    app = FastAPI()
    hits: list[str] = []

    @app.get("/specs/api.yaml")
    def api() -> Any:
        hits.append("api")
        refs = {
            "add": "common.json#/components/schemas/Pet",
            "again": "./common.json#/components/schemas/Pet",
            "elsewhere": "http://203.0.113.9/common.json#/components/schemas/Pet",
        }
        return _document(refs)

    @app.get("/specs/common.json")
    def common() -> Any:
        hits.append("common")
        return COMMON

    @app.get("/specs/people/owner.yaml")
    def owner() -> Any:
        hits.append("owner")
        return OWNER

    with serving(app) as url:
        yield url, hits


def test_a_fetched_document_s_relative_urls_are_fetched_from_its_host_once(
    spec_host: tuple[str, list[str]],
) -> None:
    url, hits = spec_host
    loaded = OpenApiSource(f"{url}/specs/api.yaml").read()
    assert sorted(t.id for t in loaded.tools) == ["pets::add", "pets::again"]
    body = (loaded.tools[0].input_schema or {})["properties"]["body"]
    assert body["properties"]["owner"]["properties"]["email"]["format"] == "email"
    assert sorted(hits) == ["api", "common", "owner"]
    (problem,) = loaded.problems
    assert problem.stands_for == ("pets::elsewhere",)
    assert "only documents on the document's own host" in problem.message


def test_a_json_catalog_file_that_is_openapi_follows_its_references(tmp_path: Path) -> None:
    _write(tmp_path / "common.yaml", COMMON)
    _write(tmp_path / "people" / "owner.yaml", OWNER)
    api = tmp_path / "api.json"
    api.write_text(json.dumps(_document({"add": "common.yaml#/components/schemas/Pet"})))
    loaded = CatalogFile(api).read()
    assert loaded.problems == []
    (tool,) = loaded.tools
    assert (tool.input_schema or {})["properties"]["body"]["required"] == ["name"]


def test_operations_and_path_items_kept_in_other_files_resolve_from_their_own_folder(
    tmp_path: Path,
) -> None:
    kind = {"type": "string", "enum": ["cat", "dog"]}
    _write(tmp_path / "schemas" / "kind.yaml", kind)
    operations = {
        "list": {
            "operationId": "listPets",
            "summary": "List pets",
            "parameters": [
                {"name": "kind", "in": "query", "schema": {"$ref": "../schemas/kind.yaml"}}
            ],
        }
    }
    _write(tmp_path / "paths" / "pets.yaml", operations)
    owners = {
        "get": {
            "operationId": "listOwners",
            "parameters": [{"$ref": "#/components/parameters/Limit"}],
        },
        "components": {
            "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}
        },
    }
    _write(tmp_path / "paths" / "owners.yaml", owners)
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "Pets", "version": "1"},
        "paths": {
            "/pets": {"get": {"$ref": "paths/pets.yaml#/list"}},
            "/owners": {"$ref": "paths/owners.yaml"},
            "/lost": {"$ref": "paths/lost.yaml"},
        },
    }
    loaded = OpenApiSource(_write(tmp_path / "api.yaml", doc)).read()
    tools = {t.id: t for t in loaded.tools}
    assert sorted(tools) == ["pets::listOwners", "pets::listPets"]
    pets = (tools["pets::listPets"].input_schema or {})["properties"]
    assert pets["kind"]["enum"] == ["cat", "dog"]
    assert tools["pets::listPets"].description == "List pets"
    assert tools["pets::listOwners"].annotations["http_parameters"] == {"limit": "query"}
    (problem,) = loaded.problems
    assert problem.location.endswith("#/paths/~1lost/$ref") and "lost.yaml" in problem.message
