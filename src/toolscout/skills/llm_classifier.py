"""The LLM classifier: asks an OpenAI-compatible model for 1-3 skills per tool.

The answer must validate against :class:`ClassificationAnswer` and name only active skills
(apart from a skill it proposes in the same answer). A failed call (after the client's
retries), an invalid answer or an unknown skill id falls back to the offline classifier for
that tool, so a batch never stops on the LLM. A proposed skill goes to the suggestion queue.
"""

from __future__ import annotations

import json
import logging

from pydantic import BaseModel, Field

from toolscout.enrich.llm import LLM
from toolscout.errors import EnrichError
from toolscout.models import Skill, Tool
from toolscout.skills.catalog import SKILL_ID
from toolscout.skills.classify import OfflineClassifier, ProposedSkill, Vector, Verdict
from toolscout.store.roles import SkillStore

log = logging.getLogger("toolscout.skills")

MAX_DESCRIPTION = 1500


class SkillChoice(BaseModel):
    skill_id: str = Field(description="id of a skill from the list")
    confidence: float = Field(ge=0.0, le=1.0, description="0..1: how sure you are")


class NewSkill(BaseModel):
    id: str = Field(description="lowercase_snake_case id")
    name: str
    description: str = ""
    keywords: list[str] = Field(default_factory=list, max_length=20)


class ClassificationAnswer(BaseModel):
    """What the model must return."""

    skills: list[SkillChoice] = Field(max_length=3)
    proposed_skill: NewSkill | None = None


def build_prompt(tool: Tool, skills: list[Skill]) -> str:
    """The classification prompt: the catalog, the tool, the rules."""
    catalog = "\n".join(f"- {s.id}: {s.name}. {s.description}" for s in skills)
    params = ", ".join(tool.parameter_names()[:20]) or "none"
    return (
        "You sort tools that an AI agent can call into skills.\n"
        f"Skills:\n{catalog}\n\n"
        f"Tool name: {tool.name}\n"
        f"Server: {tool.server or 'unknown'}\n"
        f"Description: {tool.description[:MAX_DESCRIPTION]}\n"
        f"Parameters: {params}\n\n"
        "Pick the 1 to 3 skills from the list that fit this tool best, each with a confidence "
        "from 0 to 1 (at least 0.5 only when you are fairly sure). Use only ids from the list. "
        "If no listed skill fits and a new skill would, describe it in proposed_skill "
        "(lowercase_snake_case id); otherwise set proposed_skill to null.\n"
        f"Answer with JSON only, e.g. {json.dumps(_EXAMPLE)}"
    )


_EXAMPLE = {"skills": [{"skill_id": "email", "confidence": 0.9}], "proposed_skill": None}


class LLMClassifier:
    """Classifies with ``llm``; falls back to ``offline`` per tool."""

    def __init__(self, llm: LLM, offline: OfflineClassifier, skills: SkillStore) -> None:
        self.llm = llm
        self.offline = offline
        self.skills = skills
        self._skills: list[Skill] = []

    @property
    def name(self) -> str:
        return f"llm:{self.llm.name}"

    def prepare(self) -> None:
        self.offline.prepare()
        self._skills = self.skills.list_skills(include_inactive=False)

    def classify(self, tool: Tool, vector: Vector | None) -> Verdict:
        """Raises: ToolscoutError only when the offline fallback cannot classify either."""
        try:
            return self._ask(tool)
        except EnrichError as exc:
            log.warning("LLM classification of %s failed, using offline: %s", tool.id, exc)
            fallback = self.offline.classify(tool, vector)
            return Verdict(fallback.confidences, "offline (llm fallback)", _proposal_of(exc))

    def _ask(self, tool: Tool) -> Verdict:
        answer = self.llm.complete_json(build_prompt(tool, self._skills), ClassificationAnswer)
        proposal = _proposal(answer.proposed_skill)
        known = {s.id for s in self._skills}
        chosen: list[tuple[str, float]] = []
        for choice in answer.skills:
            if choice.skill_id in known:
                chosen.append((choice.skill_id, choice.confidence))
            elif proposal is None or choice.skill_id != proposal.id:
                raise _Nonsense(f"unknown skill id {choice.skill_id!r} in the answer", proposal)
        if not chosen:
            # Only a new skill fits (or none): the offline skills stand in until it exists.
            raise _Nonsense("the answer names no listed skill", proposal)
        return Verdict(tuple(chosen), self.name, proposal)


class _Nonsense(EnrichError):
    """A well-formed answer that cannot be used; keeps any valid proposal it carried."""

    def __init__(self, message: str, proposal: ProposedSkill | None) -> None:
        super().__init__(message)
        self.proposal = proposal


def _proposal(new: NewSkill | None) -> ProposedSkill | None:
    if new is None or not SKILL_ID.match(new.id) or not new.name.strip():
        return None
    return ProposedSkill(new.id, new.name.strip(), new.description.strip(), tuple(new.keywords))


def _proposal_of(exc: EnrichError) -> ProposedSkill | None:
    return exc.proposal if isinstance(exc, _Nonsense) else None
