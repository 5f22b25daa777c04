"""Access control through the real app: every write needs the admin key; reads follow the
read key / loopback policy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

LOOPBACK = ("127.0.0.1", 50000)
REMOTE = ("203.0.113.7", 50000)

#: Every route that changes state, with a body valid enough to reach the auth check.
WRITES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/api/v1/skills", {"id": "quantum_lab", "name": "Quantum lab"}),
    ("PUT", "/api/v1/skills/email", {"name": "Mail"}),
    ("POST", "/api/v1/skills/email/deactivate", None),
    ("POST", "/api/v1/skills/email/reactivate", None),
    ("POST", "/api/v1/skills/classify", {"all": False}),
    ("POST", "/api/v1/suggestions/1/approve", None),
    ("POST", "/api/v1/suggestions/1/reject", {"reason": "duplicate"}),
    ("POST", "/api/v1/enrichment/server/gmail/profile", None),
    ("POST", "/api/v1/enrichment/sync", None),
    (
        "POST",
        "/api/v1/feedback",
        {"query": "send an email", "tool_id": "gmail::send_email", "outcome": "success"},
    ),
    ("DELETE", "/api/v1/feedback", None),
]
WRITE_TEMPLATES = {
    ("POST", "/api/v1/skills"),
    ("PUT", "/api/v1/skills/{skill_id}"),
    ("POST", "/api/v1/skills/{skill_id}/deactivate"),
    ("POST", "/api/v1/skills/{skill_id}/reactivate"),
    ("POST", "/api/v1/skills/classify"),
    ("POST", "/api/v1/suggestions/{suggestion_id}/approve"),
    ("POST", "/api/v1/suggestions/{suggestion_id}/reject"),
    ("POST", "/api/v1/enrichment/server/{server}/profile"),
    ("POST", "/api/v1/enrichment/sync"),
    ("POST", "/api/v1/feedback"),
    ("DELETE", "/api/v1/feedback"),
}
#: Governance reads that expose drafts or job state: admin only as well.
ADMIN_READS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/api/v1/suggestions", None),
    ("GET", "/api/v1/skills/classify/x", None),
    ("GET", "/api/v1/enrichment/jobs/x", None),
    ("GET", "/api/v1/feedback", None),
    ("GET", "/api/v1/feedback/learned", None),
]
READS = [
    ("GET", "/api/v1/search?query=send+an+email", None),
    ("POST", "/api/v1/search", {"query": "send an email"}),
    ("GET", "/api/v1/search/skills?query=send+an+email", None),
    ("GET", "/api/v1/search/tools?query=send+an+email", None),
    ("GET", "/api/v1/tools/gmail::send_email", None),
    ("GET", "/api/v1/tools", None),
    ("GET", "/api/v1/skills", None),
    ("GET", "/api/v1/skills/email", None),
    ("GET", "/api/v1/enrichment/server/gmail/status", None),
    ("GET", "/api/v1/enrichment/stats", None),
    ("GET", "/metrics", None),
]


def _app(engine: Engine, settings: Settings, **keys: str | None) -> Any:
    return create_app(engine, settings.model_copy(update=keys))


@pytest.fixture
def no_key_client(api_engine: Engine, api_settings: Settings) -> Iterator[TestClient]:
    with TestClient(_app(api_engine, api_settings, api_key=None), client=LOOPBACK) as c:
        yield c


def _send(client: TestClient, route: tuple[str, str, dict[str, Any] | None], **kw: Any) -> Any:
    method, path, body = route
    return client.request(method, path, json=body, **kw)


def test_every_state_changing_route_is_tested_for_the_admin_key(client: TestClient) -> None:
    # A new write route must join WRITES (and so every auth test below) to pass this test.
    changing = {
        (method, route.path)
        for route in client.app.routes  # type: ignore[attr-defined]
        if isinstance(route, APIRoute)
        for method in route.methods or ()
        if method != "GET" and route.path != "/api/v1/search"  # a search, sent as POST
    }
    assert changing == WRITE_TEMPLATES


@pytest.mark.parametrize("route", WRITES + ADMIN_READS, ids=lambda r: f"{r[0]} {r[1]}")
def test_write_without_key_is_401(client: TestClient, route: tuple[str, str, Any]) -> None:
    r = _send(client, route)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("route", WRITES + ADMIN_READS, ids=lambda r: f"{r[0]} {r[1]}")
def test_write_with_wrong_key_is_401(client: TestClient, route: tuple[str, str, Any]) -> None:
    r = _send(client, route, headers={"Authorization": "Bearer not-the-key"})
    assert r.status_code == 401


@pytest.mark.parametrize("route", WRITES, ids=lambda r: f"{r[0]} {r[1]}")
def test_write_with_admin_key_passes_the_check(
    client: TestClient, admin_headers: dict[str, str], route: tuple[str, str, Any]
) -> None:
    # Past the check the engine answers: success, or 404 for the made-up suggestion id.
    r = _send(client, route, headers=admin_headers)
    assert r.status_code in (200, 201, 202, 404), r.text
    if r.status_code == 404:
        assert r.json()["error"]["code"] == "suggestion_not_found"


@pytest.mark.parametrize("route", WRITES, ids=lambda r: f"{r[0]} {r[1]}")
def test_writes_are_disabled_without_a_configured_admin_key(
    no_key_client: TestClient, route: tuple[str, str, Any]
) -> None:
    r = _send(no_key_client, route, headers={"Authorization": "Bearer anything"})
    assert r.status_code == 403
    assert "TOOLSCOUT_API_KEY" in r.json()["error"]["message"]


@pytest.mark.parametrize("route", READS, ids=lambda r: f"{r[0]} {r[1]}")
def test_reads_are_open_on_loopback(client: TestClient, route: tuple[str, str, Any]) -> None:
    assert _send(client, route).status_code == 200


def test_remote_reads_without_a_read_key_are_refused(
    api_engine: Engine, api_settings: Settings
) -> None:
    with TestClient(_app(api_engine, api_settings), client=REMOTE) as remote:
        r = remote.get("/api/v1/tools/gmail::send_email")
    assert r.status_code == 403
    assert "read_key" in r.json()["error"]["message"]


@pytest.mark.parametrize("route", READS, ids=lambda r: f"{r[0]} {r[1]}")
def test_read_key_protects_reads_even_on_loopback(
    api_engine: Engine, api_settings: Settings, route: tuple[str, str, Any]
) -> None:
    app = _app(api_engine, api_settings, read_key="reader")
    with TestClient(app, client=REMOTE) as c:
        assert _send(c, route).status_code == 401
        assert _send(c, route, headers={"Authorization": "Bearer reader"}).status_code == 200
    with TestClient(app, client=LOOPBACK) as local:
        assert _send(local, route).status_code == 401


def test_admin_key_also_opens_reads(
    api_engine: Engine, api_settings: Settings, admin_headers: dict[str, str]
) -> None:
    with TestClient(_app(api_engine, api_settings, read_key="reader"), client=REMOTE) as c:
        assert c.get("/api/v1/tools", headers=admin_headers).status_code == 200


def test_read_key_is_not_an_admin_key(api_engine: Engine, api_settings: Settings) -> None:
    with TestClient(_app(api_engine, api_settings, read_key="reader"), client=LOOPBACK) as c:
        r = c.post(
            "/api/v1/skills",
            json={"id": "travel", "name": "Travel"},
            headers={"Authorization": "Bearer reader"},
        )
    assert r.status_code == 401


def test_health_and_openapi_stay_open(api_engine: Engine, api_settings: Settings) -> None:
    with TestClient(_app(api_engine, api_settings, read_key="reader"), client=REMOTE) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/openapi.json").status_code == 200
