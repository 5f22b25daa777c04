"""One OpenAPI operation as one tool: parameters and JSON body as an input schema, ``$ref``s
resolved.

References are looked up with ``referencing`` (the jsonschema project's resolver: JSON pointer
escapes, percent-encoding, anchors), the document as one resource and, when the caller passes a
way to retrieve them, the documents its references name as others (which documents may be
opened is :mod:`toolscout.ingest.openapi_documents`'s rule); without one, a reference to another
file or URL is reported. Two kinds of cycle
are told apart: a reference whose chain only leads to further references and back (``A -> B ->
A``) names nothing and is an error; a schema that contains itself through its properties (a
tree node with ``children: [Node]``) is legitimate and is cut at the second visit to an empty
schema with a note. Every operation's resolved schema is capped (:data:`MAX_NODES`) so that a
document crafted to expand exponentially costs bounded work.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urldefrag, urljoin

from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from toolscout.errors import IngestError
from toolscout.models import JSON, Tool

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
SAFE_METHODS = frozenset({"get", "head", "options", "trace"})
IDEMPOTENT_METHODS = frozenset({"put", "delete"})
#: The keys of an operation a tool is made from.
_USED_KEYS = frozenset(
    {"operationId", "summary", "description", "tags", "deprecated", "parameters", "requestBody"}
)
#: Schema nodes one operation's input schema may hold once references are expanded.
MAX_NODES = 20_000
_ROOT = "urn:toolscout:openapi"
_SWAGGER_PARAM_KEYS = (
    "type",
    "format",
    "enum",
    "items",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
)


class OperationError(ValueError):
    """An operation that cannot become a tool; ``pointer`` is where in the document."""

    def __init__(self, pointer: str, field: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.field = field


def pointer_token(key: str) -> str:
    """One JSON pointer segment (RFC 6901 escaping)."""
    return key.replace("~", "~0").replace("/", "~1")


def fallback_id(method: str, path: str) -> str:
    """A readable, stable name for an operation without ``operationId``:
    ``GET /users/{id}`` -> ``get_users_by_id``."""
    words: list[str] = [method.lower()]
    for segment in path.strip("/").split("/"):
        if not segment:
            continue
        match = re.fullmatch(r"\{(.+)\}", segment)
        words.extend(["by", match.group(1)] if match else [segment])
    return re.sub(r"[^A-Za-z0-9_]+", "_", "_".join(words)).strip("_").lower() or method.lower()


class _Lookup(Protocol):
    """What is used of ``referencing``'s resolver (which the package does not export)."""

    def lookup(self, ref: str) -> Any: ...


@dataclass(frozen=True)
class Scope:
    """Where references are resolved from: a resolver and the base URI it resolves against
    (the document a node was found in)."""

    resolver: _Lookup
    base: str

    def key(self, ref: str) -> str:
        """``ref`` made absolute, so that one target has one name across documents."""
        return self.base + ref if ref.startswith("#") else urljoin(self.base, ref)

    def after(self, ref: str, resolver: _Lookup) -> Scope:
        """The scope inside the target of ``ref`` (another document's, for an external one)."""
        base = self.base if ref.startswith("#") else urldefrag(urljoin(self.base, ref))[0]
        return Scope(resolver, base)


