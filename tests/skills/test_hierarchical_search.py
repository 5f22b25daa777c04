"""The search contract: stages, fallbacks, thresholds, strategies, validation."""

from __future__ import annotations

import logging
import math
from functools import partial

import pytest

from support.skills_catalog import CATALOG, build
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import EmptyQuery, QueryError
from toolscout.models import ItemType, Loaded, SearchRequest, Skill, SkillAssignment, Strategy, Tool
from toolscout.store.roles import Classified

STAGES = {
    "query_embedding_time_ms",
    "skill_search_time_ms",
    "tool_search_time_ms",
    "schema_load_time_ms",
    "total_time_ms",
}

#: The requests of these tests: hierarchical unless a test names another strategy.
hierarchical = partial(SearchRequest, strategy=Strategy.HIERARCHICAL)


def find(engine: Engine, query: str, **kw: object) -> tuple[list[str], dict[str, object]]:
    res = engine.find(hierarchical(query, **kw))  # type: ignore[arg-type]
    return [h.tool.id for h in res.tools], res.metadata


def test_hierarchical_search_matches_a_skill_then_searches_only_its_tools(
    skills_engine: Engine,
) -> None:
    res = skills_engine.find(hierarchical("send an email message to my colleague"))
    assert res.matched_skills and res.matched_skills[0].skill.id == "email"
    assert res.matched_skills[0].tool_count >= 4
    assert res.tools[0].tool.id == "gmail::send_email"
    assert res.tools[0].primary_skill_id == "email"
    assert "email" in res.tools[0].skill_ids
    used = res.metadata["skill_ids_used"]
    assert isinstance(used, list) and "email" in used
    members = skills_engine.store.count()
    assert res.metadata["stage2_candidate_count"] < members
    assert 0 < res.metadata["searched_fraction"] < 1
    assert res.metadata["stage1_skill_count"] == len(res.matched_skills)
    assert res.metadata["final_count"] == len(res.tools)
    assert set(res.metadata) >= STAGES
    assert all(0.0 <= h.score <= 1.0 for h in res.tools)
    assert all(h.schema is None for h in res.tools)


def test_without_the_safety_net_every_tool_belongs_to_a_matched_skill(
    skills_engine: Engine,
) -> None:
    skills_engine.search_service.hierarchical.safety_net = 0.0
    res = skills_engine.find(hierarchical("weather forecast for Berlin", limit=10))
    used = set(res.metadata["skill_ids_used"])
    assert used
    assert res.tools and all(used & set(h.skill_ids) for h in res.tools)


def test_the_safety_net_still_finds_a_tool_filed_under_another_skill(
    skills_engine: Engine,
) -> None:
    store = skills_engine.store
    misfiled = SkillAssignment("gmail::send_email", "weather", 0.9, True)
    tool = store.tools.get("gmail::send_email")
    store.skills.replace_assignments([Classified(tool.id, tool.content_hash, "test", (misfiled,))])
    query = "send an email message to my colleague"
    # Stage 1 reads the nearest tools' skills, so it matches "weather" too unless only the
    # best skill may match: then the misfiled tool lies outside it.
    with_net, meta = find(skills_engine, query, limit=5, tool_threshold=0.0, skill_limit=1)
    # BR-001: a tool outside the matched skills comes only from a fallback, which says so.
    assert meta["skill_ids_used"] is None and meta["strategy_used"] == "direct"
    assert "safety net" in str(meta["fallback"])
    assert "gmail::send_email" in with_net
    skills_engine.search_service.hierarchical.safety_net = 0.0
    without, _ = find(skills_engine, query, limit=5, tool_threshold=0.0, skill_limit=1)
    assert "gmail::send_email" not in without


