"""The LLM enricher: server profiles and tool enrichment written by any OpenAI-compatible model.

Answers are strict JSON validated against the pydantic models below (unknown keys, missing
fields, over-long lists and non-English text are rejected, which makes the client retry).
After the client's retries a failure raises :class:`~toolscout.errors.EnrichError`; the cache
records it, the tool keeps its original text, and the next sync tries again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolscout.enrich.base import ServerProfile, ToolEnrichment
from toolscout.enrich.llm import LLM, open_llm
from toolscout.errors import ConfigError
from toolscout.models import Tool
from toolscout.search.document import readable_name

if TYPE_CHECKING:
    from toolscout.config import Settings

#: Bump when the prompts or answer models change: cached rows carry the name.
LLM_PROMPT_VERSION = "llm-1"
MAX_DESCRIPTION_CHARS = 1500
MAX_PROFILE_TOOLS = 60
_NON_LATIN = re.compile(
    r"[\u0400-\u04ff\u0600-\u06ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
)


def _english(value: str) -> str:
    # The index is English-first: an answer that copies a Chinese description is retried.
    letters = [c for c in value if c.isalpha()]
    if letters and sum(1 for c in letters if _NON_LATIN.match(c)) > 0.1 * len(letters):
        raise ValueError("must be written in English")
    return value.strip()


class ToolAnswer(BaseModel):
    """What the model must return for one tool."""

    model_config = ConfigDict(extra="forbid")

    enhanced_description: str = Field(min_length=10, max_length=800)
    action_entities: list[str] = Field(min_length=1, max_length=10)
    use_cases: list[str] = Field(default_factory=list, max_length=6)
    keywords: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("enhanced_description")
    @classmethod
    def _desc(cls, value: str) -> str:
        return _english(value)

    @field_validator("action_entities", "use_cases", "keywords")
    @classmethod
    def _items(cls, values: list[str]) -> list[str]:
        return [_english(v)[:120] for v in values if v.strip()]


class ProfileAnswer(BaseModel):
    """What the model must return for one server."""

    model_config = ConfigDict(extra="forbid")

    domain: str = Field(min_length=2, max_length=200)
    capabilities: list[str] = Field(min_length=1, max_length=12)
    entity_types: list[str] = Field(default_factory=list, max_length=15)
    action_verbs: list[str] = Field(default_factory=list, max_length=15)
    integration: str = Field(default="", max_length=300)
    keywords: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("domain", "integration")
    @classmethod
    def _text(cls, value: str) -> str:
        return _english(value)

    @field_validator("capabilities", "entity_types", "action_verbs", "keywords")
    @classmethod
    def _items(cls, values: list[str]) -> list[str]:
        return [_english(v)[:120] for v in values if v.strip()]


def _tool_card(tool: Tool) -> dict[str, Any]:
    params: dict[str, str] = {}
    props = (tool.input_schema or {}).get("properties")
    if isinstance(props, dict):
        for name, schema in list(props.items())[:15]:
            desc = schema.get("description", "") if isinstance(schema, dict) else ""
            enum = schema.get("enum") if isinstance(schema, dict) else None
            extra = f" (one of {', '.join(map(str, enum[:10]))})" if isinstance(enum, list) else ""
            params[str(name)] = (str(desc)[:200] + extra).strip()
    return {
        "name": tool.name,
        "description": tool.description[:MAX_DESCRIPTION_CHARS],
        "parameters": params,
    }


def tool_prompt(tool: Tool, profile: ServerProfile | None) -> str:
    """The prompt for one tool (its card plus its server's profile)."""
    context = ""
    if profile is not None:
        context = (
            f"The tool belongs to the server {profile.server!r}: {profile.domain}. "
            f"Server capabilities: {', '.join(profile.capabilities[:8])}.\n"
        )
    return (
        "You improve search over a catalog of tools that an AI agent can call.\n"
        f"{context}"
        "Tool definition (JSON):\n"
        f"{json.dumps(_tool_card(tool), ensure_ascii=False)}\n\n"
        "Answer with one JSON object and nothing else, with exactly these keys:\n"
        '  "enhanced_description": 2-3 sentences saying what the tool does and when to use it,\n'
        '  "action_entities": 2-6 short verb-object phrases ("create issue", "list issues"),\n'
        '  "use_cases": 1-4 short requests a user might make that this tool answers,\n'
        '  "keywords": 3-12 words or short phrases users would search with (synonyms).\n'
        "Write everything in English, even when the tool's text is in another language. "
        "Describe only what the definition supports; do not invent features."
    )


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0][:160] if stripped else ""


