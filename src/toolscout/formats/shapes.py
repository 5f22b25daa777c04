"""Found tools in the shapes provider SDKs take.

* Anthropic: tool definitions (``name``, ``description``, ``input_schema``) marked
  ``defer_loading: true``, and ``tool_reference`` blocks that load them when a custom tool
  search returns them in a ``tool_result``.
* OpenAI: Chat Completions function tools (``{"type": "function", "function": {...}}``) and
  Responses function tools (``{"type": "function", "name", ...}``), optionally grouped into
  ``namespace`` tools (by skill or server).

Names come from :mod:`toolscout.formats.names`; every shape returns the :class:`NameMap`
that turns the name a model calls back into the toolscout id. :func:`render` is what the REST
``?format=`` and the CLI ``--format`` answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from toolscout.formats.names import NameMap, provider_name
from toolscout.models import SearchResult, Tool

JSON = dict[str, Any]
EMPTY_SCHEMA: JSON = {"type": "object", "properties": {}}


Schemas = Mapping[str, JSON | None]


def _schema(tool: Tool, schemas: Schemas | None) -> JSON:
    # Search hits carry light tools (no schema); their schemas arrive beside them.
    loaded = schemas.get(tool.id) if schemas is not None else None
    schema = dict(loaded or tool.input_schema or EMPTY_SCHEMA)
    schema.setdefault("type", "object")
    return schema


def _description(tool: Tool) -> str:
    return tool.description or tool.name


@dataclass
class ProviderTools:
    """Tool definitions for one provider, the blocks that reference them, and the names."""

    tools: list[JSON]
    names: NameMap
    references: list[JSON] = field(default_factory=list)

    def tool_id(self, name: str) -> str | None:
        """The toolscout id behind a tool name the model used."""
        return self.names.tool_id(name)


def anthropic_tool(
    tool: Tool, names: NameMap, *, defer_loading: bool = True, schemas: Schemas | None = None
) -> JSON:
    """One Anthropic tool definition (``anthropic.types.ToolParam``); its input schema is
    ``schemas[tool.id]`` when given, else the tool's own."""
    out: JSON = {
        "name": names.name(tool.id),
        "description": _description(tool),
        "input_schema": _schema(tool, schemas),
    }
    if defer_loading:
        out["defer_loading"] = True
    return out


def anthropic_reference(tool: Tool, names: NameMap) -> JSON:
    """A ``tool_reference`` block (``anthropic.types.ToolReferenceBlockParam``)."""
    return {"type": "tool_reference", "tool_name": names.name(tool.id)}


def to_anthropic(
    tools: Sequence[Tool], *, defer_loading: bool = True, schemas: Schemas | None = None
) -> ProviderTools:
    """Anthropic definitions of ``tools`` plus a ``tool_reference`` block for each
    (``schemas``: input schemas by tool id, for tools loaded without theirs)."""
    names = NameMap()
    return ProviderTools(
        tools=[
            anthropic_tool(t, names, defer_loading=defer_loading, schemas=schemas) for t in tools
        ],
        names=names,
        references=[anthropic_reference(t, names) for t in tools],
    )


def openai_function(tool: Tool, names: NameMap, *, schemas: Schemas | None = None) -> JSON:
    """A Chat Completions tool (``openai.types.chat.ChatCompletionFunctionToolParam``)."""
    return {
        "type": "function",
        "function": {
            "name": names.name(tool.id),
            "description": _description(tool),
            "parameters": _schema(tool, schemas),
        },
    }


def openai_response_tool(
    tool: Tool, names: NameMap, *, defer_loading: bool = False, schemas: Schemas | None = None
) -> JSON:
    """A Responses function tool (``openai.types.responses.FunctionToolParam``)."""
    out: JSON = {
        "type": "function",
        "name": names.name(tool.id),
        "description": _description(tool),
        "parameters": _schema(tool, schemas),
        "strict": False,
    }
    if defer_loading:
        out["defer_loading"] = True
    return out


def _namespace(key: str) -> str:
    return provider_name(key)


