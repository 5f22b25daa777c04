"""The console's status page shows which tools learned from which requests, to the admin only
(recorded requests are users' own words)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine

ADMIN = "admin-key-for-tests"
REQUEST = "open a PR from feature/search into main"


def test_status_shows_what_was_learned_to_the_admin_only(engine: Engine, tmp_path: Path) -> None:
    engine.feedback.record(REQUEST, "github::create_pull_request", "success")
    settings = Settings(db=engine.store.url, reports_dir=str(tmp_path / "reports"), api_key=ADMIN)
    app = create_app(engine, settings)
    with TestClient(app, client=("127.0.0.1", 50001), base_url="http://127.0.0.1") as local:
        anonymous = local.get("/status")
        assert anonymous.status_code == 200
        assert "Learned from use" in anonymous.text and REQUEST not in anonymous.text
        admin = local.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
        assert "github::create_pull_request" in admin.text and REQUEST in admin.text
