"""REST routes of semantic enrichment: server profiles, status, sync and stats.

Each route is one call on the engine's enrichment operations plus rendering. Regenerating a
profile and syncing need the admin key; status and stats are reads. A sync runs in the
background on its own :class:`JobRunner` (one sync at a time, independent of classification)
and is polled at ``/enrichment/jobs/{id}``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request

from toolscout.api.deps import API, GUARDED, LOOKUP_ERRORS, EngineDep, Read, Write, errors, job_out
from toolscout.api.jobs import JobRunner
from toolscout.api.schemas import JobOut
from toolscout.engine import Engine
from toolscout.models import ClassifyProgress, ClassifyReport

TAG = "enrichment"


def _enrich_jobs(request: Request) -> JobRunner:
    runner: JobRunner = request.app.state.enrich_jobs
    return runner


EnrichJobsDep = Annotated[JobRunner, Depends(_enrich_jobs)]


def _sync(engine: Engine, progress: Callable[[ClassifyProgress], None]) -> ClassifyReport:
    """Run ``EnrichmentService.enrich_sync`` reporting progress in the job runner's terms."""
    seen = {"processed": 0, "total": 0}

    def report(processed: int, total: int) -> None:
        seen.update(processed=processed, total=total)
        progress(ClassifyProgress(processed=processed, total=total, errors=0))

    result = engine.enrichment_service.enrich_sync(progress=report)
    failures = [str(f) for f in result.get("failures", [])]
    errors = int(result["tools"]["failed"]) + int(result["profiles"]["failed"])
    return ClassifyReport(
        processed=seen["processed"], total=seen["total"], errors=errors, failed=failures
    )


def enrich_routes(app: FastAPI) -> None:
    """Add the enrichment routes (and their job runner) to ``app``."""
    app.state.enrich_jobs = JobRunner()

    @app.post(
        f"{API}/enrichment/server/{{server}}/profile",
        dependencies=[Write],
        tags=[TAG],
        responses=LOOKUP_ERRORS,
    )
    def regenerate_profile(server: str, engine: EngineDep) -> dict[str, Any]:
        """Remake one server's profile and its tools' enrichment, then re-index them."""
        return engine.enrichment_service.enrich_server(server, force=True)

    @app.get(
        f"{API}/enrichment/server/{{server}}/status",
        dependencies=[Read],
        tags=[TAG],
        responses=GUARDED,
    )
    def enrichment_status(server: str, engine: EngineDep) -> dict[str, Any]:
        """Profile state (fresh, stale, failed, missing) and tool counts by state."""
        return engine.enrichment_service.enrichment_status(server)

    @app.post(
        f"{API}/enrichment/sync",
        dependencies=[Write],
        tags=[TAG],
        status_code=202,
        responses=errors(401, 403),
    )
    def start_sync(engine: EngineDep, jobs: EnrichJobsDep) -> JobOut:
        """Start a background sync (enrich and re-index what changed); poll the returned job."""
        return job_out(jobs.start(partial(_sync, engine)))

    @app.get(
        f"{API}/enrichment/jobs/{{job_id}}",
        dependencies=[Write],
        tags=[TAG],
        responses=LOOKUP_ERRORS,
    )
    def sync_job(job_id: str, jobs: EnrichJobsDep) -> JobOut:
        """Progress of a sync job: processed / total / errors."""
        return job_out(jobs.get(job_id))

    @app.get(f"{API}/enrichment/stats", dependencies=[Read], tags=[TAG], responses=errors(401, 403))
    def enrichment_stats(engine: EngineDep) -> dict[str, Any]:
        """Stored enrichments by state, cache hits and LLM tokens."""
        return engine.enrichment_service.enrichment_stats()