def _cause(exc: BaseException) -> IngestError | None:
    """The retrieval failure behind a failed lookup, if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, IngestError):
            return seen
        seen = seen.__cause__
    return None


class Resolver:
    """Expands the ``$ref``s of one document (see the module docstring).

    ``base_uri`` is the document's URL or ``file:`` URI; ``retrieve`` returns the parsed
    document at an absolute URI (raising :class:`~toolscout.errors.IngestError`). Without
    ``retrieve`` a reference to another document is an error.
    """

    def __init__(
        self,
        document: Mapping[str, Any],
        *,
        base_uri: str = _ROOT,
        retrieve: Callable[[str], Any] | None = None,
    ) -> None:
        resource: Resource[Any] = Resource.opaque(document)
        registry: Registry[Any] = (
            Registry(retrieve=lambda uri: Resource.opaque(retrieve(uri)))  # type: ignore[call-arg]
            if retrieve is not None
            else Registry()
        )
        root = registry.with_resource(base_uri, resource).resolver(base_uri)
        self._root = Scope(root, base_uri)
        self._external = retrieve is not None
        self._nodes = 0
        #: OpenAPI 3.0 and Swagger 2.0 schemas are not JSON Schema 2020-12: rewrite what differs.
        self._legacy = not str(document.get("openapi", "")).startswith("3.1")

    def expand(self, node: Any, pointer: str, scope: Scope | None = None) -> Any:
        """``node`` (found in ``scope``'s document; None: the first one) with every reference
        replaced by its target (a fresh structure).

        Raises:
            OperationError: a reference that leads nowhere, outside the document (or its
                scope), round in a circle, or a schema larger than :data:`MAX_NODES` once
                expanded.
        """
        self._nodes = 0
        return self._expand(node, pointer, (), scope or self._root)

    def follow(self, node: Any, pointer: str, scope: Scope | None = None) -> tuple[Any, Scope]:
        """``node``, or if it is a reference the object it names (its sibling keys kept), and
        the scope inside it; nothing below it is expanded. For path items and operations kept
        in other files (``get: {$ref: "ops/list.yaml"}``).

        Raises:
            OperationError: as :meth:`expand`.
        """
        scope = scope or self._root
        if not isinstance(node, dict) or not isinstance(node.get("$ref"), str):
            return node, scope
        target, inner = self._follow(node["$ref"], f"{pointer}/$ref", scope)
        if not isinstance(target, dict):
            raise OperationError(f"{pointer}/$ref", "$ref", f"{node['$ref']!r} is not an object")
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}, inner

    def _expand(self, node: Any, pointer: str, stack: tuple[str, ...], scope: Scope) -> Any:
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise OperationError(
                pointer, "$ref", f"over {MAX_NODES} schema nodes once references are expanded"
            )
        if isinstance(node, list):
            return [self._expand(v, f"{pointer}/{i}", stack, scope) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            key = scope.key(ref)
            if key in stack:  # a schema containing itself: cut, legitimately recursive
                return {"description": f"(recursive: the same shape as {ref})"}
            target, inner = self._follow(ref, f"{pointer}/$ref", scope)
            extra = {k: v for k, v in node.items() if k != "$ref"}
            merged = {**target, **extra} if isinstance(target, dict) and extra else target
            return self._expand(merged, pointer, (*stack, key), inner)
        out = {
            k: self._expand(v, f"{pointer}/{pointer_token(k)}", stack, scope)
            for k, v in node.items()
        }
        return _from_legacy(out) if self._legacy else out

    def _follow(self, ref: str, pointer: str, scope: Scope) -> tuple[Any, Scope]:
        """The target of ``ref`` and the scope inside it, following a chain of bare references.

        Raises:
            OperationError: a reference outside the document (or its scope), to nowhere, or a
                chain in a cycle.
        """
        seen: list[str] = []
        shown: list[str] = []
        while True:
            if not ref.startswith("#") and not self._external:
                raise OperationError(
                    pointer, "$ref", f"{ref!r} points outside this document; inline it"
                )
            if scope.key(ref) in seen:
                chain = " -> ".join([*shown, ref])
                raise OperationError(pointer, "$ref", f"reference cycle: {chain}")
            seen.append(scope.key(ref))
            shown.append(ref)
            try:
                resolved = scope.resolver.lookup(ref)
            except Unresolvable as exc:
                cause = _cause(exc)
                why = f"cannot be read: {cause}" if cause else f"does not exist: {exc}"
                raise OperationError(pointer, "$ref", f"{ref!r} {why}") from exc
            scope = scope.after(ref, resolved.resolver)
            target = resolved.contents
            if isinstance(target, dict) and set(target) == {"$ref"}:
                ref = str(target["$ref"])
                continue
            return target, scope


def _from_legacy(node: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.0 / Swagger 2.0 schema node in JSON Schema 2020-12 terms, which the
    gateway validates arguments with: ``nullable: true`` becomes a ``"null"`` type, and boolean
    ``exclusiveMinimum``/``exclusiveMaximum`` become the numeric bounds."""
    if node.get("nullable") is True or node.get("x-nullable") is True:
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        node.pop("nullable", None)
        node.pop("x-nullable", None)
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(flag) is True and isinstance(node.get(bound), int | float):
            node[flag] = node.pop(bound)
        elif isinstance(node.get(flag), bool):
            del node[flag]
    return node


def _parameter_schema(param: Mapping[str, Any]) -> JSON:
    """The JSON schema of one parameter (OpenAPI 3: ``schema``; Swagger 2: inline keys)."""
    if isinstance(param.get("schema"), dict):
        schema: JSON = dict(param["schema"])
    else:
        schema = {k: param[k] for k in _SWAGGER_PARAM_KEYS if k in param}
    if param.get("description") and "description" not in schema:
        schema["description"] = param["description"]
    return schema


def _body_schema(operation: Mapping[str, Any]) -> tuple[JSON | None, bool]:
    """The JSON request body's schema and whether it is required (None: no JSON body)."""
    body = operation.get("requestBody")
    if isinstance(body, dict):
        content = body.get("content") or {}
        media = (
            next((m for m in content if "json" in m), None) if isinstance(content, dict) else None
        )
        if media is not None and isinstance(content[media], dict):
            schema = content[media].get("schema")
            return (dict(schema) if isinstance(schema, dict) else {}), bool(body.get("required"))
    for param in operation.get("parameters") or []:
        if isinstance(param, dict) and param.get("in") == "body":
            schema = param.get("schema")
            return (dict(schema) if isinstance(schema, dict) else {}), bool(param.get("required"))
    return None, False


def _add_body(
    operation: Mapping[str, Any],
    pointer: str,
    properties: JSON,
    required: list[str],
    where: dict[str, str],
) -> None:
    """Add the JSON body as the argument ``body``.

    Raises:
        OperationError: a parameter already has that name.
    """
    body, body_required = _body_schema(operation)
    if body is None:
        return
    if "body" in where:
        raise OperationError(pointer, "body", "a parameter named 'body' hides the JSON body")
    where["body"] = "body"
    properties["body"] = body
    if body_required:
        required.append("body")


def _schema(operation: Mapping[str, Any], pointer: str) -> tuple[JSON, dict[str, str]]:
    """The input schema and where each argument goes (``{"id": "path", "body": "body"}``).

    Raises:
        OperationError: a parameter without name or location, or two with one name.
    """
    properties: JSON = {}
    required: list[str] = []
    where: dict[str, str] = {}
    for i, param in enumerate(operation.get("parameters") or []):
        at = f"{pointer}/parameters/{i}"
        if not isinstance(param, dict) or not isinstance(param.get("name"), str):
            raise OperationError(at, "name", "a parameter needs a name and an 'in'")
        location = param.get("in")
        if location in ("body", "formData", "cookie"):
            continue  # the body is below; form and cookie parameters are not sent
        if location not in ("path", "query", "header"):
            raise OperationError(at, "in", f"unknown parameter location {location!r}")
        name = param["name"]
        if name in where:
            raise OperationError(at, "name", f"parameter {name!r} appears twice; rename one")
        where[name] = str(location)
        properties[name] = _parameter_schema(param)
        if param.get("required") or location == "path":
            required.append(name)
    _add_body(operation, pointer, properties, required, where)
    schema: JSON = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, where


def operation_tool(
    resolver: Resolver,
    *,
    api: str,
    method: str,
    path: str,
    operation: Mapping[str, Any],
    shared_parameters: list[Any],
    base_url: str | None,
    source: str,
    scope: Scope | None = None,
) -> Tool:
    """The tool for ``method path`` (its path item found in ``scope``'s document; None: the
    first one).

    Raises:
        OperationError: the operation cannot be converted (the pointer says where).
    """
    pointer = f"#/paths/{pointer_token(path)}/{method}"
    operation, inner = resolver.follow(operation, pointer, scope)
    # Only what the tool is made of is expanded: responses and callbacks can be far larger than
    # the input (a real document's response schemas ran past MAX_NODES) and are not used.
    used = {k: v for k, v in operation.items() if k in _USED_KEYS}
    expanded = resolver.expand(used, pointer, inner)
    own = expanded.get("parameters") or []
    shared = resolver.expand(shared_parameters, f"#/paths/{pointer_token(path)}/parameters", scope)
    # Operation-level parameters override path-level ones with the same name and location.
    names = {(p.get("name"), p.get("in")) for p in own if isinstance(p, dict)}
    inherited = [
        p for p in shared if isinstance(p, dict) and (p.get("name"), p.get("in")) not in names
    ]
    expanded["parameters"] = [*inherited, *own]
    schema, where = _schema(expanded, pointer)
    op_id = expanded.get("operationId")
    name = op_id if isinstance(op_id, str) and op_id.strip() else fallback_id(method, path)
    text = [str(expanded[k]).strip() for k in ("summary", "description") if expanded.get(k)]
    tags = expanded.get("tags")
    annotations: JSON = {
        "http_method": method.upper(),
        "http_path": path,
        "http_parameters": where,
        "readOnlyHint": method in SAFE_METHODS,
        "destructiveHint": method not in SAFE_METHODS,
        "idempotentHint": method in SAFE_METHODS | IDEMPOTENT_METHODS,
    }
    if base_url:
        annotations["http_base_url"] = base_url
    if expanded.get("deprecated") is True:
        annotations["deprecated"] = True
    return Tool(
        id=f"{api}::{name}",
        name=name,
        description="\n\n".join(dict.fromkeys(t for t in text if t)),
        input_schema=schema,
        annotations=annotations,
        server=api,
        source=source,
        category=tags[0] if isinstance(tags, list) and tags and isinstance(tags[0], str) else None,
    )
