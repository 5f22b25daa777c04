"""Embed the queries that arrive together in one model call.

On a busy server several searches wait for the model at once. A transformer run over a batch
of short queries costs far less per query than one run each (measured for MiniLM int8 on one
thread: 3.8 ms alone, 2.3 ms per query in batches of 16; docs/BENCHMARKS.md section 4).
This wrapper needs no timer and adds no wait: a caller that finds the model idle runs at once
with whatever queries are pending (at least its own); callers arriving while the model runs
queue up, and the next free caller takes all of them in one batch. (The packaged int8 graphs
run each query of a batch on its own, see ``embed.onnx``; the batch then only keeps model calls
from competing for the cores.)
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors


@dataclass
class _Job:
    texts: Sequence[str]
    result: Vectors | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class QueryBatcher(EmbedderWrapper):
    """Embedder wrapper that batches concurrent ``embed_query`` calls (thread-safe)."""

    def __init__(self, inner: Embedder, max_texts: int = 32) -> None:
        super().__init__(inner)
        self.max_texts = max(1, max_texts)
        self._pending: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._busy = False
        self.calls = 0
        self.batches = 0

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """The rows for ``texts``, possibly computed in one batch with other callers'.

        Raises: EmbedError (from the wrapped model; only the callers of the failed batch
        see it).
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        job = _Job(texts)
        with self._cond:
            self._pending.append(job)
            self.calls += 1
            while not job.done:
                if self._busy:
                    self._cond.wait()
                    continue
                batch = self._take()
                self._busy = True
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def _take(self) -> list[_Job]:
        """Pending jobs in arrival order, up to ``max_texts`` texts (always at least one)."""
        batch = [self._pending.popleft()]
        size = len(batch[0].texts)
        while self._pending and size + len(self._pending[0].texts) <= self.max_texts:
            job = self._pending.popleft()
            size += len(job.texts)
            batch.append(job)
        return batch

    def _run(self, batch: list[_Job]) -> None:
        texts = [t for job in batch for t in job.texts]
        self.batches += 1
        try:
            rows = self.inner.embed_query(texts)
        except BaseException as exc:  # handed to every waiting caller, re-raised there
            for job in batch:
                job.error, job.done = exc, True
            return
        start = 0
        for job in batch:
            job.result = rows[start : start + len(job.texts)]
            start += len(job.texts)
            job.done = True

    def stats(self) -> dict[str, int]:
        """Calls and model batches since start (calls / batches = mean batch size)."""
        with self._cond:
            return {"calls": self.calls, "batches": self.batches}
