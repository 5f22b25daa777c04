"""Wire models of the REST API's skill catalog: skills written by hand, the suggestions the
LLM classifier proposes, and batch classification requests.

Skills as a search or a listing shows them (``SkillOut``) and background jobs (``JobOut``) live in
:mod:`toolscout.api.schemas`, beside the search models that use them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from toolscout.api.schemas import NOT_BLANK, SKILL_ID_PATTERN, SkillOut, StrictRequest
from toolscout.models import Skill, Suggestion


class SkillCreate(StrictRequest):
    """A new skill. ``id`` is permanent: lowercase letters, digits and underscores."""

    id: str = Field(pattern=SKILL_ID_PATTERN, max_length=64)
    name: str = Field(min_length=1, max_length=200, json_schema_extra=NOT_BLANK)
    description: str = Field(default="", max_length=4000)
    keywords: list[str] = Field(default_factory=list, max_length=100)
    examples: list[str] = Field(default_factory=list, max_length=100)
    parent: str | None = Field(default=None, pattern=SKILL_ID_PATTERN, max_length=64)
    is_active: bool = True

    def to_skill(self) -> Skill:
        """The core skill this request describes (times are set by the catalog)."""
        return Skill(
            id=self.id,
            name=self.name,
            description=self.description,
            keywords=tuple(self.keywords),
            examples=tuple(self.examples),
            parent=self.parent,
            is_active=self.is_active,
        )


class SkillUpdate(StrictRequest):
    """Fields to change on a skill; the ones left out or null keep their values (a null
    ``parent`` removes the parent)."""

    name: str | None = Field(
        default=None, min_length=1, max_length=200, json_schema_extra=NOT_BLANK
    )
    description: str | None = Field(default=None, max_length=4000)
    keywords: list[str] | None = Field(default=None, max_length=100)
    examples: list[str] | None = Field(default=None, max_length=100)
    parent: str | None = Field(default=None, pattern=SKILL_ID_PATTERN, max_length=64)

    def changes(self) -> dict[str, Any]:
        """Only the fields the client sent, as keyword arguments for ``SkillCatalog.update``."""
        out: dict[str, Any] = {}
        for key, value in self.model_dump(exclude_unset=True).items():
            if value is None and key != "parent":  # null keeps the value; a parent may be cleared
                continue
            out[key] = tuple(value) if isinstance(value, list) else value
        return out


class SkillList(BaseModel):
    """Every skill with its tool count."""

    skills: list[SkillOut]


class SuggestionOut(BaseModel):
    """A proposed skill waiting for a human decision."""

    id: int
    skill_id: str
    name: str
    description: str
    source_tool_id: str
    status: str
    reason: str | None
    created_at: str

    @classmethod
    def of(cls, s: Suggestion) -> SuggestionOut:
        """Render a suggestion."""
        return cls(
            id=s.id,
            skill_id=s.skill_id,
            name=s.name,
            description=s.description,
            source_tool_id=s.source_tool_id,
            status=s.status,
            reason=s.reason,
            created_at=s.created_at,
        )


class SuggestionList(BaseModel):
    """Suggestions waiting for a decision."""

    suggestions: list[SuggestionOut]


class RejectRequest(StrictRequest):
    """Why a suggestion is rejected (kept with it)."""

    reason: str = Field(min_length=1, max_length=2000, json_schema_extra=NOT_BLANK)


class ClassifyRequest(StrictRequest):
    """Start batch classification of unclassified tools (or all of them)."""

    all: bool = False
    concurrency: int = Field(default=4, ge=1, le=32)
