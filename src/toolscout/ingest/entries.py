"""Turning one catalog entry (MCP, OpenAI, Anthropic or bench shape) into a :class:`Tool`.

Each entry is checked by hand rather than by a pydantic model because the four shapes overlap
and a problem has to name the field in the shape the user wrote (``function.parameters``,
``inputSchema``...), with a fix.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from toolscout.models import ItemType, Tool

MAX_NAME = 200
MAX_DESCRIPTION = 20_000
#: Nesting allowed inside one entry: real schemas stay under ~20 levels; deeper input is either
#: generated garbage or an attempt to exhaust the stack of whatever walks the schema later.
MAX_DEPTH = 64
#: One entry's JSON, serialised: the largest real tool definitions measured are ~100 KB.
MAX_ENTRY_BYTES = 1024 * 1024


class NonFinite(float):
    """A ``NaN``/``Infinity`` literal (or a number too big for a float) met while parsing.

    JSON has no such values; Python's parser accepts them, and a served schema would carry them
    as ``null``. Parsers hand this marker over instead, and :func:`parse_entry` rejects the
    entry that holds one, naming where.
    """

    literal: str

    def __new__(cls, literal: str) -> NonFinite:
        value = super().__new__(cls, math.nan)
        value.literal = literal
        return value


def non_finite(literal: str) -> NonFinite:
    """``parse_constant`` for :func:`json.loads`: ``NaN``, ``Infinity``, ``-Infinity``."""
    return NonFinite(literal)


def finite_float(literal: str) -> float:
    """``parse_float`` for :func:`json.loads`: ``1e999`` overflows to infinity; mark it."""
    value = float(literal)
    return value if math.isfinite(value) else NonFinite(literal)


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


def _check_values(raw: Any) -> None:
    """Reject nesting deeper than :data:`MAX_DEPTH`, non-finite numbers and strings that are not
    text, iteratively (a recursive walk is what deep input would break).

    Raises:
        EntryError: naming the path of the offending value.
    """
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            literal = getattr(value, "literal", repr(value))
            raise EntryError(
                path or "(entry)",
                f"{literal} is not a JSON number; write null or a finite number instead",
            )
        if isinstance(value, str) and not _encodable(value):
            raise EntryError(
                path or "(entry)",
                "contains an unpaired surrogate escape (\\ud800-\\udfff), which is not text; "
                "remove it",
            )
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise EntryError(
                    path or "(entry)", f"nested more than {MAX_DEPTH} levels deep; flatten it"
                )
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, child in items:
                if isinstance(key, str) and not _encodable(key):
                    raise EntryError(path or "(entry)", "has a key that is not valid text")
                child_path = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]"
                stack.append((child, child_path.lstrip("."), depth + 1))


def _encodable(text: str) -> bool:
    """False for strings holding unpaired surrogates (JSON ``\\ud800`` escapes)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_size(raw: Any) -> None:
    size = len(json.dumps(raw, ensure_ascii=False))
    if size > MAX_ENTRY_BYTES:
        raise EntryError("(entry)", f"is {size} characters of JSON; the limit is {MAX_ENTRY_BYTES}")


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
    _check_values(raw)
    _check_size(raw)
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
        item_type = _item_type(raw, default_type)
        if item_type is ItemType.PROMPT and "arguments" in entry:
            input_schema = _prompt_schema(entry.get("arguments"))
        else:
            input_schema, _ = _schema(entry, ("inputSchema", "input_schema", "parameters"))
        output_schema, _ = _schema(entry, ("outputSchema", "output_schema"))
        annotations = _annotations(entry, item_type)
        entry_server = raw.get("server", server)
        if entry_server is not None and not isinstance(entry_server, str):
            raise EntryError("server", "must be a string")
        category = raw.get("category")
        tool_id = _tool_id(raw.get("id"), name, entry_server or namespace)
    except EntryError as exc:
        raise EntryError(prefix + exc.field, str(exc)) from None
    return Tool(
        id=tool_id,
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


def _item_type(raw: dict[str, Any], default: ItemType) -> ItemType:
    declared = raw.get("item_type")
    if declared is None:
        return default
    try:
        return ItemType(declared)
    except ValueError as exc:
        raise EntryError("item_type", "must be one of tool, prompt, resource") from exc


def _annotations(entry: dict[str, Any], item_type: ItemType) -> dict[str, Any]:
    """The entry's annotations; a resource's URI (template) and MIME type travel with them."""
    annotations = entry.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise EntryError("annotations", "must be an object")
    if item_type is ItemType.RESOURCE:
        for key in ("uri", "uriTemplate", "mimeType"):
            if isinstance(entry.get(key), str):
                annotations = {**annotations, key: entry[key]}
    return annotations


def _tool_id(declared: Any, name: str, owner: str | None) -> str:
    tool_id = declared
    if tool_id is None:
        tool_id = f"{owner}::{name}" if owner else name
    if not isinstance(tool_id, str) or not tool_id.strip():
        raise EntryError("id", "must be a non-empty string")
    return tool_id.strip()
