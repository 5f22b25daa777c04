"""What every REST route module shares: the path prefix, the key-policy dependencies, the
engine and gate dependencies, and the OpenAPI description of error answers. Route modules
import this one and nothing of each other."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from toolscout.api.auth import Access, KeyPolicy, bearer_token, check_access
from toolscout.api.gate import SearchGate
from toolscout.api.jobs import Job
from toolscout.api.openapi import strict_query
from toolscout.api.schemas import ErrorBody, JobOut
from toolscout.engine import Engine

API = "/api/v1"
#: The bearer scheme, declared so OpenAPI lists it and /docs has an Authorize button; the key
#: policy itself is checked by ``access`` (reads may be open on loopback).
BEARER = HTTPBearer(
    auto_error=False,
    description="`TOOLSCOUT_API_KEY` (every route) or `TOOLSCOUT_READ_KEY` (reads).",
)


ERROR_TEXTS: dict[int, str] = {
    400: "Empty or blank query (`empty_query`), or a body that is not JSON text (`http_error`).",
    401: "No or wrong bearer key (`unauthorized`).",
    403: "The key may not do this (`forbidden`).",
    404: "No such tool, skill, suggestion, server or job (`*_not_found`).",
    409: "A skill with that id exists (`skill_exists`).",
    422: "A parameter is invalid; `field` names it (`invalid_parameter`).",
    503: "Too many searches in flight (`overloaded`): retry after `Retry-After` seconds.",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error answers a route can give, with the real body."""
    return {c: {"model": ErrorBody, "description": ERROR_TEXTS[c]} for c in codes}


#: Every route behind the key policy with parameters; searches add 400 (empty query).
GUARDED = errors(401, 403, 422)
SEARCH_ERRORS = errors(400, 401, 403, 422, 503)
LOOKUP_ERRORS = errors(401, 403, 404, 422)


def access(level: Access) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """A dependency enforcing the key policy for ``level`` (async: no thread hop for it).

    Raises:
        AccessDenied: answered 401/403 by the error table.
        QueryError: a query parameter the route does not take, or one given twice (checked
            after the key, so a caller without one learns nothing of the routes).
    """

    async def dependency(
        request: Request,
        _: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
    ) -> None:
        policy: KeyPolicy = request.app.state.policy
        client = request.client.host if request.client else None
        check_access(policy, level, bearer_token(request.headers.get("authorization")), client)
        strict_query(request)

    return dependency


Read = Depends(access(Access.READ))
Write = Depends(access(Access.WRITE))


async def _engine(request: Request) -> Engine:
    # async: a plain ``def`` dependency costs every request a hop through the shared worker
    # threads, where under load it queues behind everything else before admission control.
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(_engine)]


async def _gate(request: Request) -> SearchGate:
    gate: SearchGate = request.app.state.gate
    return gate


GateDep = Annotated[SearchGate, Depends(_gate)]


def job_out(job: Job) -> JobOut:
    """A background job as the job routes answer it."""
    return JobOut(
        id=job.id,
        status=job.status,
        processed=job.processed,
        total=job.total,
        errors=job.errors,
        failed=list(job.failed),
        message=job.message,
        started_at=job.started_at,
        finished_at=job.finished_at,
    )
