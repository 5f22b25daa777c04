"""The SDK's MCP server as toolscout serves it: tools lists without derived titles (and, for the
gateway, without output schemas), and failed calls whose text starts with the error table's
code (``invalid_parameter: limit: must be between 1 and 50, got 500``) instead of the SDK's
``Error executing tool ...`` and pydantic's wording, which are what a model reads worst."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from toolscout.api.errors import mcp_message
from toolscout.errors import QueryError


def _derived(title: Any, derived: set[str], *, root: bool) -> bool:
    return isinstance(title, str) and (title in derived or (root and title.endswith("Arguments")))


def _untitled(schema: Any, key: str | None = None, *, root: bool = True) -> Any:
    """``schema`` without the titles pydantic derives from names (``"Item Type"`` for
    ``item_type``, ``"search_toolsArguments"`` for the root); a title someone wrote stays."""
    if isinstance(schema, list):
        return [_untitled(x, root=False) for x in schema]
    if not isinstance(schema, dict):
        return schema
    derived = {key.replace("_", " ").title()} if key else set()
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "title" and _derived(v, derived, root=root):
            continue
        if k in ("properties", "$defs") and isinstance(v, dict):
            out[k] = {name: _untitled(sub, name, root=False) for name, sub in v.items()}
        else:
            out[k] = _untitled(v, root=False)
    return out


def _range(schema: dict[str, Any] | None, field: str) -> str | None:
    """``"between 1 and 50"`` for a bounded parameter of a tool's input schema."""
    prop = ((schema or {}).get("properties") or {}).get(field)
    if not isinstance(prop, dict):
        return None
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        return f"between {low} and {high}"
    if prop.get("enum"):
        return "one of " + ", ".join(map(str, prop["enum"]))
    return None


def invalid_arguments_text(error: ValidationError, schema: dict[str, Any] | None) -> str:
    """``invalid_parameter: limit: must be between 1 and 50, got 500``: the error table's
    code, the first offending field, its allowed values when the schema bounds them."""
    first = error.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or "(arguments)"
    allowed = _range(schema, field.split(".")[0])
    if allowed is not None and first.get("type") != "missing":
        message = f"must be {allowed}, got {first.get('input')!r}"
    else:
        message = str(first.get("msg", "invalid")).lower()
    return mcp_message(QueryError(field, message))


class CompactServer(MCPServer):
    """The SDK's server, with tools lists that leave out derived titles (they repeat the
    parameter names and cost about a tenth of the tokens a client loads at start-up), and
    failed calls whose text starts with the error table's code: the SDK's
    ``Error executing tool ...`` prefix and pydantic's wording are what a model reads worst."""

    #: False: tools lists leave out output schemas (the gateway's; see create_mcp_server).
    output_schemas = True

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        update: dict[str, Any] = {} if self.output_schemas else {"output_schema": None}
        return [
            t.model_copy(update={"input_schema": _untitled(t.input_schema), **update})
            for t in tools
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        """Raises: ToolError (its text ``code: field: message``), as the SDK's."""
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                listed = {t.name: t.input_schema for t in await super().list_tools()}
                raise ToolError(invalid_arguments_text(cause, listed.get(name))) from cause
            if isinstance(cause, ToolError):  # ours, already ``code: field: message``
                raise ToolError(str(cause)) from cause.__cause__
            raise
