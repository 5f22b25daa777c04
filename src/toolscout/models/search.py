"""Search values: modes, strategies, filters, leg scores, the request and its result."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolscout.models.skills import SkillMatch
from toolscout.models.tools import JSON, ItemType, SchemaLoader, Tool


class SearchMode(StrEnum):
    """Which retrieval legs a search uses."""

    BM25 = "bm25"
    VECTOR = "vector"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True, init=False)
class Scored:
    """A tool id with a leg-specific score (higher is better)."""

    id: str
    score: float

    def __init__(self, id: str, score: float) -> None:
        # Every leg makes hundreds of these a search: setting the slots through their own
        # descriptors skips the two object.__setattr__ lookups of a frozen dataclass's
        # __init__ (a third of its time); the record is as frozen as before.
        _SET_ID(self, id)
        _SET_SCORE(self, score)


_SET_ID = Scored.__dict__["id"].__set__
_SET_SCORE = Scored.__dict__["score"].__set__


@dataclass(frozen=True)
class Filters:
    """Restrictions applied inside every retrieval leg. ``None`` means no restriction."""

    servers: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    item_types: tuple[ItemType, ...] | None = None
    skill_ids: tuple[str, ...] | None = None
    tool_ids: tuple[str, ...] | None = None

    def is_empty(self) -> bool:
        return all(
            v is None
            for v in (self.servers, self.sources, self.item_types, self.skill_ids, self.tool_ids)
        )


@dataclass(frozen=True)
class Ranked:
    """A fused ranking entry before tools are loaded: id, 0..1 score, rank in each leg, and
    the calibrated probability that any indexed tool serves the request (the same for every
    entry of one search; None: not computed)."""

    id: str
    score: float
    lexical_rank: int | None = None
    vector_rank: int | None = None
    answerable: float | None = None


class Strategy(StrEnum):
    """How a search uses skills: ``hierarchical`` (skills first, then the tools inside them),
    ``direct`` (every tool, skills ignored) or ``hybrid`` (both; each tool keeps its better
    score)."""

    HIERARCHICAL = "hierarchical"
    DIRECT = "direct"
    HYBRID = "hybrid"


@dataclass(frozen=True)
class SearchRequest:
    """The one search request every door (Python, CLI, REST, MCP) sends to ``Engine.find``.

    ``limit`` tools at most, each scoring at least ``tool_threshold`` in its stage-2 search and
    at least ``min_score`` in the end; ``mode`` picks the retrieval legs of stage 2;
    ``servers``/``sources``/``tool_ids``/``item_type`` restrict which tools can be returned
    (``tool_ids``: only these tools, e.g. one category of a tool folder); stage 1 adds skills
    in score order until they hold the request's tool with probability ``skill_coverage`` (a
    fitted estimate; 1 turns the early stop off), at most ``skill_limit``, each scoring at least
    ``skill_threshold``. Validated once by
    ``Engine.find`` (a :class:`~toolscout.errors.QueryError` names the bad field; names given
    as text are parsed there), so every stage after it reads typed values.
    """

    query: str
    item_type: ItemType | None = None
    limit: int = 5
    skill_limit: int = 10
    skill_threshold: float = 0.1
    tool_threshold: float = 0.0
    include_schemas: bool = False
    strategy: Strategy = Strategy.DIRECT
    min_score: float = 0.0
    mode: SearchMode = SearchMode.HYBRID
    servers: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    tool_ids: tuple[str, ...] | None = None
    skill_coverage: float = 0.99


@dataclass(frozen=True)
class ToolHit:
    """One tool in a search result: ``score`` is the calibrated probability (0..1) that the
    tool serves the request, comparable across requests; its skills (``primary_skill_id`` is one of
    ``skill_ids`` or None), its input schema when asked for, the store's row key
    (``db_id``) and the rank it had in each retrieval leg (None: not found by that leg)."""

    tool: Tool
    score: float
    skill_ids: tuple[str, ...] = ()
    primary_skill_id: str | None = None
    schema: JSON | None = None
    db_id: int | None = None
    lexical_rank: int | None = None
    vector_rank: int | None = None


@dataclass(frozen=True)
class SearchResult:
    """The one search result: the query, the tools best first, the skills stage 1 matched,
    and metadata named as in the search contract (``strategy_used``, ``skill_ids_used``,
    ``stage1_skill_count``, ``stage2_candidate_count``, ``final_count``,
    ``query_embedding_time_ms``, ``skill_search_time_ms``, ``tool_search_time_ms``,
    ``schema_load_time_ms``, ``total_time_ms``; also ``searched_fraction``, ``calibration``
    (``"fitted"``, or why the scores are approximate), ``ranking`` (``"learned"``: the learned
    ranker ordered and scored the hits; else the fusion or the leg that did) with ``ranker_off``
    (why not the ranker, None when it ran), and ``cached`` when the answer came from the result
    cache).

    ``no_match``: no indexed tool is likely to serve the request: the best tool's calibrated
    score is below the calibration's threshold, or no tool reached ``min_score``."""

    query: str
    tools: list[ToolHit]
    matched_skills: list[SkillMatch]
    metadata: dict[str, Any]
    no_match: bool = False
    # The store's schema lookup, so provider shapes can load the schemas a search left out.
    load_schemas: SchemaLoader | None = field(default=None, compare=False, repr=False)

    @property
    def hits(self) -> list[ToolHit]:
        """The tools (the name the flat search used)."""
        return self.tools

    def input_schemas(self) -> dict[str, JSON | None]:
        """Every found tool's input schema by id: those the search loaded, the rest loaded
        now (one store read) when the result came from a store.

        Raises:
            StoreError: the store could not be read.
        """
        out = {h.tool.id: h.schema or h.tool.input_schema for h in self.tools}
        missing = [tool_id for tool_id, schema in out.items() if schema is None]
        if missing and self.load_schemas is not None:
            out.update(self.load_schemas(missing))
        return out

    def to_anthropic(self, *, defer_loading: bool = True) -> Any:
        """The tools as Anthropic tools (with their input schemas) and ``tool_reference``
        blocks. Raises: StoreError (loading a schema the search left out)."""
        from toolscout.formats.shapes import result_to_anthropic

        return result_to_anthropic(self, defer_loading=defer_loading)

    def to_openai(
        self, *, api: str = "chat", by_server: bool = False, by_skill: bool | None = None
    ) -> Any:
        """The tools as OpenAI tools. With ``api="responses"`` they may be grouped into
        namespaces: by server with ``by_server``, or by primary skill with ``by_skill`` (by
        default when the result came from a strategy that uses skills). Raises: StoreError
        (loading a schema the search left out)."""
        from toolscout.formats.shapes import result_to_openai

        return result_to_openai(self, api=api, by_server=by_server, by_skill=by_skill)
