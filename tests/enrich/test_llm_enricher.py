"""The LLM enricher against the OpenAI-compatible TEST DOUBLE (tests/support/openai_double.py):
strict answers, retries, timeouts, partial answers, failures that stay retryable, Chinese input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.enrich_catalog import chinese_tool, tracker_tools
from support.openai_double import OpenAIDouble, good, hang, malformed, status
from toolscout.enrich.llm import OpenAICompatibleLLM
from toolscout.enrich.llm_enricher import LLMEnricher
from toolscout.enrich.pipeline import EnrichmentPipeline
from toolscout.errors import EnrichError
from toolscout.store.sqlite import SQLiteStore

TOOL_ANSWER: dict[str, Any] = {
    "enhanced_description": "Removes an issue from the tracker for good.",
    "action_entities": ["delete issue", "remove ticket"],
    "use_cases": ["get rid of a duplicate bug report"],
    "keywords": ["remove", "ticket", "bug"],
}
PROFILE_ANSWER: dict[str, Any] = {
    "domain": "issue tracking for software teams",
    "capabilities": ["create issue", "delete issue"],
    "entity_types": ["issue"],
    "action_verbs": ["create", "delete"],
    "integration": "Connects an agent to a team's issue tracker.",
    "keywords": ["bug tracker", "tickets"],
}


@pytest.fixture
def double() -> Iterator[OpenAIDouble]:
    with OpenAIDouble(default=good(TOOL_ANSWER)) as server:
        yield server


def _enricher(double: OpenAIDouble, *, retries: int = 1, timeout: float = 10.0) -> LLMEnricher:
    llm = OpenAICompatibleLLM(
        base_url=double.base_url, model="double", retries=retries, timeout=timeout, backoff=0.0
    )
    return LLMEnricher(llm, concurrency=1)


def _prompt(request: dict[str, Any]) -> str:
    return " ".join(str(m.get("content", "")) for m in request["messages"])


def test_valid_answer_becomes_the_tool_enrichment_with_its_tokens(double: OpenAIDouble) -> None:
    result = _enricher(double).enrich(tracker_tools()[1], None)
    assert result.actions == ("delete issue", "remove ticket")
    assert result.keywords == ("remove", "ticket", "bug")
    assert result.tokens == 20  # the double reports 20 tokens per call
    assert "delete_issue" in _prompt(double.requests[0])


def test_profile_answer_becomes_a_server_profile(double: OpenAIDouble) -> None:
    double.script(good(PROFILE_ANSWER))
    tracker = [t for t in tracker_tools() if t.server == "tracker"]
    profile = _enricher(double).profile("tracker", tracker)
    assert profile.domain == "issue tracking for software teams"
    assert profile.keywords == ("bug tracker", "tickets")
    assert "create_issue" in _prompt(double.requests[0])


def test_bad_json_is_retried_and_the_next_valid_answer_is_used(double: OpenAIDouble) -> None:
    double.script(malformed(), good(TOOL_ANSWER))
    result = _enricher(double, retries=1).enrich(tracker_tools()[1], None)
    assert result.enhanced.startswith("Removes an issue")
    assert len(double.requests) == 2


def test_partial_answer_is_rejected(double: OpenAIDouble) -> None:
    partial = {"enhanced_description": "Removes an issue from the tracker."}
    double.script(good(partial))
    with pytest.raises(EnrichError):
        _enricher(double, retries=0).enrich(tracker_tools()[1], None)


def test_extra_keys_are_rejected_as_not_strict(double: OpenAIDouble) -> None:
    double.script(good({**TOOL_ANSWER, "confidence": 0.9}))
    with pytest.raises(EnrichError):
        _enricher(double, retries=0).enrich(tracker_tools()[1], None)


def test_server_errors_and_timeouts_raise_enrich_error(double: OpenAIDouble) -> None:
    double.script(status(500))
    with pytest.raises(EnrichError):
        _enricher(double, retries=0).enrich(tracker_tools()[1], None)
    double.script(hang())
    with pytest.raises(EnrichError, match="double"):
        _enricher(double, retries=0, timeout=0.5).enrich(tracker_tools()[1], None)


def test_chinese_input_is_answered_in_english_and_chinese_answers_are_retried(
    double: OpenAIDouble,
) -> None:
    chinese_answer = {**TOOL_ANSWER, "enhanced_description": "将地址转换为经纬度坐标的工具。"}
    english = {**TOOL_ANSWER, "enhanced_description": "Converts an address to coordinates."}
    double.script(good(chinese_answer), good(english))
    result = _enricher(double, retries=1).enrich(chinese_tool(), None)
    assert result.enhanced == "Converts an address to coordinates."
    prompt = _prompt(double.requests[0])
    assert "in English" in prompt
    assert "将地址转换为经纬度坐标" in prompt  # the original text is sent, not dropped


def test_failure_keeps_original_text_is_reported_and_retried_next_pass(
    double: OpenAIDouble, store: SQLiteStore
) -> None:
    tools = [t for t in tracker_tools() if t.server == "chat"]
    pipeline = EnrichmentPipeline(store, _enricher(double, retries=0))
    double.script(good(PROFILE_ANSWER), malformed(), good(TOOL_ANSWER))
    fields = pipeline.fields(tools)
    report = pipeline.last_report
    assert (report.tools_failed, report.tools_made) == (1, 1)
    assert report.failures and report.failures[0].startswith(tools[0].id)
    failed_fields = fields[tools[0].id]
    assert failed_fields is not None and "enhanced" not in failed_fields  # profile words only
    pipeline.fields(tools)  # default answer is valid now
    again = pipeline.last_report
    assert (again.tools_made, again.tools_cached, again.tools_failed) == (1, 1, 0)
    summary = {
        (kind, state): rows for _, kind, state, rows, _ in store.enrichments.enrichment_summary()
    }
    assert summary[("tool", "ok")] == 2
    assert ("tool", "failed") not in summary


def test_concurrent_enrichment_makes_every_tool_once(
    double: OpenAIDouble, store: SQLiteStore
) -> None:
    llm = OpenAICompatibleLLM(base_url=double.base_url, model="double", retries=0, backoff=0.0)
    double.script(good(PROFILE_ANSWER), good(PROFILE_ANSWER))
    pipeline = EnrichmentPipeline(store, LLMEnricher(llm, concurrency=4))
    pipeline.fields(tracker_tools())
    report = pipeline.last_report
    assert (report.tools_made, report.profiles_made) == (6, 2)
    assert len(double.requests) == 8
    assert report.tokens == 8 * 20
    pipeline.fields(tracker_tools())
    assert len(double.requests) == 8  # unchanged re-run: no calls
