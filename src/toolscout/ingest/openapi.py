"""OpenAPI documents (3.0, 3.1, Swagger 2.0; JSON or YAML; a file or a URL) as sources: one
tool per operation, id ``<api>::<operationId>``.

The document as a whole must look like OpenAPI (a version field, a ``paths`` object); if it
does not, or cannot be fetched or parsed, reading fails with an
:class:`~toolscout.errors.IngestError` and a sync keeps what was indexed from it. An operation
that cannot be converted (a broken ``$ref``, a reference cycle, a parameter without a name) is a
:class:`~toolscout.models.Problem` with the document's location and the JSON pointer, standing
for that operation's id only: the rest of the document is indexed and, with prune, the skipped
operation keeps its previous version. Conversion itself is in
:mod:`toolscout.ingest.openapi_schema`; getting the document (the fetch cache) and the
documents its references name beside it (within its folder or host) is in
:mod:`toolscout.ingest.openapi_documents`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urljoin, urlsplit

from toolscout.errors import IngestError
from toolscout.ingest.openapi_documents import (
    FETCH_TIMEOUT,
    DocumentCache,
    Documents,
    is_url,
    parse_document,
)
from toolscout.ingest.openapi_schema import (
    METHODS,
    OperationError,
    Resolver,
    Scope,
    fallback_id,
    operation_tool,
    pointer_token,
)
from toolscout.models import Loaded, Problem


def is_openapi(doc: Any) -> bool:
    """Whether a parsed document declares itself OpenAPI or Swagger."""
    return isinstance(doc, dict) and (
        isinstance(doc.get("openapi"), str) or isinstance(doc.get("swagger"), str)
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def api_name(doc: Mapping[str, Any], location: str) -> str:
    """The default ``<api>`` of the ids: the document's title, else the file or host name."""
    info = doc.get("info")
    title = info.get("title") if isinstance(info, dict) else None
    if isinstance(title, str) and _slug(title):
        return _slug(title)
    if is_url(location):
        return _slug(urlsplit(location).hostname or "") or "api"
    return _slug(Path(location).stem) or "api"


def base_url(doc: Mapping[str, Any], location: str) -> str | None:
    """Where the API is served, as the document says (relative to a fetched document's URL)."""
    servers = doc.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        url = servers[0].get("url")
        if isinstance(url, str) and url:
            return urljoin(location, url) if is_url(location) else (url if is_url(url) else None)
    host = doc.get("host")
    if isinstance(host, str) and host:
        schemes = doc.get("schemes") or ["https"]
        return f"{schemes[0]}://{host}{doc.get('basePath') or ''}"
    if is_url(location):
        parts = urlsplit(location)
        return f"{parts.scheme}://{parts.netloc}{doc.get('basePath') or ''}"
    return None


def _check(doc: Any, location: str) -> Mapping[str, Any]:
    """The document, if it has the shape every operation is read from.

    Raises:
        IngestError: no supported version field, or no ``paths`` object.
    """
    if not is_openapi(doc):
        raise IngestError(f"{location}: not an OpenAPI document (no 'openapi' or 'swagger' field)")
    version = str(doc.get("openapi") or doc.get("swagger"))
    if not (version.startswith(("3.0", "3.1")) or version == "2.0"):
        raise IngestError(
            f"{location}#/openapi: version {version!r} is not supported (3.0, 3.1 or Swagger 2.0)"
        )
    if not isinstance(doc.get("paths"), dict):
        raise IngestError(f"{location}#/paths: must be an object of paths to operations")
    return cast(Mapping[str, Any], doc)


@dataclass(frozen=True)
class _Where:
    location: str
    path: str
    method: str

    @property
    def pointer(self) -> str:
        return f"{self.location}#/paths/{pointer_token(self.path)}/{self.method}"


