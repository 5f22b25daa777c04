"""Core data: plain frozen dataclasses used everywhere inside toolscout.

Pydantic lives only at the edges (HTTP bodies, settings, catalog parsing); the engine, stores and
search code pass these objects around. ``tools`` holds the tool record and what indexing
reports, ``search`` the request and its result, ``skills`` the skill records; every name is
imported from here.
"""

from toolscout.models.search import (
    Filters,
    Ranked,
    Scored,
    SearchMode,
    SearchRequest,
    SearchResult,
    Strategy,
    ToolHit,
)
from toolscout.models.skills import (
    ClassifyProgress,
    ClassifyReport,
    Skill,
    SkillAssignment,
    SkillMatch,
    Suggestion,
)
from toolscout.models.tools import (
    JSON,
    IndexReport,
    ItemType,
    Loaded,
    Problem,
    SchemaLoader,
    Tool,
    content_hash,
)

__all__ = [
    "JSON",
    "ClassifyProgress",
    "ClassifyReport",
    "Filters",
    "IndexReport",
    "ItemType",
    "Loaded",
    "Problem",
    "Ranked",
    "SchemaLoader",
    "Scored",
    "SearchMode",
    "SearchRequest",
    "SearchResult",
    "Skill",
    "SkillAssignment",
    "SkillMatch",
    "Strategy",
    "Suggestion",
    "Tool",
    "ToolHit",
    "content_hash",
]
