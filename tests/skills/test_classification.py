"""Classification on index and in batch, the primary/uncategorized rule, skill centroids."""

from __future__ import annotations

import numpy as np

from support.skills_catalog import CATALOG
from toolscout.engine import Engine
from toolscout.models import ClassifyProgress, Loaded, Tool, ToolHit
from toolscout.search.skillfit import packaged_skill_fit
from toolscout.skills.centroid import weighted_centroid
from toolscout.skills.classify import PRIMARY_FLOOR


def test_indexing_gives_every_tool_one_to_three_skills_with_confidences(
    skills_engine: Engine,
) -> None:
    assigned = skills_engine.store.skills.assignments([t.id for t in CATALOG])
    assert set(assigned) == {t.id for t in CATALOG}
    for rows in assigned.values():
        assert 1 <= len(rows) <= 3
        assert all(0.0 <= a.confidence <= 1.0 for a in rows)
        assert [a.confidence for a in rows] == sorted((a.confidence for a in rows), reverse=True)
        assert all(a.confidence >= packaged_skill_fit().keep_floor for a in rows[1:])
        primaries = [a for a in rows if a.is_primary]
        if rows[0].confidence >= PRIMARY_FLOOR:
            assert primaries == [rows[0]]
        else:
            assert primaries == []


def test_obvious_tools_land_in_their_skill(skills_engine: Engine) -> None:
    expected = {
        "gmail::send_email": "email",
        "calendar::create_event": "calendar",
        "github::create_pull_request": "code_hosting",
        "weather::get_forecast": "weather",
        "fs::read_file": "file_operations",
        "stocks::get_stock_quote": "finance_markets",
    }
    assigned = skills_engine.store.skills.assignments(list(expected))
    for tool_id, skill_id in expected.items():
        top = assigned[tool_id][0]
        assert (top.skill_id, top.is_primary) == (skill_id, True), tool_id


def test_a_tool_no_skill_fits_is_uncategorized(skills_engine: Engine) -> None:
    odd = Tool("misc::frobnicate", "frobnicate", "Frobnicate the quux widget harmonics.")
    skills_engine.index([Loaded("misc", [odd])])
    rows = skills_engine.store.skills.assignments([odd.id])[odd.id]
    assert 1 <= len(rows) <= 3
    assert not any(a.is_primary for a in rows)
    hits: list[ToolHit] = skills_engine.search_in_skills(
        "frobnicate quux widget", skill_ids=None, limit=1, threshold=0.0
    )
    # No assignment is marked primary: the most confident one stands in (never a made-up id).
    assert hits[0].tool.id == odd.id and hits[0].primary_skill_id == rows[0].skill_id
    assert hits[0].primary_skill_id in hits[0].skill_ids


def test_unchanged_tools_are_not_classified_again(skills_engine: Engine) -> None:
    report = skills_engine.classify()
    assert (report.total, report.processed, report.errors) == (0, 0, 0)
    seen: list[ClassifyProgress] = []
    report = skills_engine.classify(all=True, concurrency=2, progress=seen.append)
    assert report.total == report.processed == len(CATALOG)
    assert report.errors == 0 and report.failed == []
    assert seen[0] == ClassifyProgress(0, len(CATALOG), 0)
    assert seen[-1] == ClassifyProgress(len(CATALOG), len(CATALOG), 0)
    assert [p.processed for p in seen] == sorted(p.processed for p in seen)


def test_a_changed_tool_is_reclassified_on_index(skills_engine: Engine) -> None:
    changed = Tool(
        "gmail::read_email",
        "get_city_weather",
        "Get the current weather forecast, temperature and rain for a city.",
        server="weather",
    )
    skills_engine.index([Loaded("tests", [changed])])
    top = skills_engine.store.skills.assignments([changed.id])[changed.id][0]
    assert top.skill_id == "weather"
    state = skills_engine.store.skills.classification_state()[changed.id]
    assert state == (changed.content_hash, "done")


def test_a_failed_classification_is_recorded_and_retried(skills_engine: Engine) -> None:
    store = skills_engine.store
    with store.database.transaction() as conn:  # type: ignore[attr-defined]
        # A tool whose vector is missing cannot be compared with any skill.
        conn.execute(
            "DELETE FROM tools_vec WHERE rowid=(SELECT rowid FROM tools WHERE id='fs::read_file')"
        )
    report = skills_engine.classify(all=True)
    assert report.failed == ["fs::read_file"] and report.errors == 1
    assert store.skills.classification_state()["fs::read_file"][1] == "failed"
    again = skills_engine.classify()
    assert again.total == 1 and again.failed == ["fs::read_file"]
    skills_engine.delete(["fs::read_file"])
    fixed = Tool("fs::read_file", "read_file", "Read the contents of a file from disk.")
    skills_engine.index([Loaded("tests", [fixed])])
    assert store.skills.classification_state()["fs::read_file"] == (fixed.content_hash, "done")
    assert skills_engine.classify().total == 0


def _centroid(engine: Engine, skill_id: str) -> np.ndarray:
    return engine.store.skills.skill_vectors()[skill_id]


def test_skill_vector_is_the_weighted_centroid_of_its_tools(skills_engine: Engine) -> None:
    store = skills_engine.store
    members = store.skills.skill_members(["email"])["email"]
    vectors = store.vectors([t for t, _ in members])
    expected = weighted_centroid(members, vectors)
    assert expected is not None
    assert np.allclose(_centroid(skills_engine, "email"), expected, atol=1e-5)
    assert abs(float(np.linalg.norm(_centroid(skills_engine, "email"))) - 1.0) < 1e-5


def test_skill_vector_follows_membership_changes(skills_engine: Engine) -> None:
    before = _centroid(skills_engine, "email")
    skills_engine.delete(["gmail::send_email"])
    after = _centroid(skills_engine, "email")
    members = skills_engine.store.skills.skill_members(["email"])["email"]
    assert "gmail::send_email" not in [t for t, _ in members]
    assert not np.allclose(before, after)
    expected = weighted_centroid(members, skills_engine.store.vectors([t for t, _ in members]))
    assert expected is not None and np.allclose(after, expected, atol=1e-5)


def test_weighted_centroid_weights_by_confidence() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    got = weighted_centroid([("a", 0.9), ("b", 0.3)], {"a": a, "b": b})
    assert got is not None
    assert got[0] > got[1] > 0
    assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-6
    assert weighted_centroid([], {}) is None
    assert weighted_centroid([("gone", 1.0)], {}) is None


def test_the_next_index_run_classifies_tools_a_killed_run_wrote_but_never_classified(
    skills_engine: Engine,
) -> None:
    """A kill between writing a chunk and classifying it leaves tools in the index without
    classification rows or assignments (the state is made here with the same SQL); the next run
    of the unchanged catalog repairs it, though it writes no tool."""
    lost = sorted(t.id for t in CATALOG)[:5]
    with skills_engine.store.database.transaction() as conn:  # type: ignore[attr-defined]
        for tool_id in lost:
            conn.execute("DELETE FROM tool_skills WHERE tool_id = ?", (tool_id,))
            conn.execute("DELETE FROM tool_classification WHERE tool_id = ?", (tool_id,))
    assert not set(lost) & set(skills_engine.store.skills.classification_state())
    report = skills_engine.index([Loaded("tests", list(CATALOG))])
    assert report.added == report.updated == 0
    assert set(lost) <= set(skills_engine.store.skills.classification_state())
    assigned = skills_engine.store.skills.assignments(lost)
    assert all(assigned.get(tool_id) for tool_id in lost), assigned
