"""Skills: the skill record, assignments, stage-1 matches, suggestions, classification reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolscout.models.tools import JSON


@dataclass(frozen=True)
class Skill:
    """A human-governed group of tools (``calendar_management``, ``code_hosting``...).

    ``id`` matches ``^[a-z][a-z0-9_]*$``; ``examples`` are example tool names; a deactivated
    skill keeps its assignments but is left out of search.
    """

    id: str
    name: str
    description: str = ""
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    parent: str | None = None
    is_active: bool = True
    created_at: str = ""
    updated_at: str = ""

    def to_dict(self) -> JSON:
        """A JSON-ready dict (also the catalog file shape)."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "keywords": list(self.keywords),
            "examples": list(self.examples),
            "parent": self.parent,
            "is_active": self.is_active,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True)
class SkillAssignment:
    """One tool-in-skill membership with the classifier's confidence (0..1)."""

    tool_id: str
    skill_id: str
    confidence: float
    is_primary: bool = False


@dataclass(frozen=True)
class SkillMatch:
    """A skill with a query score (0..1; 0 when listed without a query) and its tool count."""

    skill: Skill
    score: float
    tool_count: int


@dataclass(frozen=True)
class Suggestion:
    """A skill an LLM classifier proposed while classifying ``source_tool_id``."""

    id: int
    skill_id: str
    name: str
    description: str
    source_tool_id: str
    status: str
    reason: str | None
    created_at: str
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassifyProgress:
    """Batch classification progress, reported after each tool."""

    processed: int
    total: int
    errors: int


@dataclass(frozen=True)
class ClassifyReport:
    """What a batch classification did; ``failed`` lists tool ids to retry."""

    processed: int
    total: int
    errors: int
    failed: list[str] = field(default_factory=list)
