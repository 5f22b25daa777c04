"""The console lists REST APIs beside the servers: a configured API (a real FastAPI app synced
from its /openapi.json) with its document, where calls go, which credentials it uses (by name,
never the value) and its last sync; its tools open like any server's; sources show their kind."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from support.console import Served, screenshot
from support.rest_app import TOKEN, serving
from toolscout.config.sections import ApiConfig
from toolscout.sync.sync import resolve_sources, sync


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    with serving() as url:
        yield url


@pytest.fixture
def console_settings(shop: str) -> dict[str, Any]:
    api = ApiConfig(spec=f"{shop}/openapi.json", headers_from_env={"X-API-Key": "SHOP_KEY"})
    return {"apis": {"shop": api}}


def test_the_catalog_lists_a_rest_api_beside_the_servers(
    page: Any, served: Served, shop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_KEY", TOKEN)
    report = sync(served.engine, resolve_sources(served.settings).all_sources())
    assert report.ok and report.sources[0].added > 0
    page.goto(served.url + "/catalog")
    expect(page.get_by_role("heading", name="REST APIs")).to_be_visible()
    api = page.locator("li.api")
    expect(api.locator(".count")).to_have_text(str(report.sources[0].added))
    expect(api.locator(".spec")).to_have_text(f"{shop}/openapi.json")
    expect(api).to_contain_text("X-API-Key from environment SHOP_KEY")
    expect(api).to_contain_text(re.compile(r"last sync\s*(just now|\d+ ?s)"))
    assert TOKEN not in page.content()
    # The starter catalog's servers are listed apart from the API.
    servers = page.locator("section.side > ul").first
    expect(servers.get_by_role("link", name="github", exact=True)).to_be_visible()
    expect(servers.get_by_role("link", name="shop", exact=True)).to_have_count(0)
    row = page.get_by_role("row").filter(has_text=f"{shop}/openapi.json")
    expect(row).to_contain_text("REST API (OpenAPI)")
    screenshot(page, "catalog-apis")
    api.get_by_role("link", name="shop", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("Tools of shop"))).to_be_visible()
    expect(page.locator("#tool-rows")).to_contain_text("shop::create_order")
