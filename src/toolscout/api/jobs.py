"""Background classification jobs: started by a request, polled by id.

A job is a thread in the server process (never a new process) running ``Engine.classify``.
One job runs at a time: classifying the same tools twice in parallel would only waste the LLM
budget, so a start request while one runs returns the running job. Finished jobs are kept (the
last ``KEEP`` of them) so a client can read the outcome after the fact.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from toolscout.errors import ToolscoutError
from toolscout.models import ClassifyProgress, ClassifyReport

log = logging.getLogger("toolscout.api")

KEEP = 20
Status = Literal["running", "done", "failed"]
Classify = Callable[[Callable[[ClassifyProgress], None]], ClassifyReport]


class JobNotFound(ToolscoutError):
    """No job has the requested id."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no classification job with id {job_id!r}")
        self.job_id = job_id


@dataclass(frozen=True)
class Job:
    """A snapshot of one job's state."""

    id: str
    status: Status
    started_at: str
    processed: int = 0
    total: int = 0
    errors: int = 0
    failed: tuple[str, ...] = ()
    message: str | None = None
    finished_at: str | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class JobRunner:
    """Runs at most one classification at a time in a daemon thread."""

    _jobs: OrderedDict[str, Job] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: dict[str, threading.Thread] = field(default_factory=dict)

    def start(self, classify: Classify) -> Job:
        """Start ``classify`` (called with a progress callback), or return the running job."""
        with self._lock:
            running = next((j for j in self._jobs.values() if j.status == "running"), None)
            if running is not None:
                return running
            job = Job(id=uuid.uuid4().hex[:12], status="running", started_at=_now())
            self._jobs[job.id] = job
            while len(self._jobs) > KEEP:
                self._jobs.popitem(last=False)
            thread = threading.Thread(
                target=self._run, args=(job.id, classify), name=f"classify-{job.id}", daemon=True
            )
            self._threads[job.id] = thread
        thread.start()
        return job

    def _update(self, job_id: str, **changes: object) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                self._jobs[job_id] = replace(job, **changes)  # type: ignore[arg-type]

    def _run(self, job_id: str, classify: Classify) -> None:
        def progress(p: ClassifyProgress) -> None:
            self._update(job_id, processed=p.processed, total=p.total, errors=p.errors)

        changes: dict[str, object]
        try:
            report = classify(progress)
            changes = {
                "status": "done",
                "processed": report.processed,
                "total": report.total,
                "errors": report.errors,
                "failed": tuple(report.failed),
            }
        except Exception as exc:  # the thread's edge: record the failure for the poller
            log.exception("classification job %s failed", job_id)
            changes = {"status": "failed", "message": str(exc)}
        self._update(job_id, finished_at=_now(), **changes)
        # Forget the thread only after the final state is visible, so wait() never sees a
        # finished thread with a running job.
        with self._lock:
            self._threads.pop(job_id, None)

    def get(self, job_id: str) -> Job:
        """Raises: JobNotFound."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return job

    def recent(self) -> list[Job]:
        """The jobs kept (the running one and the last finished ones), newest first."""
        with self._lock:
            return list(reversed(self._jobs.values()))

    def wait(self, job_id: str, timeout: float) -> Job:
        """Block until the job's thread ends or ``timeout`` seconds pass; returns its state.

        Raises: JobNotFound.
        """
        with self._lock:
            thread = self._threads.get(job_id)
        if thread is not None:
            thread.join(timeout)
        return self.get(job_id)
