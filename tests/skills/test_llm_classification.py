"""The LLM classifier against a local OpenAI-compatible TEST DOUBLE (tests/support): good
answers, malformed JSON, timeouts, HTTP errors, unknown skill ids, proposed skills."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from support.openai_double import OpenAIDouble, good, hang, malformed, status
from support.skills_catalog import CATALOG
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.enrich.llm import OpenAICompatibleLLM, open_llm
from toolscout.errors import ConfigError, EnrichError, SkillError
from toolscout.models import Loaded, Tool

Make = Callable[..., Engine]
TOOL = Tool("acme::notify", "notify", "Post a short notice to the team channel.", server="acme")


@pytest.fixture
def double() -> Iterator[OpenAIDouble]:
    with OpenAIDouble() as server:
        yield server


def llm_engine(
    double: OpenAIDouble, built_index: Path, tmp_path: Path, vector_cache: Path, **kw: object
) -> Engine:
    target = tmp_path / "llm.db"
    target.write_bytes(built_index.read_bytes())
    settings = Settings(
        db=str(target),
        cache_dir=str(vector_cache),
        llm_base_url=double.base_url,
        llm_model="double-model",
        llm_api_key="test-key",
        llm_timeout=kw.pop("timeout", 5.0),  # type: ignore[arg-type]
        llm_retries=kw.pop("retries", 0),  # type: ignore[arg-type]
    )
    return Engine.open(settings)


@pytest.fixture
def make(
    double: OpenAIDouble, built_index: Path, tmp_path: Path, vector_cache: Path
) -> Iterator[Make]:
    engines: list[Engine] = []

    def _make(**kw: object) -> Engine:
        engine = llm_engine(double, built_index, tmp_path, vector_cache, **kw)
        engines.append(engine)
        return engine

    yield _make
    for engine in engines:
        engine.close()


def top(engine: Engine, tool_id: str) -> tuple[str, float, str]:
    rows = engine.store.skills.assignments([tool_id])[tool_id]
    return (
        rows[0].skill_id,
        rows[0].confidence,
        engine.store.skills.classification_state()[tool_id][1],
    )


def classifier_of(engine: Engine, tool_id: str) -> str:
    rows = engine.store.database.query(  # type: ignore[attr-defined]
        "SELECT classifier FROM tool_classification WHERE tool_id=?", (tool_id,)
    )
    return str(rows[0][0])


def test_a_valid_llm_answer_assigns_its_skills(make: Make, double: OpenAIDouble) -> None:
    engine = make()
    double.script(
        good({"skills": [{"skill_id": "messaging", "confidence": 0.92},
                         {"skill_id": "email", "confidence": 0.3}], "proposed_skill": None})
    )  # fmt: skip
    engine.index([Loaded("acme", [TOOL])])
    rows = engine.store.skills.assignments([TOOL.id])[TOOL.id]
    assert [(a.skill_id, a.confidence, a.is_primary) for a in rows] == [
        ("messaging", 0.92, True),
        ("email", 0.3, False),
    ]
    assert classifier_of(engine, TOOL.id) == "llm:openai-compatible:double-model"
    sent = double.requests[-1]
    assert sent["model"] == "double-model"
    prompt = " ".join(str(m.get("content")) for m in sent["messages"])
    assert "notify" in prompt and "messaging:" in prompt


def test_malformed_json_falls_back_to_the_offline_classifier(
    make: Make, double: OpenAIDouble
) -> None:
    engine = make()
    double.script(malformed())
    engine.index([Loaded("acme", [TOOL])])
    assert top(engine, TOOL.id)[0] == "messaging"
    assert classifier_of(engine, TOOL.id) == "offline (llm fallback)"
    assert len(double.requests) == 1


def test_a_retry_after_malformed_json_uses_the_second_answer(
    make: Make, double: OpenAIDouble
) -> None:
    engine = make(retries=1)
    double.script(malformed(), good({"skills": [{"skill_id": "email", "confidence": 0.7}]}))
    engine.index([Loaded("acme", [TOOL])])
    assert top(engine, TOOL.id)[:2] == ("email", 0.7)
    assert len(double.requests) == 2


def test_a_timeout_falls_back_to_the_offline_classifier(make: Make, double: OpenAIDouble) -> None:
    engine = make(timeout=0.5)
    double.script(hang())
    engine.index([Loaded("acme", [TOOL])])
    assert top(engine, TOOL.id)[0] == "messaging"
    assert classifier_of(engine, TOOL.id) == "offline (llm fallback)"


def test_an_http_error_falls_back_to_the_offline_classifier(
    make: Make, double: OpenAIDouble
) -> None:
    engine = make()
    double.script(status(500))
    engine.index([Loaded("acme", [TOOL])])
    assert classifier_of(engine, TOOL.id) == "offline (llm fallback)"


def test_an_unknown_skill_id_falls_back_to_the_offline_classifier(
    make: Make, double: OpenAIDouble
) -> None:
    engine = make()
    double.script(good({"skills": [{"skill_id": "teleportation", "confidence": 0.99}]}))
    engine.index([Loaded("acme", [TOOL])])
    skill, _, state = top(engine, TOOL.id)
    assert (skill, state) == ("messaging", "done")
    assert "teleportation" not in {m.skill.id for m in engine.skills.list()}
    assert classifier_of(engine, TOOL.id) == "offline (llm fallback)"


def test_a_proposed_skill_is_queued_with_its_source_tool(make: Make, double: OpenAIDouble) -> None:
    engine = make()
    proposal = {
        "id": "team_notices",
        "name": "Team notices",
        "description": "Post notices and announcements to a team.",
        "keywords": ["notice", "announcement"],
    }
    double.script(
        good({"skills": [{"skill_id": "messaging", "confidence": 0.6}], "proposed_skill": proposal})
    )
    engine.index([Loaded("acme", [TOOL])])
    pending = engine.suggestions.pending()
    assert [(s.skill_id, s.source_tool_id, s.status) for s in pending] == [
        ("team_notices", TOOL.id, "pending")
    ]
    assert pending[0].keywords == ("notice", "announcement")
    # Approving creates the skill and re-classifies the source tool with the new skill known.
    double.script(good({"skills": [{"skill_id": "team_notices", "confidence": 0.95}]}))
    skill = engine.suggestions.approve(pending[0].id)
    assert skill.id == "team_notices" and engine.skills.get("team_notices").name == "Team notices"
    assert top(engine, TOOL.id)[:2] == ("team_notices", 0.95)
    assert engine.suggestions.pending() == []
    with pytest.raises(SkillError, match="already approved"):
        engine.suggestions.approve(pending[0].id)


def test_a_rejected_suggestion_keeps_its_reason_and_is_not_queued_again(
    make: Make, double: OpenAIDouble
) -> None:
    engine = make()
    proposal = {"id": "team_notices", "name": "Team notices"}
    answer = {"skills": [{"skill_id": "messaging", "confidence": 0.6}], "proposed_skill": proposal}
    double.script(good(answer))
    engine.index([Loaded("acme", [TOOL])])
    (suggestion,) = engine.suggestions.pending()
    with pytest.raises(SkillError, match="reason"):
        engine.suggestions.reject(suggestion.id, "  ")
    rejected = engine.suggestions.reject(suggestion.id, "messaging covers it")
    assert (rejected.status, rejected.reason) == ("rejected", "messaging covers it")
    double.script(good(answer))
    engine.classify(all=True)
    assert engine.suggestions.pending() == []
    with pytest.raises(SkillError, match="no suggestion"):
        engine.suggestions.reject(999, "nope")


def test_batch_classification_with_the_llm_runs_concurrently_and_falls_back_per_tool(
    make: Make,
    double: OpenAIDouble,
) -> None:
    engine = make()
    double.default = good({"skills": [{"skill_id": "documents", "confidence": 0.8}]})
    double.script(malformed())
    report = engine.classify(all=True, concurrency=4)
    assert report.total == report.processed == len(CATALOG) and report.errors == 0
    assert len(double.requests) == len(CATALOG)
    states = engine.store.skills.classification_state()
    assert all(states[t.id][1] == "done" for t in CATALOG)
    used = {classifier_of(engine, t.id) for t in CATALOG}
    assert used == {"llm:openai-compatible:double-model", "offline (llm fallback)"}


class Answer(BaseModel):
    word: str


def test_the_llm_client_raises_enrich_error_after_its_retries(double: OpenAIDouble) -> None:
    llm = OpenAICompatibleLLM(
        base_url=double.base_url, model="m", timeout=2.0, retries=2, backoff=0.01
    )
    double.script(malformed(), status(503), malformed())
    with pytest.raises(EnrichError, match="3 attempts"):
        llm.complete_json("say a word", Answer)
    assert len(double.requests) == 3
    double.script(good({"word": "hello"}))
    assert llm.complete_json("say a word", Answer) == Answer(word="hello")


def test_llm_settings_must_come_in_pairs() -> None:
    assert open_llm(Settings()) is None
    with pytest.raises(ConfigError, match="llm_model"):
        open_llm(Settings(llm_base_url="http://127.0.0.1:1/v1"))
