"""REST routes of learning from use: record a call's outcome, read and clear the log.

Every route needs the admin key: a recorded row changes rankings, and the log holds users'
requests. Each route is one call on ``engine.feedback`` plus rendering.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query
from pydantic import BaseModel, Field

from toolscout.api.deps import API, GUARDED, LOOKUP_ERRORS, EngineDep, Write, errors
from toolscout.store.roles import FeedbackRecord

TAG = "feedback"


class FeedbackIn(BaseModel):
    """One call an agent made after a search, and how it ended."""

    model_config = {"extra": "forbid"}

    query: str = Field(max_length=1000, description="The request the tool was searched for.")
    tool_id: str = Field(min_length=1, max_length=500, description="The tool that was called.")
    outcome: Literal["success", "error"] = Field(description="How the call ended.")
    shown: list[str] = Field(
        default_factory=list, max_length=50, description="The tool ids the search listed."
    )


class FeedbackRecorded(BaseModel):
    """The new row's id (null when feedback is turned off: nothing was recorded)."""

    id: int | None
    recorded: bool


class FeedbackOut(BaseModel):
    """One recorded call."""

    id: int
    created_at: float = Field(description="Seconds since the epoch.")
    query: str
    tool_id: str
    outcome: str
    shown: list[str]
    source: str

    @classmethod
    def of(cls, r: FeedbackRecord) -> FeedbackOut:
        return cls(
            id=r.id,
            created_at=r.created_at,
            query=r.query,
            tool_id=r.tool_id,
            outcome=r.outcome,
            shown=list(r.shown),
            source=r.source,
        )


def feedback_routes(app: FastAPI) -> None:
    """Add the feedback routes to ``app``."""

    @app.post(
        f"{API}/feedback",
        dependencies=[Write],
        tags=[TAG],
        status_code=201,
        responses=errors(400, 401, 403, 404, 422),
    )
    def record_feedback(body: FeedbackIn, engine: EngineDep) -> FeedbackRecorded:
        """Record that ``tool_id`` was called for ``query`` and ended in ``outcome``; later
        searches like ``query`` rank a tool that succeeded higher (errors never promote)."""
        row = engine.feedback.record(
            body.query, body.tool_id, body.outcome, shown=body.shown, source="api"
        )
        return FeedbackRecorded(id=row, recorded=row is not None)

    @app.get(f"{API}/feedback", dependencies=[Write], tags=[TAG], responses=LOOKUP_ERRORS)
    def list_feedback(
        engine: EngineDep,
        tool_id: Annotated[str | None, Query(description="Only this tool's calls.")] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[FeedbackOut]:
        """Recorded calls, newest first."""
        return [FeedbackOut.of(r) for r in engine.feedback.log(tool_id=tool_id, limit=limit)]

    @app.get(
        f"{API}/feedback/learned", dependencies=[Write], tags=[TAG], responses=errors(401, 403)
    )
    def learned(engine: EngineDep) -> list[dict[str, Any]]:
        """Which tools learned from which requests: successes, errors, recent requests."""
        return engine.feedback.learned()

    @app.delete(f"{API}/feedback", dependencies=[Write], tags=[TAG], responses=GUARDED)
    def clear_feedback(
        engine: EngineDep,
        tool_id: Annotated[str | None, Query(description="Only this tool's calls.")] = None,
    ) -> dict[str, int]:
        """Delete the recorded calls of this index (of one tool when given)."""
        return {"deleted": engine.feedback.clear(tool_id)}
