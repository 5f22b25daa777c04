"""REST routes of the skill catalog, the suggestion queue and batch classification.

Every route here changes or governs the catalog, so all but the listings need the admin key.
Each is one call on ``Engine.skills``, ``Engine.suggestions`` or ``Engine.classify`` plus
rendering.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated

from fastapi import Depends, FastAPI, Path, Request

from toolscout.api.deps import API, GUARDED, LOOKUP_ERRORS, EngineDep, Read, Write, errors, job_out
from toolscout.api.jobs import JobRunner
from toolscout.api.schemas import JobOut, SkillOut
from toolscout.api.skill_schemas import (
    ClassifyRequest,
    RejectRequest,
    SkillCreate,
    SkillList,
    SkillUpdate,
    SuggestionList,
    SuggestionOut,
)
from toolscout.engine import Engine
from toolscout.models import ClassifyProgress, ClassifyReport


def _jobs(request: Request) -> JobRunner:
    runner: JobRunner = request.app.state.jobs
    return runner


JobsDep = Annotated[JobRunner, Depends(_jobs)]
#: Suggestion ids are SQLite rowids: positive 64-bit integers (larger ones are a 422, not a 500).
SuggestionId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def _classify(
    engine: Engine, all_: bool, concurrency: int, progress: Callable[[ClassifyProgress], None]
) -> ClassifyReport:
    return engine.classify(all=all_, concurrency=concurrency, progress=progress)


def _skill_out(engine: Engine, skill_id: str) -> SkillOut:
    # The catalog's listing is what carries tool counts; a single skill is read back from it.
    match = next((m for m in engine.skills.list() if m.skill.id == skill_id), None)
    if match is None:
        return SkillOut.of(engine.skills.get(skill_id))
    return SkillOut.of_match(match, scored=False)


def _catalog_routes(app: FastAPI) -> None:
    @app.get(f"{API}/skills", dependencies=[Read], tags=["skills"], responses=GUARDED)
    def list_skills(engine: EngineDep, include_inactive: bool = True) -> SkillList:
        """Every skill with its tool count."""
        matches = engine.skills.list(include_inactive=include_inactive)
        return SkillList(skills=[SkillOut.of_match(m, scored=False) for m in matches])

    @app.post(
        f"{API}/skills",
        dependencies=[Write],
        tags=["skills"],
        status_code=201,
        responses=errors(401, 403, 409, 422),
    )
    def create_skill(body: SkillCreate, engine: EngineDep) -> SkillOut:
        """Create a skill (409 when the id exists)."""
        return SkillOut.of(engine.skills.create(body.to_skill()), tool_count=0)

    @app.get(
        f"{API}/skills/{{skill_id}}", dependencies=[Read], tags=["skills"], responses=LOOKUP_ERRORS
    )
    def get_skill(skill_id: str, engine: EngineDep) -> SkillOut:
        """One skill with its tool count."""
        return _skill_out(engine, skill_id)

    @app.put(
        f"{API}/skills/{{skill_id}}", dependencies=[Write], tags=["skills"], responses=LOOKUP_ERRORS
    )
    def update_skill(skill_id: str, body: SkillUpdate, engine: EngineDep) -> SkillOut:
        """Change some fields of a skill."""
        return SkillOut.of(engine.skills.update(skill_id, **body.changes()))

    @app.post(
        f"{API}/skills/{{skill_id}}/deactivate",
        dependencies=[Write],
        tags=["skills"],
        responses=LOOKUP_ERRORS,
    )
    def deactivate_skill(skill_id: str, engine: EngineDep) -> SkillOut:
        """Leave a skill out of search; its assignments stay."""
        return SkillOut.of(engine.skills.deactivate(skill_id))

    @app.post(
        f"{API}/skills/{{skill_id}}/reactivate",
        dependencies=[Write],
        tags=["skills"],
        responses=LOOKUP_ERRORS,
    )
    def reactivate_skill(skill_id: str, engine: EngineDep) -> SkillOut:
        """Bring a deactivated skill back into search."""
        return SkillOut.of(engine.skills.reactivate(skill_id))


def _suggestion_routes(app: FastAPI) -> None:
    @app.get(f"{API}/suggestions", dependencies=[Write], tags=["suggestions"], responses=GUARDED)
    def pending_suggestions(engine: EngineDep) -> SuggestionList:
        """Skills classifiers proposed, waiting for a decision (admin: they are drafts)."""
        return SuggestionList(
            suggestions=[SuggestionOut.of(s) for s in engine.suggestions.pending()]
        )

    @app.post(
        f"{API}/suggestions/{{suggestion_id}}/approve",
        dependencies=[Write],
        tags=["suggestions"],
        responses=errors(401, 403, 404, 409, 422),
    )
    def approve_suggestion(suggestion_id: SuggestionId, engine: EngineDep) -> SkillOut:
        """Create the proposed skill and re-classify its source tool."""
        return SkillOut.of(engine.suggestions.approve(suggestion_id))

    @app.post(
        f"{API}/suggestions/{{suggestion_id}}/reject",
        dependencies=[Write],
        tags=["suggestions"],
        responses=LOOKUP_ERRORS,
    )
    def reject_suggestion(
        suggestion_id: SuggestionId, body: RejectRequest, engine: EngineDep
    ) -> SuggestionOut:
        """Reject a proposal, keeping the reason."""
        return SuggestionOut.of(engine.suggestions.reject(suggestion_id, body.reason))


def _classify_routes(app: FastAPI) -> None:
    @app.post(
        f"{API}/skills/classify",
        dependencies=[Write],
        tags=["skills"],
        status_code=202,
        responses=GUARDED,
    )
    def start_classification(
        engine: EngineDep, jobs: JobsDep, body: ClassifyRequest | None = None
    ) -> JobOut:
        """Start batch classification in the background; poll the returned job."""
        req = body or ClassifyRequest()
        job = jobs.start(partial(_classify, engine, req.all, req.concurrency))
        return job_out(job)

    @app.get(
        f"{API}/skills/classify/{{job_id}}",
        dependencies=[Write],
        tags=["skills"],
        responses=LOOKUP_ERRORS,
    )
    def classification_job(job_id: str, jobs: JobsDep) -> JobOut:
        """Progress of a classification job: processed / total / errors."""
        return job_out(jobs.get(job_id))


def skill_routes(app: FastAPI) -> None:
    """Add the skill, suggestion and classification routes to ``app``."""
    _catalog_routes(app)
    _suggestion_routes(app)
    _classify_routes(app)
