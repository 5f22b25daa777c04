"""Console pages that govern skills: the catalog with tool counts, a skill's members, the
suggestion queue (approve / reject) and classification jobs with their progress.

Listings are reads. The suggestion queue and jobs are shown to the admin only, as on REST (they
are drafts and operations), and every change needs the admin key (:func:`check_write`).
Each write answers ``303 See Other`` back to the skills page, so reloading never repeats it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import RedirectResponse, Response

from toolscout.api.console.access import check_read, check_write, is_admin
from toolscout.api.console.render import error_page, page
from toolscout.api.jobs import JobRunner
from toolscout.engine import Engine
from toolscout.errors import ToolscoutError
from toolscout.models import ClassifyProgress, ClassifyReport, SkillMatch

#: A skill is flagged overloaded above this many tools, or above OVERLOAD_FACTOR times the
#: median size of the non-empty skills, whichever is larger: stage 2 then searches a big slice.
OVERLOAD_MIN = 40
OVERLOAD_FACTOR = 3.0
MEMBERS = 200
SuggestionId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _jobs(request: Request) -> JobRunner:
    runner: JobRunner = request.app.state.jobs
    return runner


def overload_limit(matches: list[SkillMatch]) -> int:
    """The tool count above which a skill counts as overloaded (see OVERLOAD_MIN)."""
    sizes = [m.tool_count for m in matches if m.tool_count > 0]
    median = statistics.median(sizes) if sizes else 0
    return max(OVERLOAD_MIN, int(OVERLOAD_FACTOR * median))


def _done(message: str, anchor: str = "") -> Response:
    return RedirectResponse(f"/skills?done={quote(message)}{anchor}", status_code=303)


def _classify(
    engine: Engine, all_: bool, progress: Callable[[ClassifyProgress], None]
) -> ClassifyReport:
    return engine.classify(all=all_, concurrency=engine.classify_concurrency, progress=progress)


def _pages(router: APIRouter) -> None:
    @router.get("/skills", include_in_schema=False)
    def skills(request: Request) -> Response:
        def build() -> dict[str, Any]:
            check_read(request)
            engine = _engine(request)
            matches = engine.skills.list(include_inactive=True)
            admin = is_admin(request)
            return {
                "skills": matches,
                "overload": overload_limit(matches),
                "suggestions": engine.suggestions.pending() if admin else None,
                "jobs": _jobs(request).recent() if admin else None,
            }

        return page(request, "skills.html", build, title="Skills")

    @router.get("/skills/jobs/{job_id}", include_in_schema=False)
    def job(request: Request, job_id: str) -> Response:
        def build() -> dict[str, Any]:
            check_write(request)  # as on REST: jobs are the admin's
            return {"job": _jobs(request).get(job_id)}

        return page(request, "job.html", build, title="Classification job")

    @router.get("/skills/{skill_id}", include_in_schema=False)
    def skill(request: Request, skill_id: str) -> Response:
        def build() -> dict[str, Any]:
            check_read(request)
            engine = _engine(request)
            found = engine.skills.get(skill_id)
            tools, total = engine.list_tools(skill_ids=[skill_id], limit=MEMBERS)
            return {"skill": found, "tools": tools, "total": total}

        return page(request, "skill.html", build, title=skill_id)


def _writes(router: APIRouter) -> None:
    @router.post("/skills/suggestions/{suggestion_id}/approve", include_in_schema=False)
    def approve(request: Request, suggestion_id: SuggestionId) -> Response:
        try:
            check_write(request)
            created = _engine(request).suggestions.approve(suggestion_id)
        except ToolscoutError as exc:
            return error_page(request, exc, title="Approve suggestion")
        return _done(f"approved: skill {created.id} created", "#suggestions")

    @router.post("/skills/suggestions/{suggestion_id}/reject", include_in_schema=False)
    def reject(
        request: Request, suggestion_id: SuggestionId, reason: Annotated[str, Form()] = ""
    ) -> Response:
        try:
            check_write(request)
            _engine(request).suggestions.reject(suggestion_id, reason)
        except ToolscoutError as exc:
            return error_page(request, exc, title="Reject suggestion")
        return _done(f"rejected suggestion {suggestion_id}", "#suggestions")

    @router.post("/skills/classify", include_in_schema=False)
    def classify(request: Request, scope: Annotated[str, Form()] = "changed") -> Response:
        try:
            check_write(request)
            engine = _engine(request)
            started = _jobs(request).start(partial(_classify, engine, scope == "all"))
        except ToolscoutError as exc:
            return error_page(request, exc, title="Classify")
        return _done(f"classification job {started.id} started", "#jobs")


def routes(router: APIRouter) -> None:
    """Add the skill pages and their writes to ``router``."""
    _pages(router)
    _writes(router)
