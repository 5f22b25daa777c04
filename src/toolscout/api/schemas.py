"""Wire models of the REST API (pydantic lives here, at the edge, and nowhere in the core).

Request models forbid unknown fields so a misspelt parameter is a 422 naming it rather than a
silently ignored default. Bounds repeat the engine's so they show in the OpenAPI document; the
engine checks them again for every other caller.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolscout.formats import ProviderFormat
from toolscout.models import (
    ItemType,
    SearchMode,
    SearchResult,
    Skill,
    SkillMatch,
    Tool,
    ToolHit,
)
from toolscout.models import SearchRequest as CoreRequest

SKILL_ID_PATTERN = r"^[a-z][a-z0-9_]*$"
#: One character that no regex engine or ``str.isspace`` calls white space: ECMA's and Rust's
#: ``\s`` leave out the separators U+001C-U+001F and U+0085 that Python strips, and ECMA counts
#: the byte-order mark as a space.
_VISIBLE = r"[^\s\u001c-\u001f\u0085\ufeff]"
#: A query must hold a character that is not white space. Documented, not checked here: the
#: engine refuses a blank query with 400 ``empty_query`` at every door, and REST keeps that
#: answer rather than pydantic's 422.
QUERY_SCHEMA: dict[str, Any] = {"minLength": 1, "pattern": _VISIBLE}
#: Names and reasons must hold more than white space (the catalog refuses blank ones, 422).
NOT_BLANK: dict[str, Any] = {"pattern": _VISIBLE}
Strategy = Literal["hierarchical", "direct", "hybrid"]


class StrictRequest(BaseModel):
    # A request body: an unknown field is a 422 naming it (see the module docstring).
    model_config = ConfigDict(extra="forbid")


class SearchRequest(StrictRequest):
    """The search contract's request (the body of ``Engine.find``'s request)."""

    query: str = Field(
        max_length=1000, description="What the agent wants to do.", json_schema_extra=QUERY_SCHEMA
    )
    item_type: ItemType | None = None
    limit: int = Field(default=5, ge=1, le=50)
    skill_limit: int = Field(default=10, ge=1, le=20, description="Most skills stage 1 matches.")
    skill_threshold: float = Field(default=0.1, ge=0.0, le=1.0)
    skill_coverage: float = Field(
        default=0.99,
        ge=0.0,
        le=1.0,
        description="Stage 1 adds skills until they hold the tool with this probability.",
    )
    tool_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    include_schemas: bool = False
    strategy: Strategy = "direct"
    min_score: float = Field(default=0.0, ge=0.0, le=1.0, description="Drop tools below it.")
    mode: SearchMode = Field(default=SearchMode.HYBRID, description="Stage 2's retrieval legs.")
    servers: list[str] | None = Field(default=None, description="Only tools of these servers.")
    sources: list[str] | None = Field(default=None, description="Only tools of these sources.")

    def to_core(self) -> CoreRequest:
        """The core request this body describes."""
        data = self.model_dump()
        for key in ("servers", "sources"):
            data[key] = tuple(data[key]) if data[key] is not None else None
        return CoreRequest(**data)


class ToolOut(BaseModel):
    """A tool in a search result, named as the search contract names it (``type`` is the item
    type; ``db_id`` the store's integer row key; ``input_schema`` is set when the request asked
    for schemas). ``server``, ``category``, ``source`` and the legs' ranks are extras."""

    id: str
    db_id: int | None
    type: ItemType
    name: str
    description: str
    score: float
    skill_ids: list[str]
    primary_skill_id: str | None = Field(description="One of skill_ids, or null.")
    input_schema: dict[str, Any] | None = None
    server: str | None = None
    category: str | None = None
    source: str | None = None
    lexical_rank: int | None = None
    vector_rank: int | None = None

    @classmethod
    def of(cls, hit: ToolHit) -> ToolOut:
        """Render one hit."""
        t = hit.tool
        return cls(
            id=t.id,
            db_id=hit.db_id,
            type=t.item_type,
            name=t.name,
            description=t.description,
            score=round(hit.score, 6),
            skill_ids=list(hit.skill_ids),
            primary_skill_id=hit.primary_skill_id,
            input_schema=hit.schema,
            server=t.server,
            category=t.category,
            source=t.source,
            lexical_rank=hit.lexical_rank,
            vector_rank=hit.vector_rank,
        )


class SkillOut(BaseModel):
    """A skill with its tool count and, in search results, its query score."""

    id: str
    name: str
    description: str
    score: float | None = None
    tool_count: int | None = None
    keywords: list[str]
    examples: list[str]
    parent: str | None
    is_active: bool
    created_at: str
    updated_at: str

    @classmethod
    def of(
        cls, skill: Skill, *, tool_count: int | None = None, score: float | None = None
    ) -> SkillOut:
        """Render a skill with its tool count and, in search results, its score."""
        data = skill.to_dict()
        return cls(**data, tool_count=tool_count, score=score)

    @classmethod
    def of_match(cls, match: SkillMatch, *, scored: bool = True) -> SkillOut:
        """Render a skill match; ``scored=False`` for listings, whose score means nothing."""
        return cls.of(
            match.skill,
            tool_count=match.tool_count,
            score=round(match.score, 6) if scored else None,
        )


