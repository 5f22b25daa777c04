"""What the OpenAPI document and the answers must agree on beyond each route's declaration.

Two answers come from the framework rather than from a route, so no route declares them:

* a body that cannot be read as JSON text (not UTF-8, say) is answered 400 by FastAPI before
  the body model sees it, so every route that takes a body documents 400 as well;
* a method a path does not serve is answered 405 by the first route that matches the path
  alone, whose ``Allow`` names only its own methods; :func:`allowed_methods` names every method
  the path serves, as the document lists them.

And one the framework lets through: FastAPI ignores query parameters a route does not declare
and keeps the last of a repeated one, so a typo (``?limt=3``) silently searches with the
default. :func:`strict_query` refuses both under ``/api/`` (422, naming the parameter); the
key check calls it once the key is accepted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.routing import Match, Route

from toolscout.errors import QueryError


def document_body_errors(app: FastAPI, description: str, schema_ref: str) -> None:
    """Make ``app``'s document list 400 (``description``, a body of ``schema_ref``) for every
    operation that takes a body."""
    build = app.openapi
    error = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": schema_ref}}},
    }

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()  # cached by FastAPI in app.openapi_schema: amended once
            for item in document.get("paths", {}).values():
                for operation in item.values():
                    if isinstance(operation, dict) and "requestBody" in operation:
                        operation.setdefault("responses", {}).setdefault("400", error)
        return app.openapi_schema or build()

    app.openapi = openapi  # type: ignore[method-assign]


def allowed_methods(request: Request) -> str:
    """The ``Allow`` header for a 405 on ``request``'s path: every method a route of the app
    serves there (HEAD with GET, as Starlette answers it)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                methods.update(route.methods)
    return ", ".join(sorted(methods))


def strict_query(request: Request) -> None:
    """Refuse query parameters an ``/api/`` route does not declare, and any given twice (none
    of them is a list).

    Raises:
        QueryError: naming the parameter (answered 422).
    """
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.path.startswith("/api/"):
        return
    declared = set(_query_names(route.dependant))
    for name, count in Counter(k for k, _ in request.query_params.multi_items()).items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise QueryError(name, f"not a parameter of this route (it takes: {known})")
        if count > 1:
            raise QueryError(name, "given more than once; give it once")


def _query_names(dependant: Dependant) -> Iterator[str]:
    for param in dependant.query_params:
        yield param.alias
    for sub in dependant.dependencies:
        yield from _query_names(sub)
