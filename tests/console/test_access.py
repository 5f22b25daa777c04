"""The console's access rules over the real ASGI app: the REST API's policy, for a browser."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from support.console import ADMIN
from toolscout.api.console.access import COOKIE
from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.skills.classify import ProposedSkill

LOOPBACK = ("127.0.0.1", 50001)
REMOTE = ("203.0.113.7", 50001)


@pytest.fixture
def app_engine(starter_index: Path, tmp_path: Path, vector_cache: Path) -> Iterator[Engine]:
    db = tmp_path / "c.db"
    shutil.copyfile(starter_index, db)
    engine = Engine.open(Settings(db=str(db), cache_dir=str(vector_cache)))
    yield engine
    engine.close()


def _client(engine: Engine, tmp_path: Path, client: tuple[str, int], **keys: str) -> TestClient:
    settings = Settings(db=engine.store.url, reports_dir=str(tmp_path / "reports"), **keys)  # type: ignore[arg-type]
    # A browser on this machine names a loopback host (the Host allow-list refuses others).
    return TestClient(
        create_app(engine, settings),
        client=client,
        base_url="http://127.0.0.1",
        follow_redirects=False,
    )


def test_pages_open_on_loopback_and_closed_to_remote_clients(
    app_engine: Engine, tmp_path: Path
) -> None:
    with _client(app_engine, tmp_path, LOOPBACK) as local:
        assert local.get("/").status_code == 200
        assert local.get("/catalog").status_code == 200
    with _client(app_engine, tmp_path, REMOTE) as remote:
        page = remote.get("/catalog")
        assert page.status_code == 403 and "read_key" in page.text
        assert page.headers["content-type"].startswith("text/html")


def test_a_read_key_opens_the_pages_to_remote_clients(app_engine: Engine, tmp_path: Path) -> None:
    with _client(app_engine, tmp_path, REMOTE, read_key="reader") as remote:
        assert remote.get("/status").status_code == 401
        ok = remote.get("/status", headers={"Authorization": "Bearer reader"})
        assert ok.status_code == 200


def test_the_status_page_says_what_orders_a_search(app_engine: Engine, tmp_path: Path) -> None:
    with _client(app_engine, tmp_path, LOOPBACK) as local:
        page = local.get("/status")
    assert page.status_code == 200
    assert "<dt>ranking</dt><dd>learned ranker</dd>" in page.text


def test_writes_are_disabled_without_an_admin_key(app_engine: Engine, tmp_path: Path) -> None:
    with _client(app_engine, tmp_path, LOOPBACK) as local:
        denied = local.post("/console/session", data={"key": "anything"})
        assert denied.status_code == 403 and "TOOLSCOUT_API_KEY" in denied.text
        assert local.post("/skills/classify").status_code == 403


def test_the_session_cookie_stands_for_the_key_without_holding_it(
    app_engine: Engine, tmp_path: Path
) -> None:
    queued = app_engine.suggestions.propose("weather::forecast", ProposedSkill("astro", "A", "B"))
    assert queued is not None
    with _client(app_engine, tmp_path, LOOPBACK, api_key=ADMIN) as local:
        signed = local.post("/console/session?next=/skills", data={"key": ADMIN})
        assert signed.status_code == 303 and signed.headers["location"] == "/skills"
        cookie = signed.cookies[COOKIE]
        assert ADMIN not in cookie
        assert "samesite=strict" in signed.headers["set-cookie"].lower()
        assert "httponly" in signed.headers["set-cookie"].lower()
        url = f"/skills/suggestions/{queued.id}/reject"
        # A post another site made the browser send is refused, cookie or not.
        cross = local.post(url, data={"reason": "x"}, headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        assert app_engine.suggestions.pending()
        done = local.post(url, data={"reason": "out of scope"})
        assert done.status_code == 303 and not app_engine.suggestions.pending()


def test_an_admin_bearer_key_works_as_on_rest(app_engine: Engine, tmp_path: Path) -> None:
    queued = app_engine.suggestions.propose("weather::forecast", ProposedSkill("astro", "A", "B"))
    assert queued is not None
    with _client(app_engine, tmp_path, LOOPBACK, api_key=ADMIN) as local:
        url = f"/skills/suggestions/{queued.id}/approve"
        assert local.post(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = local.post(url, headers={"Authorization": f"Bearer {ADMIN}"})
        assert ok.status_code == 303 and app_engine.skills.get("astro").name == "A"


def test_only_the_vendored_assets_are_served(app_engine: Engine, tmp_path: Path) -> None:
    with _client(app_engine, tmp_path, LOOPBACK) as local:
        css = local.get("/console/static/console.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert local.get("/console/static/governance.py").status_code == 404
        assert local.get("/console/static/..%2Froutes.py").status_code == 404
        page = local.get("/").text
        assert "http://" not in page and "https://" not in page  # nothing from elsewhere


def test_unknown_things_answer_404_pages_naming_them(app_engine: Engine, tmp_path: Path) -> None:
    with _client(app_engine, tmp_path, LOOPBACK) as local:
        assert local.get("/catalog/tools/no::such").status_code == 404
        assert local.get("/skills/no_such_skill").status_code == 404
        missing = local.get("/evals?a=nope")
        assert missing.status_code == 404 and "nope" in missing.text
        assert local.get("/evals?k=7").status_code == 422
        bad = local.get("/?q=weather&strategy=sideways")
        assert bad.status_code == 422 and "strategy" in bad.text