class SearchMetadata(BaseModel):
    """How the search ran, named as the search contract names it (times in ms)."""

    model_config = ConfigDict(extra="allow")

    strategy_used: Strategy
    #: Why a hierarchical search searched the whole catalog (None: it did not fall back).
    fallback: str | None = None
    skill_ids_used: list[str] | None = None
    stage1_skill_count: int = 0
    stage2_candidate_count: int = 0
    final_count: int = 0
    query_embedding_time_ms: float = 0.0
    skill_search_time_ms: float = 0.0
    tool_search_time_ms: float = 0.0
    schema_load_time_ms: float = 0.0
    total_time_ms: float = 0.0
    searched_fraction: float | None = None
    calibration: str | None = Field(
        default=None,
        description="'fitted', or why the scores are approximate (a calibration fitted for "
        "another embedding model).",
    )
    answerable: float | None = Field(
        default=None,
        description="Calibrated probability that some indexed tool serves the request (no_match "
        "when it is below the calibration's threshold).",
    )
    cached: bool = Field(default=False, description="True: the answer came from the result cache.")


class SearchResponse(BaseModel):
    """The search contract's response."""

    query: str
    tools: list[ToolOut]
    matched_skills: list[SkillOut]
    metadata: SearchMetadata
    no_match: bool = Field(
        default=False,
        description="No indexed tool is likely to serve the request (the best calibrated score "
        "is below the calibration's threshold, or no tool reached min_score).",
    )

    @classmethod
    def of(cls, result: SearchResult) -> SearchResponse:
        """Render a core search result (what every door answers)."""
        return cls(
            query=result.query,
            tools=[ToolOut.of(h) for h in result.tools],
            matched_skills=[SkillOut.of_match(m) for m in result.matched_skills],
            metadata=SearchMetadata.model_validate(result.metadata),
            no_match=result.no_match,
        )


class ProviderTools(BaseModel):
    """A search result as one provider's tool definitions (``?format=``): ``tools`` go to the
    provider SDK as they are, ``tool_references`` are Anthropic ``tool_reference`` blocks, and
    ``names`` maps each provider tool name back to its toolscout id."""

    format: ProviderFormat
    query: str
    tools: list[dict[str, Any]]
    tool_references: list[dict[str, Any]]
    names: dict[str, str]


class ErrorDetail(BaseModel):
    """One invalid field of a request."""

    field: str | None
    message: str


class ErrorInfo(BaseModel):
    """What went wrong: a stable machine-readable ``code``, the request field it concerns
    (when one), a human message, and per-field details for validation errors."""

    code: str = Field(examples=["invalid_parameter"])
    field: str | None = Field(examples=["limit"])
    message: str
    details: list[ErrorDetail] | None = None


class ErrorBody(BaseModel):
    """Every error response: ``{"error": {"code", "field", "message"}}``."""

    error: ErrorInfo


class ToolDetail(BaseModel):
    """One tool with its schemas."""

    id: str
    name: str
    description: str
    item_type: ItemType
    server: str | None
    source: str | None
    category: str | None
    annotations: dict[str, Any]
    content_hash: str
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None

    @classmethod
    def of(cls, tool: Tool, *, include_schemas: bool = True) -> ToolDetail:
        """Render a tool, with or without its schemas."""
        return cls(**tool.to_dict(include_schemas=include_schemas))


class ToolPage(BaseModel):
    """A page of tools (without schemas) and how many match in all."""

    items: list[ToolDetail]
    total: int
    offset: int
    limit: int


class JobOut(BaseModel):
    """A background classification job and its progress."""

    id: str
    status: Literal["running", "done", "failed"]
    processed: int
    total: int
    errors: int
    failed: list[str] = Field(default_factory=list)
    message: str | None = None
    started_at: str
    finished_at: str | None = None


class HealthStatus(BaseModel):
    """What ``/health`` tells a caller that is neither on loopback nor holds a key."""

    status: Literal["ok", "degraded", "empty"]


class Health(BaseModel):
    """Liveness plus what the server serves."""

    status: Literal["ok", "degraded", "empty"] = Field(
        description="empty: the index holds no tools (see hint); searches answer nothing."
    )
    hint: str | None = None
    store: str
    store_reachable: bool
    model: str | None
    model_loaded: bool
    tools: int
    skills: int | None = None
    query_cache: dict[str, int] | None = None
    result_cache: dict[str, int] | None = None
    pid: int = Field(description="Answering worker process (each worker has its own caches).")
