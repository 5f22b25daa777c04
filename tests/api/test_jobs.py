"""Background classification jobs: one at a time, progress visible, failures recorded."""

from __future__ import annotations

import threading

from toolscout.api.jobs import JobRunner
from toolscout.errors import StoreError
from toolscout.models import ClassifyProgress, ClassifyReport


def test_a_second_start_returns_the_running_job() -> None:
    runner = JobRunner()
    release = threading.Event()
    reached = threading.Event()

    def classify(progress: object) -> ClassifyReport:
        reached.set()
        assert release.wait(timeout=30)
        return ClassifyReport(processed=3, total=3, errors=0)

    first = runner.start(classify)
    assert reached.wait(timeout=30)
    assert runner.start(classify).id == first.id
    release.set()
    done = runner.wait(first.id, timeout=30)
    assert (done.status, done.processed, done.total) == ("done", 3, 3)
    assert runner.start(classify).id != first.id  # a finished job does not block a new one


def test_progress_is_visible_while_the_job_runs() -> None:
    runner = JobRunner()
    step = threading.Event()
    resume = threading.Event()

    def classify(progress: object) -> ClassifyReport:
        assert callable(progress)
        progress(ClassifyProgress(processed=2, total=5, errors=1))
        step.set()
        assert resume.wait(timeout=30)
        return ClassifyReport(processed=5, total=5, errors=1, failed=["a::b"])

    job = runner.start(classify)
    assert step.wait(timeout=30)
    running = runner.get(job.id)
    assert (running.status, running.processed, running.total, running.errors) == (
        "running",
        2,
        5,
        1,
    )
    resume.set()
    done = runner.wait(job.id, timeout=30)
    assert done.status == "done" and done.failed == ("a::b",) and done.finished_at


def test_a_failed_job_keeps_its_error_message() -> None:
    runner = JobRunner()

    def classify(progress: object) -> ClassifyReport:
        raise StoreError("index is locked")

    job = runner.start(classify)
    failed = runner.wait(job.id, timeout=30)
    assert failed.status == "failed"
    assert failed.message == "index is locked"
