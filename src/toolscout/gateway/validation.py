"""Arguments checked against a tool's stored input schema before any server sees them.

``jsonschema`` picks the validator the schema declares (draft 2020-12 when it declares none)
and the most relevant error; the error names the failing argument, so the model can fix its
call. A stored schema that is itself invalid is not held against the caller: the call goes
on and the upstream server validates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cachetools import LRUCache
from jsonschema import exceptions as schema_errors
from jsonschema import validators
from jsonschema.protocols import Validator

from toolscout.errors import InvalidArguments
from toolscout.models import Tool

log = logging.getLogger("toolscout.gateway")
_cache: LRUCache[str, Validator | None] = LRUCache(maxsize=1024)


def _validator(tool: Tool) -> Validator | None:
    key = tool.content_hash
    if key in _cache:
        return _cache[key]
    schema = tool.input_schema or {"type": "object"}
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
        checker: Validator | None = cls(schema)
    except schema_errors.SchemaError as exc:
        log.warning("gateway: %s has an invalid input schema (%s); not validating", tool.id, exc)
        checker = None
    _cache[key] = checker
    return checker


def _field(error: schema_errors.ValidationError) -> str:
    path = [str(p) for p in error.absolute_path]
    instance = error.instance
    wanted = error.validator_value
    if error.validator == "required" and isinstance(instance, dict) and isinstance(wanted, list):
        missing = [p for p in wanted if p not in instance]
        if missing:
            path.append(str(missing[0]))
    elif error.validator == "additionalProperties" and isinstance(instance, dict):
        allowed = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = sorted(k for k in instance if k not in allowed)
        if extra:
            path.append(extra[0])
    return ".".join(path) or "(arguments)"


def check_arguments(tool: Tool, arguments: Mapping[str, Any]) -> None:
    """Validate ``arguments`` against ``tool``'s input schema.

    Raises:
        InvalidArguments: naming the first failing argument and what the schema wants.
    """
    checker = _validator(tool)
    if checker is None:
        return
    error = schema_errors.best_match(checker.iter_errors(dict(arguments)))
    if error is None:
        return
    raise InvalidArguments(
        _field(error),
        f"{error.message}; call get_tool_schemas([{tool.id!r}]) for the input schema",
    )
