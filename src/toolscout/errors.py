"""The toolscout exception tree.

Every error toolscout raises on purpose derives from :class:`ToolscoutError`, so a caller can
catch one class. Each edge (CLI, HTTP, MCP) maps these classes to its own codes in one table.

    ToolscoutError
    ├── ConfigError          bad settings, or an index built with another model/tokenizer
    ├── StoreError           the index cannot be opened, read or written
    │   ├── ToolNotFound     no tool with that id
    │   └── EmptyIndex       a search or server over an index that is missing or holds nothing
    ├── QueryError           a search request that cannot be answered as asked (names the field)
    │   └── EmptyQuery       the query is empty or blank (HTTP answers 400, not 422)
    ├── IngestError          a catalog or source that cannot be read at all
    ├── EmbedError           the embedding model failed or could not be loaded
    ├── EnrichError          an LLM answer was missing, malformed or invalid
    ├── AccessDenied         a served request without the API key its operation needs
    ├── Overloaded           a served request refused because the server is at capacity
    ├── GatewayError         a call the gateway could not forward
    │   ├── CallDenied       the policy refuses the tool (deny list, destructive, read-only)
    │   ├── InvalidArguments arguments that do not match the tool's input schema (names the field)
    │   └── UpstreamError    the upstream server is down, crashed, or did not answer in time
    └── SkillError           skill catalog problems
        ├── SkillNotFound
        ├── SuggestionNotFound
        └── SkillExists
"""

from __future__ import annotations


class ToolscoutError(Exception):
    """Root of every error toolscout raises on purpose."""


class ConfigError(ToolscoutError):
    """Settings are invalid, or the index was built with a different model or tokenizer."""


class StoreError(ToolscoutError):
    """The index cannot be opened, read or written."""


class ToolNotFound(StoreError):
    """No tool has the requested id."""

    def __init__(self, tool_id: str) -> None:
        super().__init__(f"no tool with id {tool_id!r}")
        self.tool_id = tool_id


class EmptyIndex(StoreError):
    """The index is missing or holds no tools, so every search would answer nothing."""

    HINT = "index is empty or missing: run `toolscout sync`"

    def __init__(self, where: str) -> None:
        super().__init__(f"{where}: {self.HINT} (or `toolscout index FILE`)")
        self.where = where


class QueryError(ToolscoutError):
    """A request cannot be answered as asked; ``field`` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ServerNotFound(QueryError):
    """No indexed tool belongs to the named server (REST answers 404: the path names it)."""

    def __init__(self, server: str) -> None:
        super().__init__("server", f"no indexed tool belongs to {server!r}")
        self.server = server


class EmptyQuery(QueryError):
    """The query is empty or only whitespace: there is nothing to search for."""

    def __init__(self, message: str = "must not be empty; describe the capability you need"):
        super().__init__("query", message)


class AccessDenied(ToolscoutError):
    """A served request (HTTP or MCP) lacks the API key its operation needs.

    ``status`` is 401 when no usable key was sent and 403 when the operation is disabled.
    """

    def __init__(self, message: str, *, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class Overloaded(ToolscoutError):
    """The server is at capacity; ``retry_after`` says in how many seconds to try again."""

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IngestError(ToolscoutError):
    """A catalog file or tool source cannot be read at all."""


class EmbedError(ToolscoutError):
    """The embedding model could not be loaded or failed on a batch."""


class EnrichError(ToolscoutError):
    """An LLM call failed or returned something that does not validate."""


class SkillError(ToolscoutError):
    """A skill catalog operation is invalid."""


class SkillNotFound(SkillError):
    """No skill has the requested id."""

    def __init__(self, skill_id: str) -> None:
        super().__init__(f"no skill with id {skill_id!r}")
        self.skill_id = skill_id


class SuggestionNotFound(SkillError):
    """No skill suggestion has the requested id."""

    def __init__(self, suggestion_id: int) -> None:
        super().__init__(f"suggestion: no suggestion with id {suggestion_id}")
        self.suggestion_id = suggestion_id


class SkillExists(SkillError):
    """A skill with that id already exists."""

    def __init__(self, skill_id: str) -> None:
        super().__init__(f"a skill with id {skill_id!r} already exists")
        self.skill_id = skill_id


class GatewayError(ToolscoutError):
    """A tool call the gateway could not forward to its upstream server."""


class CallDenied(GatewayError):
    """The gateway's policy refuses the call; ``tool_id`` is the tool and the message says why."""

    def __init__(self, tool_id: str, reason: str) -> None:
        super().__init__(f"{tool_id}: {reason}")
        self.tool_id = tool_id
        self.reason = reason


class InvalidArguments(GatewayError):
    """Arguments that do not validate against the tool's input schema; ``field`` names the
    failing argument (dotted for nested values, ``(arguments)`` for the object itself)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class UpstreamError(GatewayError):
    """The upstream MCP server could not be started or reached, crashed, or timed out."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"upstream server {server!r}: {message}")
        self.server = server