def _add(
    loaded: Loaded,
    seen: set[str],
    resolving: tuple[Resolver, Scope],
    where: _Where,
    operation: Any,
    shared: Any,
    *,
    api: str,
    base: str | None,
) -> None:
    """Convert one operation into ``loaded``: its tool, or a problem standing for its id."""
    op_id = operation.get("operationId") if isinstance(operation, dict) else None
    name = op_id if isinstance(op_id, str) and op_id.strip() else None
    tool_id = f"{api}::{name or fallback_id(where.method, where.path)}"
    try:
        if not isinstance(operation, dict):
            raise OperationError("", "(operation)", "not an object")
        resolver, scope = resolving
        tool = operation_tool(
            resolver,
            scope=scope,
            api=api,
            method=where.method,
            path=where.path,
            operation=operation,
            shared_parameters=shared if isinstance(shared, list) else [],
            base_url=base,
            source=loaded.source,
        )
    except OperationError as exc:
        at = f"{where.location}{exc.pointer}" if exc.pointer else where.pointer
        loaded.problems.append(Problem(at, exc.field, str(exc), stands_for=(tool_id,)))
        return
    if tool.id in seen:
        loaded.problems.append(
            Problem(
                where.pointer,
                "operationId",
                f"duplicate id {tool.id!r} in this document; kept the first",
            )
        )
        return
    seen.add(tool.id)
    loaded.tools.append(tool)


def document_tools(
    doc: Any,
    *,
    location: str,
    source: str,
    api: str | None = None,
    base: str | None = None,
    documents: Documents | None = None,
) -> Loaded:
    """Every operation of ``doc`` as a tool; unconvertible ones become problems. References
    to other documents are followed through ``documents`` (None: reported as problems).

    Raises:
        IngestError: the document is not OpenAPI 3.0/3.1 or Swagger 2.0 with a paths object.
    """
    doc = _check(doc, location)
    api = api or api_name(doc, location)
    base = base or base_url(doc, location)
    loaded = Loaded(source=source)
    resolver = (
        Resolver(doc, base_uri=documents.uri, retrieve=documents.retrieve)
        if documents is not None
        else Resolver(doc)
    )
    seen: set[str] = set()
    for path, item in doc["paths"].items():
        at = f"#/paths/{pointer_token(str(path))}"
        try:
            item, scope = resolver.follow(item, at)
        except OperationError as exc:
            loaded.problems.append(Problem(f"{location}{exc.pointer}", exc.field, str(exc)))
            continue
        if not isinstance(item, dict):
            loaded.problems.append(Problem(f"{location}{at}", "(path)", "not an object"))
            continue
        shared = item.get("parameters")
        for method in METHODS:
            if item.get(method) is not None:
                where = _Where(location, str(path), method)
                _add(
                    loaded, seen, (resolver, scope), where, item[method], shared, api=api, base=base
                )
    return loaded


class OpenApiSource:
    """An OpenAPI document (file or URL) as a :class:`~toolscout.ingest.sources.Source`.

    ``api`` names the tools' server and id prefix (default: from the document's title);
    ``base_url`` overrides where the gateway sends calls (default: the document's servers);
    ``cache`` keeps a fetched document between reads (:mod:`toolscout.ingest.openapi_documents`).
    """

    def __init__(
        self,
        location: str | Path,
        *,
        api: str | None = None,
        base_url: str | None = None,
        source: str | None = None,
        timeout: float = FETCH_TIMEOUT,
        cache: DocumentCache | None = None,
    ) -> None:
        text = str(location)
        self.location = text if is_url(text) else str(Path(text).expanduser().resolve())
        self.api = api
        self.base_url = base_url
        self.timeout = timeout
        self.cache = cache
        self._name = source or self.location

    @property
    def name(self) -> str:
        return self._name

    def read(self) -> Loaded:
        """Fetch or read the document and convert every operation.

        Raises:
            IngestError: the document cannot be fetched, parsed, or is not OpenAPI.
        """
        documents = Documents(self.location, cache=self.cache, timeout=self.timeout)
        doc = parse_document(documents.first(), self.location)
        return document_tools(
            doc,
            location=self.location,
            source=self.name,
            api=self.api,
            base=self.base_url,
            documents=documents,
        )
