"""One table from toolscout errors to what each serving edge answers.

HTTP answers with a status and a JSON body ``{"error": {"code", "field", "message"}}``; MCP
answers a failed tool call whose text starts with the same code, so an agent can tell its own
mistake (fix the argument) from a server fault (try later). Nothing a client sends may produce
a 500: client mistakes are ``QueryError``/``SkillError``/``AccessDenied`` subclasses, and
FastAPI's own validation errors are rendered with the same body shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolscout.api.jobs import JobNotFound
from toolscout.errors import (
    AccessDenied,
    CallDenied,
    ConfigError,
    EmbedError,
    EmptyQuery,
    EnrichError,
    IngestError,
    InvalidArguments,
    Overloaded,
    QueryError,
    ServerNotFound,
    SkillError,
    SkillExists,
    SkillNotFound,
    StoreError,
    SuggestionNotFound,
    ToolNotFound,
    ToolscoutError,
    UpstreamError,
)
from toolscout.eval.reports import ReportNotFound


@dataclass(frozen=True)
class ErrorKind:
    """How one error class is answered: HTTP status and a stable machine-readable code."""

    status: int
    code: str


#: error class -> answer; first match wins, so subclasses come before their parents.
ERROR_TABLE: tuple[tuple[type[ToolscoutError], ErrorKind], ...] = (
    (EmptyQuery, ErrorKind(400, "empty_query")),
    (ServerNotFound, ErrorKind(404, "server_not_found")),
    (QueryError, ErrorKind(422, "invalid_parameter")),
    (ToolNotFound, ErrorKind(404, "tool_not_found")),
    (SkillNotFound, ErrorKind(404, "skill_not_found")),
    (SuggestionNotFound, ErrorKind(404, "suggestion_not_found")),
    (JobNotFound, ErrorKind(404, "job_not_found")),
    (ReportNotFound, ErrorKind(404, "report_not_found")),
    (SkillExists, ErrorKind(409, "skill_exists")),
    (SkillError, ErrorKind(422, "invalid_skill")),
    (AccessDenied, ErrorKind(401, "unauthorized")),
    (InvalidArguments, ErrorKind(422, "invalid_arguments")),
    (CallDenied, ErrorKind(403, "call_denied")),
    (UpstreamError, ErrorKind(502, "upstream_unavailable")),
    (IngestError, ErrorKind(422, "invalid_input")),
    (Overloaded, ErrorKind(503, "overloaded")),
    (EmbedError, ErrorKind(503, "model_unavailable")),
    (EnrichError, ErrorKind(502, "llm_failed")),
    (StoreError, ErrorKind(503, "store_unavailable")),
    (ConfigError, ErrorKind(500, "server_misconfigured")),
    (ToolscoutError, ErrorKind(500, "internal_error")),
)

INTERNAL = ErrorKind(500, "internal_error")


def kind_of(exc: ToolscoutError) -> ErrorKind:
    """The table row for ``exc`` (AccessDenied carries its own 401/403)."""
    kind = next(k for cls, k in ERROR_TABLE if isinstance(exc, cls))
    if isinstance(exc, AccessDenied) and exc.status == 403:
        return ErrorKind(403, "forbidden")
    return kind


def field_of(exc: ToolscoutError) -> str | None:
    """The request field an error names, when it names one."""
    value = getattr(exc, "field", None)
    return value if isinstance(value, str) else None


def message_of(exc: ToolscoutError) -> str:
    """The human message without the field prefix (the body carries the field separately)."""
    if isinstance(exc, QueryError | InvalidArguments):
        return exc.message
    return str(exc)


def error_body(
    code: str, message: str, field: str | None = None, details: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """The one JSON error shape every HTTP error uses."""
    body: dict[str, Any] = {"code": code, "field": field, "message": message}
    if details:
        body["details"] = list(details)
    return {"error": body}


def body_for(exc: ToolscoutError) -> tuple[int, dict[str, Any]]:
    """HTTP status and body for a toolscout error."""
    kind = kind_of(exc)
    return kind.status, error_body(kind.code, message_of(exc), field_of(exc))


_SOURCES = ("body", "query", "path", "header", "cookie")


def validation_body(errors: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Render pydantic/FastAPI validation errors in the same shape, naming the first field.

    ``loc`` starts with where the value came from (``body``, ``query``, ``path``); the field
    is what follows, dotted for nested values.
    """
    details = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] in _SOURCES:
            loc = loc[1:]
        details.append({"field": ".".join(loc) or None, "message": str(err.get("msg", "invalid"))})
    first = details[0] if details else {"field": None, "message": "invalid request"}
    return error_body("invalid_parameter", str(first["message"]), first["field"], details)


def mcp_message(exc: ToolscoutError) -> str:
    """The text of a failed MCP tool call: ``code: field: message`` (field when named)."""
    kind = kind_of(exc)
    field = field_of(exc)
    prefix = f"{kind.code}: {field}: " if field else f"{kind.code}: "
    return prefix + message_of(exc)
