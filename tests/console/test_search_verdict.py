"""The console's search page shows the calibrated verdict: ``answerable`` and ``no_match``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from toolscout.api.http import create_app
from toolscout.config import Settings
from toolscout.engine import Engine


@pytest.fixture
def local(starter_index: Path, tmp_path: Path, vector_cache: Path) -> Iterator[TestClient]:
    db = tmp_path / "c.db"
    shutil.copyfile(starter_index, db)
    engine = Engine.open(Settings(db=str(db), cache_dir=str(vector_cache)))
    settings = Settings(db=engine.store.url, reports_dir=str(tmp_path / "reports"))
    app = create_app(engine, settings)
    with TestClient(app, client=("127.0.0.1", 50001), base_url="http://127.0.0.1") as c:
        yield c
    engine.close()


def test_search_page_shows_answerable_and_no_match(local: TestClient) -> None:
    served = local.get("/", params={"q": "send an email to a colleague", "strategy": "direct"})
    assert served.status_code == 200
    assert "answerable <b" in served.text and "<b>no_match</b>" not in served.text
    nothing = local.get("/", params={"q": "what is the meaning of life", "strategy": "direct"})
    assert nothing.status_code == 200
    assert "<b>no_match</b>" in nothing.text


def test_search_page_says_what_ordered_the_hits(local: TestClient) -> None:
    hybrid = local.get("/", params={"q": "send an email to a colleague", "strategy": "direct"})
    assert hybrid.status_code == 200
    assert ">learned ranker</b>" in hybrid.text
    bm25 = local.get("/", params={"q": "send an email", "strategy": "direct", "mode": "bm25"})
    assert bm25.status_code == 200
    assert ">learned ranker</b>" not in bm25.text and "learned ranker off" in bm25.text
