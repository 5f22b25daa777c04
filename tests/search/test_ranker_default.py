"""The learned ranker orders hybrid searches by default; where it cannot apply (another fusion,
a one-leg mode, the setting off) the fusion's order stands, and every search says which ran."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.embed.local import TOOL_MODEL_DIR
from toolscout.engine import Engine
from toolscout.models import Loaded, SearchMode, SearchRequest, Strategy, Tool
from toolscout.search.config import SearchConfig
from toolscout.search.hybrid import HybridSearcher

TOOLS = [
    Tool(id="snow", name="snow_depth", description="Report snowfall depth for ski resorts."),
    Tool(id="rain", name="rain_forecast", description="Forecast rain for a city."),
    Tool(id="mail", name="send_email", description="Send an email to a recipient."),
    Tool(id="cal", name="create_event", description="Create a calendar event with attendees."),
    Tool(id="issue", name="create_issue", description="Open an issue in a code repository."),
]
QUERY = "how deep is the snow at the ski resort"


def _opened(settings: Settings, **update: object) -> Engine:
    engine = Engine.open(settings.model_copy(update=update))
    engine.index([Loaded("test", TOOLS)])
    return engine


@pytest.fixture
def ranked(settings: Settings) -> Iterator[Engine]:
    engine = _opened(settings)
    yield engine
    engine.close()


def _answer(engine: Engine, request: SearchRequest) -> list[tuple[str, float]]:
    return [(h.tool.id, h.score) for h in engine.find(request).tools]


def test_the_ranker_orders_a_default_search_and_metadata_says_so(ranked: Engine) -> None:
    assert ranked.searcher.config.learned_ranker is True
    assert ranked.searcher.ranker is not None
    result = ranked.find(SearchRequest(QUERY, limit=3))
    assert result.tools[0].tool.id == "snow"
    assert result.metadata["ranking"] == "learned"
    assert result.metadata["ranker_off"] is None


def test_the_setting_off_gives_the_hand_set_fusion(settings: Settings) -> None:
    engine = _opened(settings, learned_ranker=False)
    try:
        assert engine.searcher.ranker is None
        result = engine.find(SearchRequest(QUERY, limit=3))
        assert result.metadata["ranking"] == "adaptive"
        assert result.metadata["ranker_off"] == "learned_ranker = false"
    finally:
        engine.close()


@pytest.mark.parametrize("fusion", ["rrf", "score"])
def test_another_fusion_ranks_alone_and_says_why(settings: Settings, fusion: str) -> None:
    """The ranker reads the adaptive fusion's scores: under another fusion it stays off, and
    the answers are exactly that fusion's own."""
    engine = _opened(settings, fusion=fusion)
    plain = _opened(settings, fusion=fusion, learned_ranker=False)
    try:
        assert engine.searcher.ranker is None
        request = SearchRequest(QUERY, limit=5)
        result = engine.find(request)
        assert result.metadata["ranking"] == fusion
        assert f"fusion = {fusion!r}" in str(result.metadata["ranker_off"])
        assert _answer(engine, request) == _answer(plain, request)
    finally:
        engine.close()
        plain.close()


def test_a_fusion_set_after_the_searcher_was_built_turns_the_ranker_off(ranked: Engine) -> None:
    searcher = ranked.searcher
    assert searcher.ranker is not None
    rrf = HybridSearcher(ranked.store, ranked.embedder, SearchConfig(fusion="rrf"))
    try:
        expected = [(h.id, h.score) for h in rrf.search(QUERY, limit=5)]
        searcher.config = replace(searcher.config, fusion="rrf")
        assert searcher.ranking(SearchMode.HYBRID)[0] == "rrf"
        assert [(h.id, h.score) for h in searcher.search(QUERY, limit=5)] == expected
    finally:
        rrf.close()


@pytest.mark.parametrize("mode", ["bm25", "vector"])
def test_a_one_leg_search_is_not_re_scored(ranked: Engine, mode: str) -> None:
    result = ranked.find(SearchRequest(QUERY, limit=3, mode=SearchMode(mode)))
    assert result.tools
    assert result.metadata["ranking"] == mode
    assert "hybrid searches only" in str(result.metadata["ranker_off"])


@pytest.mark.parametrize("strategy", ["hierarchical", "hybrid"])
def test_skill_first_strategies_run_the_ranker_and_keep_their_contract(
    ranked: Engine, strategy: str
) -> None:
    """Stage 2 is the same re-scored search inside the matched skills: outside a fallback
    every returned tool belongs to one of them (BR-001)."""
    result = ranked.find(SearchRequest(QUERY, limit=5, strategy=Strategy(strategy)))
    assert result.tools
    assert result.metadata["ranking"] == "learned"
    used = result.metadata["skill_ids_used"]
    if strategy == "hierarchical":
        assert isinstance(used, list) and "weather" in used  # no fallback for this request
        assert all(set(h.skill_ids) & set(used) for h in result.tools)
    scores = [h.score for h in result.tools]
    assert scores == sorted(scores, reverse=True)


def test_a_users_onnx_folder_ranks_by_the_fusion_and_says_why(
    settings: Settings, tmp_path: Path
) -> None:
    """The packaged ranker learned from the packaged model's cosines: any other model (here an
    ``onnx:`` folder, even one holding the same files) gets the hand-set fusion."""
    packaged = Path(str(resources.files("toolscout.embed").joinpath(TOOL_MODEL_DIR)))
    folder = tmp_path / "my-model"
    folder.mkdir()
    for name in ("model.onnx", "tokenizer.json", "config.json"):
        shutil.copy(packaged / name, folder / name)
    engine = _opened(settings, embed_model=f"onnx:{folder}")
    try:
        assert engine.searcher.config.learned_ranker and engine.searcher.ranker is None
        result = engine.find(SearchRequest(QUERY, limit=3))
        assert result.tools[0].tool.id == "snow"
        assert result.metadata["ranking"] == "adaptive"
        assert "packaged model's cosines" in str(result.metadata["ranker_off"])
        assert str(result.metadata["calibration"]).startswith("approximate")
    finally:
        engine.close()
