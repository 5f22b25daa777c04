"""Rendering for the console: the template environment, pages, error pages and the assets.

A page handler builds its view (a dict of plain values) from engine calls; :func:`page` renders
it, and turns any :class:`~toolscout.errors.ToolscoutError` into an HTML page with the status
the REST API's error table gives the same error, naming the field when there is one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from starlette.templating import Jinja2Templates

from toolscout.api.console.access import is_admin
from toolscout.api.errors import field_of, kind_of, message_of
from toolscout.errors import ToolscoutError

PACKAGE = "toolscout.api.console"
#: Vendored assets: name -> media type. Nothing else is ever served from the folder.
ASSETS = {"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}
NAV = (
    ("/", "Search"),
    ("/catalog", "Catalog"),
    ("/skills", "Skills"),
    ("/evals", "Evaluations"),
    ("/status", "Status"),
)


def _folder(name: str) -> Path:
    return Path(str(resources.files(PACKAGE).joinpath(name)))


@cache
def asset(name: str) -> tuple[bytes, str]:
    """An asset's bytes and a short content hash (used in its URL, so caches never go stale)."""
    data = _folder("static").joinpath(name).read_bytes()
    return data, hashlib.sha256(data).hexdigest()[:12]


def asset_url(name: str) -> str:
    return f"/console/static/{name}?v={asset(name)[1]}"


def _ago(stamp: str | None) -> str:
    """``2026-11-23T10:00:00+00:00`` -> ``3 h ago`` (empty for None)."""
    if not stamp:
        return ""
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    seconds = (datetime.now(UTC) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _query(base: Mapping[str, Any], **changes: Any) -> str:
    """The query string of ``base`` with ``changes`` (None removes a key)."""
    merged = {**base, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


@cache
def templates() -> Jinja2Templates:
    t = Jinja2Templates(directory=str(_folder("templates")))
    t.env.globals.update(asset_url=asset_url, nav=NAV)
    t.env.filters.update(ago=_ago, pct=_pct, qs=_query)
    t.env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=False)
    return t


def page(
    request: Request,
    template: str,
    build: Callable[[], Mapping[str, Any]],
    *,
    status: int = 200,
    title: str = "",
) -> Response:
    """Render ``template`` with the view ``build`` returns, or the error page for what it
    raised (status from the REST error table)."""
    try:
        view = dict(build())
    except ToolscoutError as exc:
        return error_page(request, exc, title=title)
    return _render(request, template, {"title": title, **view}, status)


def error_page(request: Request, exc: ToolscoutError, *, title: str = "") -> Response:
    kind = kind_of(exc)
    view = {
        "title": title or "Error",
        "status": kind.status,
        "code": kind.code,
        "field": field_of(exc),
        "message": message_of(exc),
    }
    return _render(request, "error.html", view, kind.status)


def _render(request: Request, template: str, view: dict[str, Any], status: int) -> Response:
    view.setdefault("admin", is_admin(request))
    view.setdefault("path", request.url.path)
    view.setdefault("flash", request.query_params.get("done"))
    response = templates().TemplateResponse(request, template, view, status_code=status)
    response.headers["Cache-Control"] = "no-store"
    return response


def static(name: str) -> Response:
    """One vendored asset (404 for any other name)."""
    if name not in ASSETS:
        return HTMLResponse("not found", status_code=404)
    data, _ = asset(name)
    return Response(
        data,
        media_type=ASSETS[name],
        headers={"Cache-Control": "public, max-age=31536000, immutable"},
    )