def to_openai(
    tools: Sequence[Tool],
    *,
    api: Literal["chat", "responses"] = "chat",
    namespace: Callable[[Tool], str | None] | None = None,
    defer_loading: bool = False,
    schemas: Schemas | None = None,
) -> ProviderTools:
    """OpenAI definitions of ``tools``. With ``api="responses"`` and ``namespace`` (a tool's
    group, e.g. its skill or server), tools of one group share a ``namespace`` tool.
    ``schemas``: input schemas by tool id, for tools loaded without theirs."""
    names = NameMap()
    if api == "chat":
        return ProviderTools(
            tools=[openai_function(t, names, schemas=schemas) for t in tools], names=names
        )

    def shaped(tool: Tool) -> JSON:
        return openai_response_tool(tool, names, defer_loading=defer_loading, schemas=schemas)

    if namespace is None:
        return ProviderTools(tools=[shaped(t) for t in tools], names=names)
    groups: dict[str, list[Tool]] = {}
    for tool in tools:
        groups.setdefault(namespace(tool) or "tools", []).append(tool)
    out = [
        {
            "type": "namespace",
            "name": _namespace(key),
            "description": f"Tools of {key}: " + ", ".join(t.name for t in members),
            "tools": [shaped(t) for t in members],
        }
        for key, members in groups.items()
    ]
    return ProviderTools(tools=out, names=names)


def result_to_anthropic(result: SearchResult, *, defer_loading: bool = True) -> ProviderTools:
    """``SearchResult.to_anthropic()``: the found tools with their input schemas.

    Raises:
        StoreError: a schema the search left out could not be loaded.
    """
    tools = [h.tool for h in result.tools]
    return to_anthropic(tools, defer_loading=defer_loading, schemas=result.input_schemas())


def result_to_openai(
    result: SearchResult,
    *,
    api: str = "chat",
    by_server: bool = False,
    by_skill: bool | None = None,
) -> ProviderTools:
    """``SearchResult.to_openai()``: Responses tools grouped by server, or by primary skill
    (by default when the result came from a strategy that uses skills).

    Raises:
        StoreError: a schema the search left out could not be loaded.
    """
    if by_skill is None:
        strategy = str(result.metadata.get("strategy_used"))
        by_skill = not by_server and strategy in ("hierarchical", "hybrid")
    skill = {h.tool.id: h.primary_skill_id for h in result.tools}
    group: Callable[[Tool], str | None] | None = None
    if by_server:
        group = lambda t: t.server  # noqa: E731
    elif by_skill:
        group = lambda t: skill.get(t.id) or t.server  # noqa: E731
    return to_openai(
        [h.tool for h in result.tools],
        api="responses" if api == "responses" else "chat",
        namespace=group,
        schemas=result.input_schemas(),
    )


class ProviderFormat(StrEnum):
    """The shapes a search result can be rendered in besides toolscout's own contract."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    OPENAI_RESPONSES = "openai-responses"


GroupBy = Literal["server", "skill"]


def render(result: SearchResult, fmt: ProviderFormat, *, group_by: GroupBy | None = None) -> JSON:
    """A search result as one provider's tool definitions, as JSON: ``tools`` to pass to the
    SDK, ``tool_references`` (Anthropic: the blocks a custom tool search returns) and
    ``names`` (``{provider name: toolscout id}``, to map a model's call back). ``group_by``
    groups OpenAI Responses tools into namespaces (by default by skill when the search used
    skills)."""
    if fmt is ProviderFormat.ANTHROPIC:
        shaped = result.to_anthropic()
    elif fmt is ProviderFormat.OPENAI:
        shaped = result.to_openai()
    else:
        by_server = group_by == "server"
        by_skill = None if group_by is None else group_by == "skill"
        shaped = result.to_openai(api="responses", by_server=by_server, by_skill=by_skill)
    return {
        "format": fmt.value,
        "query": result.query,
        "tools": shaped.tools,
        "tool_references": shaped.references,
        "names": shaped.names.as_dict(),
    }