def profile_prompt(server: str, tools: Sequence[Tool]) -> str:
    """The prompt for one server: the names and first lines of its tools."""
    lines = [
        f"- {t.name}: {_first_line(t.description)}"
        for t in sorted(tools, key=lambda t: t.name)[:MAX_PROFILE_TOOLS]
    ]
    more = (
        f"\n(and {len(tools) - MAX_PROFILE_TOOLS} more tools)"
        if len(tools) > MAX_PROFILE_TOOLS
        else ""
    )
    return (
        "You profile a tool server so an AI agent can find its tools.\n"
        f"Server: {server} ({readable_name(server)})\nTools:\n" + "\n".join(lines) + more + "\n\n"
        "Answer with one JSON object and nothing else, with exactly these keys:\n"
        '  "domain": the server\'s domain in a few words ("issue tracking for software teams"),\n'
        '  "capabilities": 3-10 verb-object phrases it offers,\n'
        '  "entity_types": the things it manages ("issue", "pull request"),\n'
        '  "action_verbs": the verbs its tools perform,\n'
        '  "integration": one sentence on what it connects to,\n'
        '  "keywords": 5-15 words users would search with.\n'
        "Write everything in English, even when the tools' text is in another language."
    )


class LLMEnricher:
    """Enrichment by an LLM (see the module docstring). Thread-safe if the LLM is."""

    def __init__(self, llm: LLM, *, concurrency: int = 4) -> None:
        if concurrency < 1:
            raise ConfigError("llm_concurrency: must be at least 1")
        self.llm = llm
        self.concurrency = concurrency
        self.name = f"{LLM_PROMPT_VERSION}:{llm.name}"

    def _tokens(self) -> int:
        last = getattr(self.llm, "last_tokens", None)
        return int(last()) if callable(last) else 0

    def enrich(self, tool: Tool, profile: ServerProfile | None) -> ToolEnrichment:
        """Raises: EnrichError (no valid answer after the client's retries)."""
        answer = self.llm.complete_json(tool_prompt(tool, profile), ToolAnswer)
        return ToolEnrichment(
            enhanced=answer.enhanced_description,
            actions=tuple(answer.action_entities),
            use_cases=tuple(answer.use_cases),
            keywords=tuple(answer.keywords),
            tokens=self._tokens(),
        )

    def profile(self, server: str, tools: Sequence[Tool]) -> ServerProfile:
        """Raises: EnrichError (no valid answer after the client's retries)."""
        answer = self.llm.complete_json(profile_prompt(server, tools), ProfileAnswer)
        return ServerProfile(
            server=server,
            domain=answer.domain,
            capabilities=tuple(answer.capabilities),
            entity_types=tuple(answer.entity_types),
            action_verbs=tuple(answer.action_verbs),
            integration=answer.integration,
            keywords=tuple(answer.keywords),
            tokens=self._tokens(),
        )


def open_llm_enricher(settings: Settings) -> LLMEnricher:
    """The LLM enricher over the configured OpenAI-compatible API.

    Raises:
        ConfigError: ``enrich = llm`` but ``llm_base_url``/``llm_model`` are not set.
    """
    llm = open_llm(settings)
    if llm is None:
        raise ConfigError(
            "enrich: 'llm' needs llm_base_url and llm_model (TOOLSCOUT_LLM_BASE_URL, "
            "TOOLSCOUT_LLM_MODEL); or use enrich = offline"
        )
    return LLMEnricher(llm, concurrency=settings.llm_concurrency)
