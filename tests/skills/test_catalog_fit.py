"""Skill constants fitted on the catalog for a model the packaged ones were not fitted for: once
per model and skill set, kept in the store, served after a restart, and routing a clear request.

The other model is the stock all-MiniLM-L6-v2 (``local:minilm-l6-int8``, packaged): its cosines
differ from the tuned default's, which the packaged constants were fitted for.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from support.routing import route_dev_half
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Loaded, Tool
from toolscout.search.skillfit import CATALOG, META_KEY, packaged_skill_fit, stored_skill_fit
from toolscout.skills.catalogfit import MIN_TOOLS, fit_due, pseudo_requests

STOCK = "local:minilm-l6-int8"
STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
#: ``python bench/skills.py routing --model local:minilm-l6-int8 --fit both`` routed the
#: single-intent dev half 93.5 % (58 of 62) with 6.45 skills matched (91.9 % with the packaged
#: constants): floors with a margin of three requests and one skill.
FLOOR, MATCHED_CEILING = 0.88, 7.5


def _open(db: Path, cache: Path, model: str = STOCK) -> Engine:
    return Engine.open(Settings(db=str(db), cache_dir=str(cache), embed_model=model))


@pytest.fixture(scope="module")
def fitted_index(tmp_path_factory: pytest.TempPathFactory, vector_cache: Path) -> Path:
    """The starter catalog indexed once with the stock model (which fits on the catalog)."""
    db = tmp_path_factory.mktemp("catalog-fit") / "stock.db"
    with _open(db, vector_cache) as engine:
        engine.index([CatalogFile(STARTER, source="starter").read()])
    return db


@pytest.fixture
def stock_engine(fitted_index: Path, tmp_path: Path, vector_cache: Path) -> Iterator[Engine]:
    """A private copy of the fitted index, opened again (a restart)."""
    target = tmp_path / "stock.db"
    shutil.copy(fitted_index, target)
    engine = _open(target, vector_cache)
    yield engine
    engine.close()


def test_indexing_with_another_model_fits_the_skill_constants_on_the_catalog(
    stock_engine: Engine,
) -> None:
    fit = stored_skill_fit(stock_engine.store)
    assert fit is not None and fit.origin == CATALOG
    assert fit.fitted_for == stock_engine.embedder.name != packaged_skill_fit().fitted_for
    assert fit.tools == stock_engine.store.count() and fit.requests > 2 * MIN_TOOLS
    assert fit.stage1 != packaged_skill_fit().stage1
    assert fit.classifier != packaged_skill_fit().classifier
    status = f"fitted for this model on {fit.requests} pseudo-requests"
    assert stock_engine.skill_fits.status == status
    assert stock_engine.info()["skill_scores"] == status


def test_a_restart_serves_the_stored_fit_without_refitting(
    stock_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    before = stock_engine.store.get_meta(META_KEY)
    with caplog.at_level(logging.WARNING, logger="toolscout.skills"):
        assert not fit_due(stock_engine.store, stock_engine.embedder)
        assert stock_engine.skill_fits.refit().startswith("fitted for this model")
        stock_engine.classify()
    assert stock_engine.store.get_meta(META_KEY) == before
    assert stock_engine.search_service.hierarchical.stage1.fit.origin == CATALOG
    assert not [r for r in caplog.records if "approximate" in r.getMessage()]


def test_a_clear_request_routes_to_its_skill(stock_engine: Engine) -> None:
    matched = stock_engine.match_skills("send an email to John", limit=3)
    assert matched and matched[0].skill.id == "email"
    result = stock_engine.search("send an email to John", strategy="hierarchical", limit=3)
    assert result.tools[0].tool.id == "gmail::send_email"
    used = result.metadata["skill_ids_used"]
    assert used is not None and "email" in used
    assert all(set(hit.skill_ids) & set(used) for hit in result.tools)  # BR-001


def test_a_changed_skill_set_is_fitted_again(stock_engine: Engine) -> None:
    before = stored_skill_fit(stock_engine.store)
    assert before is not None
    stock_engine.skills.deactivate("sports")
    assert fit_due(stock_engine.store, stock_engine.embedder)
    stock_engine.classify()
    after = stored_skill_fit(stock_engine.store)
    assert after is not None and after.skill_set != before.skill_set
    assert not fit_due(stock_engine.store, stock_engine.embedder)
    stage1 = stock_engine.search_service.hierarchical.stage1
    assert "sports" not in {s.id for s in stage1.index(stock_engine.store.state().version).skills}
    assert stage1.fit.skill_set == after.skill_set


def test_the_packaged_model_keeps_the_packaged_constants_and_fits_nothing(
    tmp_path: Path, vector_cache: Path
) -> None:
    with Engine.open(Settings(db=str(tmp_path / "d.db"), cache_dir=str(vector_cache))) as engine:
        engine.index([CatalogFile(STARTER, source="starter").read()])
        assert engine.store.get_meta(META_KEY) is None
        assert engine.skill_fits.status == "fitted"
        assert engine.search_service.hierarchical.stage1.fit is packaged_skill_fit()


def test_a_catalog_too_small_to_fit_keeps_the_packaged_constants(
    tmp_path: Path, vector_cache: Path
) -> None:
    tools = list(CatalogFile(STARTER, source="starter").read().tools)[: MIN_TOOLS // 2]
    with _open(tmp_path / "small.db", vector_cache) as engine:
        engine.index([Loaded("small", tools)])
        assert engine.store.get_meta(META_KEY) is None
        assert engine.skill_fits.status.startswith("approximate: fitted for")


def test_a_broken_stored_fit_is_ignored_and_fitted_again(
    stock_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    stock_engine.store.set_meta(META_KEY, json.dumps({"stage1": "nonsense"}))
    with caplog.at_level(logging.WARNING, logger="toolscout.skills"):
        assert stored_skill_fit(stock_engine.store) is None
    assert "ignoring the stored skill fit" in caplog.text
    stock_engine.classify()
    fit = stored_skill_fit(stock_engine.store)
    assert fit is not None and fit.origin == CATALOG


def test_pseudo_requests_are_the_name_the_first_sentence_and_a_fragment_of_it() -> None:
    tool = Tool(
        id="x::send_email",
        name="send_email",
        description="Send an email to recipients. Supports attachments and CC.",
        input_schema={"type": "object"},
    )
    assert pseudo_requests(tool) == [
        "send email",
        "Send an email to recipients.",
        "an email to recipients.",
    ]


def test_dev_requests_route_with_the_catalog_fit_of_another_model(stock_engine: Engine) -> None:
    assert stock_engine.search_service.hierarchical.stage1.fit.origin == CATALOG
    routed, matched = route_dev_half(stock_engine)
    assert routed >= FLOOR
    assert matched <= MATCHED_CEILING
