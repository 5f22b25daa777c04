"""What ranking learns from recorded calls: successes lift a tool for requests like the one it
served, failures never do, and the log is per index, bounded, clearable and optional."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from toolscout.engine import Engine
from toolscout.errors import QueryError, ToolNotFound

#: The starter catalog ranks the right tool below the top 3 for this request.
REQUEST = "open a PR from feature/search into main"
RIGHT = "github::create_pull_request"


def rank(engine: Engine, query: str, tool_id: str) -> int:
    ids = [h.tool.id for h in engine.search(query, limit=20).tools]
    return ids.index(tool_id) if tool_id in ids else len(ids)


def test_three_successful_calls_bring_the_right_tool_into_the_top_three(engine: Engine) -> None:
    assert rank(engine, REQUEST, RIGHT) >= 3
    for _ in range(3):
        engine.feedback.record(REQUEST, RIGHT, "success")
    assert rank(engine, REQUEST, RIGHT) < 3
    # A request worded differently but meaning the same learns from them too.
    assert rank(engine, "open a PR from feature/login into main", RIGHT) < 3


def test_three_failed_calls_never_move_a_tool_up(engine: Engine) -> None:
    before = rank(engine, REQUEST, RIGHT)
    for _ in range(3):
        engine.feedback.record(REQUEST, RIGHT, "error")
    assert rank(engine, REQUEST, RIGHT) >= before


def test_failures_cancel_successes(engine: Engine) -> None:
    before = rank(engine, REQUEST, RIGHT)
    for outcome in ("success", "error", "success", "error"):
        engine.feedback.record(REQUEST, RIGHT, outcome)
    assert rank(engine, REQUEST, RIGHT) == before


def test_unrelated_requests_keep_their_ranking(engine: Engine) -> None:
    query = "what's the weather in Lisbon tomorrow"
    before = [h.tool.id for h in engine.search(query, limit=5).tools]
    for _ in range(20):
        engine.feedback.record(REQUEST, RIGHT, "success")
    assert [h.tool.id for h in engine.search(query, limit=5).tools] == before


def test_disabled_setting_records_nothing_and_changes_nothing(
    open_copy: Callable[..., Engine],
) -> None:
    engine = open_copy(feedback=False)
    before = rank(engine, REQUEST, RIGHT)
    for _ in range(3):
        assert engine.feedback.record(REQUEST, RIGHT, "success") is None
    assert engine.feedback.summary()["rows"] == 0
    assert engine.info()["feedback"]["enabled"] is False
    assert rank(engine, REQUEST, RIGHT) == before


def test_clear_removes_rows_and_what_was_learned(engine: Engine) -> None:
    before = rank(engine, REQUEST, RIGHT)
    for _ in range(3):
        engine.feedback.record(REQUEST, RIGHT, "success")
    engine.feedback.record("send an email to Ana", "gmail::send_email", "success")
    assert engine.feedback.clear(RIGHT) == 3
    assert [r.tool_id for r in engine.feedback.log()] == ["gmail::send_email"]
    assert rank(engine, REQUEST, RIGHT) == before
    assert engine.feedback.clear() == 1
    assert engine.feedback.summary()["rows"] == 0


def test_every_row_is_auditable(engine: Engine) -> None:
    row_id = engine.feedback.record(REQUEST, RIGHT, "success", shown=["a::b", RIGHT])
    (row,) = engine.feedback.log()
    assert row.id == row_id
    assert (row.query, row.tool_id, row.outcome, row.shown) == (
        REQUEST, RIGHT, "success", ("a::b", RIGHT),
    )  # fmt: skip
    assert row.source == "api"
    learned = engine.feedback.learned()
    assert learned[0]["tool_id"] == RIGHT and learned[0]["requests"] == [REQUEST]
    counts = engine.info()["feedback"]
    assert (counts["rows"], counts["success"], counts["error"], counts["tools"]) == (1, 1, 0, 1)


def test_retention_keeps_the_newest_rows(open_copy: Callable[..., Engine]) -> None:
    engine = open_copy(feedback_keep=3)
    for n in range(5):
        engine.feedback.record(f"request number {n}", RIGHT, "success")
    assert [r.query for r in engine.feedback.log()] == [
        "request number 4", "request number 3", "request number 2",
    ]  # fmt: skip


def test_feedback_stays_in_its_own_index(open_copy: Callable[..., Engine]) -> None:
    first, second = open_copy("first.db"), open_copy("second.db")
    for _ in range(3):
        first.feedback.record(REQUEST, RIGHT, "success")
    assert second.feedback.summary()["rows"] == 0
    assert rank(second, REQUEST, RIGHT) >= 3


def test_bad_feedback_is_refused_naming_the_field(engine: Engine) -> None:
    with pytest.raises(QueryError) as bad:
        engine.feedback.record(REQUEST, RIGHT, "maybe")
    assert bad.value.field == "outcome"
    with pytest.raises(ToolNotFound):
        engine.feedback.record(REQUEST, "nope::missing", "success")
    assert engine.feedback.summary()["rows"] == 0


def test_a_broken_feedback_log_never_fails_a_search(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    engine.feedback.record(REQUEST, RIGHT, "success")
    with engine.store.database.transaction() as conn:  # type: ignore[attr-defined]
        conn.execute("DROP TABLE feedback")
    with caplog.at_level(logging.WARNING, logger="toolscout.feedback"):
        hits = engine.search(REQUEST, limit=5).tools
    assert hits
    assert "ranking without it" in caplog.text
