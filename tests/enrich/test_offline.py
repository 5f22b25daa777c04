"""The offline enricher: action/entity extraction, synonyms, profiles, non-English input."""

from __future__ import annotations

from support.enrich_catalog import chinese_tool, tracker_tools
from toolscout.enrich.base import merged_fields
from toolscout.enrich.offline import (
    OfflineEnricher,
    OfflineOptions,
    action_of,
    entities_of,
    schema_values,
)
from toolscout.models import Tool


def _tool(name: str, description: str = "") -> Tool:
    return Tool(id=name, name=name, description=description)


def test_verb_and_entity_come_from_snake_camel_and_spaced_names() -> None:
    assert (action_of(_tool("create_issue")), entities_of(_tool("create_issue"))) == (
        ("create", True),
        ["issue"],
    )
    assert action_of(_tool("getChannelClips"))[0] == "get"
    assert entities_of(_tool("getChannelClips")) == ["channel", "clips"]
    assert action_of(_tool("Remove Member"))[0] == "delete"


def test_a_name_without_a_verb_takes_it_from_the_description_or_infers_get() -> None:
    assert action_of(_tool("Driver Standings", "Will return the current standings.")) == (
        "get",
        True,
    )
    assert action_of(_tool("Songkick concert", "Concert info")) == ("get", False)
    assert action_of(_tool("tirto-search", "Search news by keyword"))[0] == "search"


SYNONYMS = OfflineOptions(verb_synonyms=True, noun_synonyms=True, sentence=True)


def test_default_pairs_are_the_canonical_action_and_entity() -> None:
    assert OfflineEnricher().enrich(tracker_tools()[1], None).actions == ("delete issue",)


def test_action_pairs_carry_verb_and_noun_synonyms_when_enabled() -> None:
    tool = tracker_tools()[1]  # delete_issue
    enrichment = OfflineEnricher(SYNONYMS).enrich(tool, None)
    assert "delete issue" in enrichment.actions
    assert "remove issue" in enrichment.actions
    assert "delete bug" in enrichment.actions
    assert {"remove", "ticket"} <= set(enrichment.keywords)


def test_abbreviations_are_spelled_out() -> None:
    repo_stats = tracker_tools()[3]
    keywords = " ".join(OfflineEnricher(SYNONYMS).enrich(repo_stats, None).keywords)
    assert "repository" in keywords
    assert "statistics" in keywords


def test_server_profile_aggregates_shared_words_entities_and_verbs() -> None:
    tracker = [t for t in tracker_tools() if t.server == "tracker"]
    profile = OfflineEnricher().profile("tracker", tracker)
    assert profile.entity_types[0] == "issue"
    assert "issue" in profile.keywords
    assert {"create", "delete", "list"} <= set(profile.action_verbs)


def test_profile_words_reach_the_domain_field_but_server_name_is_not_repeated() -> None:
    tracker = [t for t in tracker_tools() if t.server == "tracker"]
    enricher = OfflineEnricher()
    profile = enricher.profile("tracker", tracker)
    fields = merged_fields(tracker[3], enricher.enrich(tracker[3], profile), profile)
    assert fields is not None
    assert "issue" in fields["domain"].split()
    assert "tracker" not in fields["domain"].split()


def test_chinese_description_still_gets_an_english_sentence_and_actions() -> None:
    enrichment = OfflineEnricher(SYNONYMS).enrich(chinese_tool(), None)
    assert enrichment.enhanced.startswith("Get geocode")
    assert enrichment.enhanced.isascii()
    assert all(a.isascii() for a in enrichment.actions)


def test_schema_example_values_become_keywords_but_urls_and_numbers_do_not() -> None:
    tool = Tool(
        id="t",
        name="player_search",
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "messi"},
                "club": {"type": "string", "examples": ["FC Barcelona"]},
                "page": {"type": "string", "default": "2"},
                "site": {"type": "string", "default": "https://example.com/x"},
            },
        },
    )
    assert schema_values(tool) == ["messi", "fc", "barcelona"]
    assert "messi" in OfflineEnricher().enrich(tool, None).keywords


def test_profiles_of_categories_add_no_words_to_their_tools() -> None:
    tools = [
        Tool(id=f"t{i}", name=f"get_{w}_report", category="Science/Geology")
        for i, w in enumerate(("rock", "soil", "rock"))
    ]
    profile = OfflineEnricher().profile("Science/Geology", tools)
    assert {"rock", "report"} <= set(profile.entity_types)
    assert profile.keywords == ()


def test_context_sentence_names_the_servers_entities_and_example_values() -> None:
    tracker = [t for t in tracker_tools() if t.server == "tracker"]
    enricher = OfflineEnricher()
    profile = enricher.profile("tracker", tracker)
    (sentence,) = enricher.enrich(tracker[3], profile).use_cases
    assert sentence.startswith("Part of tracker, which handles issue")
    assert sentence.endswith("For example: octocat, world.")  # "hello" is a stopword