def test_hierarchical_answers_hold_only_matched_skills_tools_unless_it_falls_back(
    skills_engine: Engine,
) -> None:
    """BR-001, with the safety net on: a matched skill smaller than the limit is not topped up
    with other skills' tools."""
    for query in ("send an email message to my colleague", "weather forecast for Berlin"):
        res = skills_engine.find(hierarchical(query, limit=10, tool_threshold=0.0))
        used = res.metadata["skill_ids_used"]
        assert used is not None and res.metadata["strategy_used"] == "hierarchical"
        assert res.metadata["fallback"] is None
        assert res.tools and all(set(used) & set(h.skill_ids) for h in res.tools)


def test_direct_skips_stage_one(skills_engine: Engine) -> None:
    res = skills_engine.find(hierarchical("send an email", strategy=Strategy.DIRECT))
    assert res.matched_skills == []
    assert res.metadata["skill_ids_used"] is None
    assert res.metadata["stage1_skill_count"] == 0
    assert res.metadata["searched_fraction"] == 1.0
    assert res.tools[0].tool.id == "gmail::send_email"


def test_hybrid_merges_both_strategies(skills_engine: Engine) -> None:
    hier, _ = find(skills_engine, "merge the pull request", limit=10, tool_threshold=0.0)
    direct, _ = find(
        skills_engine,
        "merge the pull request",
        limit=10,
        tool_threshold=0.0,
        strategy=Strategy.DIRECT,
    )
    res = skills_engine.find(
        hierarchical(
            "merge the pull request", limit=10, tool_threshold=0.0, strategy=Strategy.HYBRID
        )
    )
    ids = [h.tool.id for h in res.tools]
    assert res.metadata["strategy_used"] == "hybrid"
    assert res.matched_skills
    assert set(ids) <= set(hier) | set(direct)
    assert ids[0] == "github::merge_pull_request"
    assert [h.score for h in res.tools] == sorted((h.score for h in res.tools), reverse=True)


def test_no_active_skills_falls_back_to_every_tool_with_a_warning(
    skills_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    for match in skills_engine.skills.list():
        skills_engine.skills.deactivate(match.skill.id)
    with caplog.at_level(logging.WARNING, logger="toolscout.search"):
        res = skills_engine.find(hierarchical("send an email"))
    assert res.matched_skills == []
    assert res.metadata["skill_ids_used"] is None
    assert res.metadata["searched_fraction"] == 1.0
    assert res.tools[0].tool.id == "gmail::send_email"
    assert any("searching every tool" in r.message for r in caplog.records)
    # Under load the warning is not repeated for every search: the next ones go to DEBUG.
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="toolscout.search"):
        for query in ("send a chat message", "read a file", "send an email"):
            skills_engine.find(hierarchical(query))
    fallbacks = [r for r in caplog.records if "searching every tool" in r.message]
    assert len(fallbacks) == 2  # the cached third search did not run again
    assert {r.levelno for r in fallbacks} == {logging.DEBUG}


def test_index_without_any_skills_falls_back(tmp_path: object, vector_cache: object) -> None:
    settings = Settings(db=f"{tmp_path}/bare.db", cache_dir=str(vector_cache), skills_starter=False)
    engine = build(settings)
    try:
        assert engine.skills.list() == []
        res = engine.find(hierarchical("read the contents of a file"))
        assert res.metadata["skill_ids_used"] is None
        direct, _ = find(engine, "read the contents of a file", strategy=Strategy.DIRECT)
        assert [h.tool.id for h in res.tools] == direct
        assert "fs::read_file" in direct
        assert all(h.primary_skill_id is None and h.skill_ids == () for h in res.tools)
    finally:
        engine.close()


def test_skill_threshold_zero_lets_every_skill_up_to_the_limit_match(
    skills_engine: Engine,
) -> None:
    active = len(skills_engine.skills.list(include_inactive=False))
    res = skills_engine.find(
        hierarchical("send an email", skill_threshold=0.0, skill_limit=20, skill_coverage=1.0)
    )
    assert res.metadata["stage1_skill_count"] == min(20, active)
    assert [m.score for m in res.matched_skills] == sorted(
        (m.score for m in res.matched_skills), reverse=True
    )


