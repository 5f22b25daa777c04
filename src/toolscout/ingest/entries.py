"""Turning one catalog entry (MCP, OpenAI, Anthropic or bench shape) into a :class:`Tool`.

Each entry is checked by hand rather than by a pydantic model because the four shapes overlap
and a problem has to name the field in the shape the user wrote (``function.parameters``,
``inputSchema``...), with a fix.
"""

from __future__ import annotations

import re
from typing import Any

from toolscout.models import ItemType, Tool

MAX_NAME = 200
MAX_DESCRIPTION = 20_000


class EntryError(ValueError):
    """One entry is unusable; ``field`` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _schema(entry: dict[str, Any], keys: tuple[str, ...]) -> tuple[dict[str, Any] | None, str]:
    for key in keys:
        if key in entry:
            value = entry[key]
            if value is None:
                return None, key
            if not isinstance(value, dict):
                raise EntryError(key, f"must be a JSON Schema object, got {type(value).__name__}")
            if "type" in value and value["type"] != "object" and key != "outputSchema":
                raise EntryError(
                    f"{key}.type", f"must be 'object' for tool input, got {value['type']!r}"
                )
            props = value.get("properties")
            if props is not None and not isinstance(props, dict):
                raise EntryError(f"{key}.properties", "must be an object mapping names to schemas")
            return value, key
    return None, ""


def _prompt_schema(arguments: Any) -> dict[str, Any] | None:
    if arguments is None:
        return None
    if not isinstance(arguments, list):
        raise EntryError("arguments", "must be a list of {name, description, required}")
    props: dict[str, Any] = {}
    required: list[str] = []
    for i, arg in enumerate(arguments):
        if not isinstance(arg, dict) or not isinstance(arg.get("name"), str):
            raise EntryError(f"arguments[{i}].name", "every prompt argument needs a string name")
        props[arg["name"]] = {"type": "string", "description": str(arg.get("description") or "")}
        if arg.get("required"):
            required.append(arg["name"])
    return {"type": "object", "properties": props, "required": required}


def _text(entry: dict[str, Any], key: str, *, limit: int, required: bool) -> str:
    value = entry.get(key)
    if value is None:
        if required:
            raise EntryError(key, f"is required; add a non-empty string {key!r}")
        return ""
    if not isinstance(value, str):
        raise EntryError(key, f"must be a string, got {type(value).__name__}")
    value = value.strip()
    if required and not value:
        raise EntryError(key, "must not be empty")
    if len(value) > limit:
        raise EntryError(key, f"is {len(value)} characters; the limit is {limit}")
    return value


#: Anthropic's server and client tools name a versioned tool type (``web_search_20250305``,
#: ``tool_search_tool_regex_20251119``) instead of a schema; Anthropic runs them itself.
_ANTHROPIC_TOOL_TYPE = re.compile(r"^[a-z][a-z0-9_]*_\d{8}$")


class ProviderTool(EntryError):
    """An entry that names a provider-run tool (nothing to search for); skipped with a note."""


def parse_entry(
    raw: Any,
    *,
    default_type: ItemType = ItemType.TOOL,
    server: str | None = None,
    source: str | None = None,
    namespace: str | None = None,
) -> Tool:
    """Build a Tool from one entry of any supported shape.

    An entry without an ``id`` gets ``<server>::<name>``, or ``<namespace>::<name>`` when it has
    no server either (a catalog file passes its own name, so two files defining ``search`` do
    not overwrite each other).

    Raises:
        ProviderTool: an Anthropic server tool such as ``web_search_20250305``.
        EntryError: naming the field that is missing or malformed.
    """
    if not isinstance(raw, dict):
        raise EntryError("(entry)", f"must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if isinstance(kind, str) and _ANTHROPIC_TOOL_TYPE.match(kind):
        raise ProviderTool(
            "type",
            f"{kind!r} is an Anthropic server tool: Anthropic runs it and it has no schema to "
            "search; not indexed",
        )
    entry = raw
    prefix = ""
    if isinstance(raw.get("function"), dict):  # OpenAI {"type": "function", "function": {...}}
        entry, prefix = raw["function"], "function."
    try:
        name = _text(entry, "name", limit=MAX_NAME, required=True)
        description = _text(entry, "description", limit=MAX_DESCRIPTION, required=False)
        item_type = default_type
        declared = raw.get("item_type")
        if declared is not None:
            try:
                item_type = ItemType(declared)
            except ValueError as exc:
                raise EntryError("item_type", "must be one of tool, prompt, resource") from exc
        if item_type is ItemType.PROMPT and "arguments" in entry:
            input_schema = _prompt_schema(entry.get("arguments"))
        else:
            input_schema, _ = _schema(entry, ("inputSchema", "input_schema", "parameters"))
        output_schema, _ = _schema(entry, ("outputSchema", "output_schema"))
        annotations = entry.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise EntryError("annotations", "must be an object")
        if item_type is ItemType.RESOURCE:
            for key in ("uri", "uriTemplate", "mimeType"):
                if isinstance(entry.get(key), str):
                    annotations = {**annotations, key: entry[key]}
        entry_server = raw.get("server", server)
        if entry_server is not None and not isinstance(entry_server, str):
            raise EntryError("server", "must be a string")
        category = raw.get("category")
        tool_id = raw.get("id")
        if tool_id is None:
            owner = entry_server or namespace
            tool_id = f"{owner}::{name}" if owner else name
        if not isinstance(tool_id, str) or not tool_id.strip():
            raise EntryError("id", "must be a non-empty string")
    except EntryError as exc:
        raise EntryError(prefix + exc.field, str(exc)) from None
    return Tool(
        id=tool_id.strip(),
        name=name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations,
        item_type=item_type,
        server=entry_server,
        source=source,
        category=category if isinstance(category, str) else None,
    )
