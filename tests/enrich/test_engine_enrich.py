"""Enrichment inside Engine.index and the engine's enrichment operations (real SQLite index,
real packaged embedding model, offline enricher; the LLM path uses the TEST DOUBLE)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from support.enrich_catalog import tracker_tools
from support.openai_double import OpenAIDouble, good
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.enrich.llm import OpenAICompatibleLLM
from toolscout.enrich.llm_enricher import LLMEnricher
from toolscout.enrich.offline import OfflineEnricher, OfflineOptions
from toolscout.enrich.pipeline import EnrichmentPipeline
from toolscout.errors import ConfigError, QueryError
from toolscout.models import Loaded, Tool


def _load(tools: list[Tool]) -> list[Loaded]:
    return [Loaded("test", [dataclasses.replace(t, source="test") for t in tools])]


def _ids(engine: Engine, query: str) -> list[str]:
    return [h.tool.id for h in engine.search(query, mode="bm25", limit=3).hits]


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    eng = Engine.open(settings.model_copy(update={"enrich": "offline"}))
    yield eng
    eng.close()


def test_offline_enrichment_makes_example_values_and_sibling_entities_searchable(
    engine: Engine,
) -> None:
    assert engine.enrichment is not None
    engine.index(_load(tracker_tools()))
    # "octocat" is only a default value in getRepoStats' schema; the enrichment indexes it.
    assert _ids(engine, "octocat hello world")[0] == "tracker::getRepoStats"
    # The tracker's entity ("issue") reaches getRepoStats through the server profile.
    hits = engine.search("issue", mode="bm25", limit=10).hits
    assert "tracker::getRepoStats" in [h.tool.id for h in hits]


def test_offline_synonyms_when_enabled_find_tools_by_other_words(settings: Settings) -> None:
    plain = Engine.open(settings)
    options = OfflineOptions(verb_synonyms=True, noun_synonyms=True)
    engine = Engine(plain.store, plain.embedder, enricher=OfflineEnricher(options))
    try:
        engine.index(_load(tracker_tools()))
        # Neither "remove" nor "ticket" is in delete_issue's own text; the enrichment adds them.
        assert _ids(engine, "remove ticket")[0] == "tracker::delete_issue"
    finally:
        engine.close()


def test_unchanged_reindex_embeds_and_enriches_nothing(engine: Engine) -> None:
    engine.index(_load(tracker_tools()))
    report = engine.index(_load(tracker_tools()))
    assert (report.unchanged, report.embedded) == (6, 0)
    assert engine.enrichment is not None
    assert engine.enrichment.last_report.tools_made == 0
    assert engine.enrichment_service.enrich_sync()["reindexed"] == 0


def test_new_tool_on_a_server_refreshes_its_siblings_when_the_profile_changes(
    engine: Engine,
) -> None:
    engine.index(_load(tracker_tools()))
    newcomer = Tool(
        id="tracker::close_issue",
        name="close_issue",
        description="Close an issue.",
        server="tracker",
    )
    # Only the new tool is loaded; its server's other tools are taken from the index.
    report = engine.index([Loaded("other", [newcomer])])
    assert report.added == 1
    status = engine.enrichment_service.enrichment_status("tracker")
    assert status["tools"] == 5
    assert status["profile"]["state"] == "fresh"
    assert status["tool_states"]["fresh"] == 5


def test_enrich_server_force_remakes_its_tools_and_stats_count_them(engine: Engine) -> None:
    engine.index(_load(tracker_tools()))
    result = engine.enrichment_service.enrich_server("chat", force=True)
    assert result["tools"]["made"] == 2
    assert result["reindexed"] == 0  # same rules, same text: no re-embedding
    assert engine.enrichment_service.enrich_sync()["reindexed"] == 0
    stats = engine.enrichment_service.enrichment_stats()
    assert stats["cache_hits"] == 8  # the sync reused 6 tools and 2 profiles
    assert stats["stored"][stats["enricher"]]["tool"]["ok"] == 6
    with pytest.raises(QueryError, match="server"):
        engine.enrichment_service.enrich_server("nowhere")


def test_enrich_none_indexes_original_text_only(settings: Settings) -> None:
    engine = Engine.open(settings.model_copy(update={"enrich": "none"}))
    try:
        engine.index(_load(tracker_tools()))
        assert "tracker::delete_issue" not in _ids(engine, "remove ticket")
        assert _ids(engine, "octocat hello world") == []
        hits = engine.search("issue", mode="bm25", limit=10).hits
        assert "tracker::getRepoStats" not in [h.tool.id for h in hits]
        assert engine.enrichment_service.enrichment_stats()["enricher"] is None
    finally:
        engine.close()


def test_enrich_llm_without_a_model_is_a_config_error(settings: Settings) -> None:
    with pytest.raises(ConfigError, match="llm_base_url"):
        Engine.open(settings.model_copy(update={"enrich": "llm"}))


def test_llm_enrichment_is_indexed_and_an_unchanged_rerun_makes_no_calls(
    engine: Engine,
) -> None:
    generic = {
        "enhanced_description": "A tool of this catalog.",
        "action_entities": ["use tool"],
    }
    walkie = {
        "enhanced_description": "Sends a chat message to a channel or a person.",
        "action_entities": ["send message", "post message"],
        "use_cases": ["tell the team the build is green"],
        "keywords": ["walkie-talkie", "notify"],
    }
    profile = {"domain": "team chat", "capabilities": ["send message"]}
    with OpenAIDouble(default=good(generic)) as double:
        llm = OpenAICompatibleLLM(base_url=double.base_url, model="double", retries=0)
        # One call at a time: profiles (sorted) then tools in catalog order get these replies.
        engine.enrichment = EnrichmentPipeline(engine.store, LLMEnricher(llm, concurrency=1))
        double.script(good(profile), good(profile), *[good(generic)] * 4, good(walkie))
        engine.index(_load(tracker_tools()))
        assert len(double.requests) == 8  # 2 profiles + 6 tools
        assert _ids(engine, "walkie talkie")[0] == "chat::send_message"
        report = engine.index(_load(tracker_tools()))
        assert report.embedded == 0
        assert len(double.requests) == 8
        assert engine.enrichment_service.enrichment_stats()["llm_tokens_stored"] == 8 * 20