def test_a_clear_request_matches_fewer_skills_than_a_vague_one(skills_engine: Engine) -> None:
    # Skills are added until the fitted coverage estimate reaches skill_coverage: a request
    # whose nearest tools all sit in one skill stops early, well below the limit.
    clear = skills_engine.find(hierarchical("send an email message to my colleague"))
    vague = skills_engine.find(hierarchical("help me with this thing"))
    limit = SearchRequest("x").skill_limit
    assert 1 <= len(clear.matched_skills) < len(vague.matched_skills) <= limit
    assert clear.matched_skills[0].skill.id == "email"
    unbounded = skills_engine.find(
        hierarchical(
            "send an email message to my colleague", skill_coverage=1.0, skill_threshold=0.0
        )
    )
    assert len(unbounded.matched_skills) > len(clear.matched_skills)
    assert [m.skill.id for m in unbounded.matched_skills][: len(clear.matched_skills)] == [
        m.skill.id for m in clear.matched_skills
    ]


def test_skill_threshold_one_matches_nothing_and_falls_back(skills_engine: Engine) -> None:
    res = skills_engine.find(hierarchical("send an email", skill_threshold=1.0))
    assert res.matched_skills == []
    assert res.metadata["skill_ids_used"] is None
    assert res.metadata["strategy_used"] == "direct" and res.metadata["fallback"]
    assert res.tools


def test_tool_threshold_bounds_the_scores(skills_engine: Engine) -> None:
    loose = skills_engine.find(hierarchical("calendar", tool_threshold=0.0, limit=10))
    strict = skills_engine.find(hierarchical("calendar", tool_threshold=1.0, limit=10))
    assert len(loose.tools) > len(strict.tools)
    assert all(h.score >= 1.0 for h in strict.tools)


def test_matched_skill_without_tools_gives_an_empty_result(skills_engine: Engine) -> None:
    skills_engine.skills.create(
        Skill(
            "astronomy",
            "Astronomy",
            "Telescopes, stars, planets, galaxies, comets and the night sky.",
            keywords=("telescope", "star", "planet", "galaxy", "comet"),
        )
    )
    res = skills_engine.find(
        hierarchical("which planets and galaxies can my telescope see", skill_limit=1)
    )
    assert [m.skill.id for m in res.matched_skills] == ["astronomy"]
    assert res.matched_skills[0].tool_count == 0
    assert res.tools == []
    assert res.metadata["skill_ids_used"] == ["astronomy"]
    assert res.metadata["stage2_candidate_count"] == 0


def test_deactivated_skill_is_not_matched_and_reactivation_restores_it(
    skills_engine: Engine,
) -> None:
    skills_engine.skills.deactivate("email")
    res = skills_engine.find(hierarchical("send an email message", skill_threshold=0.0))
    assert "email" not in [m.skill.id for m in res.matched_skills]
    assert skills_engine.skills.get("email").is_active is False
    skills_engine.skills.reactivate("email")
    res = skills_engine.find(hierarchical("send an email message"))
    assert res.matched_skills[0].skill.id == "email"


def test_tool_with_no_skills_is_found_only_by_direct(
    tmp_path: object, vector_cache: object
) -> None:
    engine = Engine.open(Settings(db=f"{tmp_path}/x.db", cache_dir=str(vector_cache)))
    try:
        # Indexed while no skill is active, the tool gets no skills at all.
        for match in engine.skills.list():
            engine.skills.deactivate(match.skill.id)
        lone = Tool("legacy::send_mail", "send_mail", "Send an email message through SMTP.")
        engine.index([Loaded("lone", [lone])])
        for match in engine.skills.list():
            engine.skills.reactivate(match.skill.id)
        engine.index([Loaded("tests", list(CATALOG))])
        assert engine.store.skills.assignments([lone.id]) == {}
        hier, meta = find(engine, "send an email message", limit=10, tool_threshold=0.0)
        direct, _ = find(
            engine, "send an email message", limit=10, tool_threshold=0.0, strategy=Strategy.DIRECT
        )
        assert meta["skill_ids_used"] is not None
        assert lone.id in direct and lone.id not in hier
    finally:
        engine.close()


