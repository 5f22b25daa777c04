"""Core data: plain frozen dataclasses used everywhere inside toolscout.

Pydantic lives only at the edges (HTTP bodies, settings, catalog parsing); the engine, stores and
search code pass these objects around.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JSON = dict[str, Any]
#: Input schemas of tool ids, read from a store (``Store.schemas``).
SchemaLoader = Callable[[Sequence[str]], Mapping[str, JSON | None]]


class ItemType(StrEnum):
    """What an indexed item is: MCP servers expose tools, prompts and resources."""

    TOOL = "tool"
    PROMPT = "prompt"
    RESOURCE = "resource"


class SearchMode(StrEnum):
    """Which retrieval legs a search uses."""

    BM25 = "bm25"
    VECTOR = "vector"
    HYBRID = "hybrid"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(
    name: str,
    description: str,
    input_schema: JSON | None,
    output_schema: JSON | None,
    annotations: JSON,
    item_type: ItemType,
) -> str:
    """SHA-256 over everything that defines what a tool does (not where it comes from)."""
    payload = _canonical(
        {
            "name": name,
            "description": description,
            "input_schema": input_schema,
            "output_schema": output_schema,
            "annotations": annotations,
            "item_type": item_type.value,
        }
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Tool:
    """One indexed item: an MCP tool, prompt or resource, a Python tool, or a function definition.

    ``content_hash`` is derived from the defining fields; two tools with equal hashes need no
    re-embedding.
    """

    id: str
    name: str
    description: str = ""
    input_schema: JSON | None = None
    output_schema: JSON | None = None
    annotations: JSON = field(default_factory=dict)
    item_type: ItemType = ItemType.TOOL
    server: str | None = None
    source: str | None = None
    category: str | None = None
    content_hash: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        digest = content_hash(
            self.name,
            self.description,
            self.input_schema,
            self.output_schema,
            self.annotations,
            self.item_type,
        )
        object.__setattr__(self, "content_hash", digest)

    @classmethod
    def stored(
        cls,
        content_hash: str,
        *,
        id: str,
        name: str,
        description: str,
        annotations: JSON,
        item_type: ItemType,
        server: str | None,
        source: str | None,
        category: str | None,
        input_schema: JSON | None = None,
        output_schema: JSON | None = None,
    ) -> Tool:
        """A tool read back from a store, carrying the ``content_hash`` it was written with.

        Nothing is validated or hashed again: the row was checked and hashed when it was
        written, and the stored hash still covers the schemas a light read leaves out (hashing
        cost more than the rest of a search's result rows). Build tools from user input with
        the constructor."""
        tool = object.__new__(cls)
        # A frozen dataclass without slots: its fields live in the instance dict.
        tool.__dict__.update(
            id=id,
            name=name,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=annotations,
            item_type=item_type,
            server=server,
            source=source,
            category=category,
            content_hash=content_hash,
        )
        return tool

    def parameter_names(self) -> list[str]:
        """Top-level parameter names of the input schema, in schema order."""
        props = (self.input_schema or {}).get("properties")
        return list(props) if isinstance(props, dict) else []

    def to_dict(self, *, include_schemas: bool = True) -> JSON:
        """A JSON-ready dict (the wire shape used by the CLI, HTTP and MCP edges)."""
        out: JSON = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "item_type": self.item_type.value,
            "server": self.server,
            "source": self.source,
            "category": self.category,
            "annotations": self.annotations,
            "content_hash": self.content_hash,
        }
        if include_schemas:
            out["input_schema"] = self.input_schema
            out["output_schema"] = self.output_schema
        return out


@dataclass(frozen=True)
class Scored:
    """A tool id with a leg-specific score (higher is better)."""

    id: str
    score: float


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


@dataclass(frozen=True)
class Problem:
    """A catalog entry that was skipped: where it is and what is wrong with it."""

    location: str
    field: str
    message: str
    #: Skipped on purpose (a provider-run tool with nothing to search), not unreadable: a
    #: prune still deletes what its source no longer lists.
    deliberate: bool = False
    #: The ids an unreadable entry can stand for, when its place alone says (a tool file's
    #: path yields its id): a prune keeps only these. None: it may be any tool of its source,
    #: so a prune keeps them all (a catalog line that does not parse names nothing).
    stands_for: tuple[str, ...] | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.field}: {self.message}"


@dataclass
class Loaded:
    """What a source produced: the tools it could read and the entries it skipped."""

    source: str
    tools: list[Tool] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class IndexReport:
    """What an indexing pass did: counts per outcome plus the skipped entries."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: list[Problem] = field(default_factory=list)
    embedded: int = 0
    #: Indexed all the same, but worth a look (an id that another source had).
    warnings: list[Problem] = field(default_factory=list)

    def to_dict(self) -> JSON:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "skipped": [str(p) for p in self.skipped],
            "embedded": self.embedded,
            "warnings": [str(p) for p in self.warnings],
        }


# -- skills and hierarchical search ------------------------------------------------


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
    (``tool_ids``: only these tools, e.g. one category of a tool folder); stage 1 keeps
    up to ``skill_limit`` skills scoring at least ``skill_threshold``. Validated once by
    ``Engine.find`` (a :class:`~toolscout.errors.QueryError` names the bad field; names given
    as text are parsed there), so every stage after it reads typed values.
    """

    query: str
    item_type: ItemType | None = None
    limit: int = 5
    skill_limit: int = 3
    skill_threshold: float = 0.4
    tool_threshold: float = 0.0
    include_schemas: bool = False
    strategy: Strategy = Strategy.DIRECT
    min_score: float = 0.0
    mode: SearchMode = SearchMode.HYBRID
    servers: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    tool_ids: tuple[str, ...] | None = None


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
    (``"fitted"``, or why the scores are approximate), and ``cached`` when the answer came from
    the result cache).

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
