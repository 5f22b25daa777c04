"""toolscout: find the right tools for an AI agent.

The public API is what ``__all__`` names; everything else may change between releases.
"""

from toolscout.config import Settings, load_settings
from toolscout.engine import Engine
from toolscout.errors import (
    ConfigError,
    EmbedError,
    EnrichError,
    IngestError,
    QueryError,
    SkillError,
    StoreError,
    ToolNotFound,
    ToolscoutError,
)
from toolscout.ingest.jsonfile import CatalogFile, load_catalog
from toolscout.models import (
    Filters,
    IndexReport,
    ItemType,
    SearchMode,
    SearchRequest,
    SearchResult,
    Skill,
    SkillMatch,
    Strategy,
    Tool,
    ToolHit,
)
from toolscout.store.base import open_store

__version__ = "0.1.0"

__all__ = [
    "CatalogFile",
    "ConfigError",
    "EmbedError",
    "Engine",
    "EnrichError",
    "Filters",
    "IndexReport",
    "IngestError",
    "ItemType",
    "QueryError",
    "SearchMode",
    "SearchRequest",
    "SearchResult",
    "Settings",
    "Skill",
    "SkillError",
    "SkillMatch",
    "StoreError",
    "Strategy",
    "Tool",
    "ToolHit",
    "ToolNotFound",
    "ToolscoutError",
    "__version__",
    "load_catalog",
    "load_settings",
    "open_store",
]
