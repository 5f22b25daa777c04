"""A URL document is asked for conditionally: unchanged, it is not transferred again (304) and
nothing is re-embedded; changed, the new operations are applied; a server without validators
has its body compared by hash; a broken cache means a plain fetch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from support.rest_app import make_app, serving
from toolscout.engine import Engine
from toolscout.ingest.openapi import OpenApiSource
from toolscout.ingest.openapi_documents import DocumentCache, Documents
from toolscout.sync.sync import ApiSpec, sync


@pytest.fixture
def shop_app() -> FastAPI:
    return make_app()


@pytest.fixture
def shop(shop_app: FastAPI) -> Iterator[str]:
    with serving(shop_app) as url:
        yield url


def test_an_unchanged_document_is_answered_304_and_nothing_is_re_embedded(
    shop: str, shop_app: FastAPI, engine: Engine, tmp_path: Path
) -> None:
    spec = ApiSpec(f"{shop}/openapi.json", name="shop", cache_dir=str(tmp_path / "cache"))
    first = sync(engine, [spec.source()]).sources[0]
    second = sync(engine, [spec.source()]).sources[0]
    assert shop_app.state.document_answers == [200, 304]
    assert first.added == second.unchanged > 0
    assert (second.added, second.updated, second.deleted, second.embedded) == (0, 0, 0, 0)


def test_a_changed_document_is_fetched_again_and_its_new_operation_indexed(
    shop: str, shop_app: FastAPI, engine: Engine, tmp_path: Path
) -> None:
    spec = ApiSpec(f"{shop}/openapi.json", name="shop", cache_dir=str(tmp_path / "cache"))
    sync(engine, [spec.source()])

    @shop_app.get("/coupons", operation_id="list_coupons")
    def list_coupons() -> list[str]:
        """Discount coupons currently valid."""
        return []

    shop_app.openapi_schema = None  # FastAPI keeps the document it built first
    changed = sync(engine, [spec.source()]).sources[0]
    assert shop_app.state.document_answers == [200, 200]
    # The siblings' server profile (offline enrichment) changes with the new operation too.
    assert (changed.added, changed.deleted) == (1, 0) and changed.embedded >= 1
    assert engine.get_tool("shop::list_coupons").server == "shop"


def test_without_validators_the_same_body_is_recognised_by_its_hash(
    shop: str, tmp_path: Path
) -> None:
    cache = DocumentCache(tmp_path / "cache")
    url = f"{shop}/unvalidated/openapi.json"
    statuses = []
    for _ in range(2):
        documents = Documents(url, cache=cache)
        documents.first()
        statuses.append(documents.fetch_status)
    assert statuses == ["fetched", "same content"]


def test_a_corrupt_cache_entry_means_a_plain_fetch(
    shop: str, shop_app: FastAPI, tmp_path: Path
) -> None:
    cache = DocumentCache(tmp_path / "cache")
    url = f"{shop}/openapi.json"
    tools = OpenApiSource(url, cache=cache).read().tools
    for body in (tmp_path / "cache").glob("*.body"):
        body.write_bytes(b"{not the document")
    again = OpenApiSource(url, cache=cache).read().tools
    assert shop_app.state.document_answers == [200, 200]  # no If-None-Match was sent
    assert [t.id for t in again] == [t.id for t in tools]


def test_without_a_cache_every_read_fetches_the_whole_document(
    shop: str, shop_app: FastAPI
) -> None:
    for _ in range(2):
        OpenApiSource(f"{shop}/openapi.json").read()
    assert shop_app.state.document_answers == [200, 200]