def test_item_type_filter_applies_in_stage_two(skills_engine: Engine) -> None:
    res = skills_engine.find(
        hierarchical("weather terms", item_type=ItemType.RESOURCE, tool_threshold=0.0)
    )
    assert [h.tool.id for h in res.tools] == ["docs::weather_glossary"] or res.tools == []
    assert all(h.tool.item_type is ItemType.RESOURCE for h in res.tools)
    direct = skills_engine.find(
        hierarchical("weather terms", item_type=ItemType.RESOURCE, strategy=Strategy.DIRECT)
    )
    assert [h.tool.id for h in direct.tools] == ["docs::weather_glossary"]


def test_schemas_are_loaded_only_when_asked_and_a_broken_one_is_null(
    skills_engine: Engine,
) -> None:
    res = skills_engine.find(hierarchical("send an email", include_schemas=True))
    assert res.tools[0].schema is not None
    assert "subject" in res.tools[0].schema["properties"]
    store = skills_engine.store
    with store.database.transaction() as conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE tools SET input_schema='{not json' WHERE id='gmail::send_email'")
    res = skills_engine.find(hierarchical("send an email", include_schemas=True))
    assert res.tools[0].tool.id == "gmail::send_email"
    assert res.tools[0].schema is None
    assert any(h.schema is not None for h in res.tools[1:])


def test_a_query_of_1001_characters_is_rejected_naming_the_field(skills_engine: Engine) -> None:
    with pytest.raises(QueryError) as err:
        skills_engine.find(hierarchical("a" * 1001))
    assert err.value.field == "query"
    ok = skills_engine.find(hierarchical("email " + "a" * 994))
    assert ok.metadata["strategy_used"] == "hierarchical"


def test_an_empty_query_is_rejected(skills_engine: Engine) -> None:
    with pytest.raises(EmptyQuery):
        skills_engine.find(hierarchical("   "))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("limit", 0),
        ("limit", 51),
        ("skill_limit", 0),
        ("skill_threshold", -0.1),
        ("skill_threshold", 1.5),
        ("skill_coverage", -0.5),
        ("skill_coverage", math.inf),
        ("tool_threshold", math.nan),
        ("tool_threshold", "high"),
        ("strategy", "fastest"),
        ("item_type", "widget"),
    ],
)
def test_invalid_request_fields_are_named(skills_engine: Engine, field: str, value: object) -> None:
    with pytest.raises(QueryError) as err:
        skills_engine.find(hierarchical("send an email", **{field: value}))  # type: ignore[arg-type]
    assert err.value.field == field


def test_match_skills_and_search_in_skills_are_the_two_stages(skills_engine: Engine) -> None:
    matches = skills_engine.match_skills("list my upcoming meetings", limit=2, threshold=0.0)
    assert len(matches) == 2 and matches[0].skill.id == "calendar"
    hits = skills_engine.search_in_skills(
        "list my upcoming meetings", skill_ids=["calendar"], limit=5, threshold=0.0
    )
    assert hits and all("calendar" in h.skill_ids for h in hits)
    assert hits[0].tool.id == "calendar::list_events"
    everywhere = skills_engine.search_in_skills("read a file", skill_ids=None, limit=3)
    assert everywhere[0].tool.id == "fs::read_file"
    assert skills_engine.search_in_skills("read a file", skill_ids=[], limit=3) == []


def test_stage_methods_name_their_own_parameters_in_errors(skills_engine: Engine) -> None:
    with pytest.raises(QueryError) as err:
        skills_engine.match_skills("email", limit=0)
    assert err.value.field == "limit"
    with pytest.raises(QueryError) as err:
        skills_engine.match_skills("email", threshold=2.0)
    assert err.value.field == "threshold"
    with pytest.raises(QueryError) as err:
        skills_engine.search_in_skills("email", skill_ids=None, threshold=-1.0)
    assert err.value.field == "threshold"
    with pytest.raises(QueryError) as err:
        skills_engine.search_in_skills("email", skill_ids="email")
    assert err.value.field == "skill_ids"
