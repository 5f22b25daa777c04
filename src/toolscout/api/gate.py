"""SearchGate: how a server runs searches. Every server door (REST, MCP over HTTP) goes through
one, so both shed load the same way.

* At most ``slots`` searches run at once. With the exact query encoder, searches in flight share
  the model: their query embeddings run as one batch
  (:class:`~toolscout.embed.batching.QueryBatcher`), which costs less per query than one run
  each, so four per core run at once. The default int8 encoder embeds one query per call (no
  batch to gain), and more searches in flight than cores only thrash on the GIL and the store
  lock: one per core (measured: docs/BENCHMARKS.md).
* At most ``queue`` wait for a slot, each for ``wait_s`` seconds from its arrival (its deadline).
  A search that finds the queue full, or that cannot expect a slot within half its deadline
  (the searches ahead of it times the recent time a search holds its slot, over the slots), raises
  :class:`~toolscout.errors.Overloaded` at once (REST answers 503 with ``Retry-After``, MCP a
  tool error saying when to retry): an overloaded server sheds load instead of holding
  requests for seconds only to refuse them at their deadline. One admitted that still misses
  its deadline (the estimate is an average) is refused then.
* Repeats are answered from the result cache without taking a slot.
* Servers ask :meth:`SearchGate.refusal` before they read a search request, so a request the
  queue has no room for is refused before its body is read or parsed: under overload each
  refusal costs the event loop little, and the admitted searches keep their pace.

Admitted searches run on threads of the gate's own (bounded) pools, never queued behind
anyio's shared worker threads, where under load they would wait unseen before admission.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from toolscout.engine import Engine
from toolscout.errors import Overloaded
from toolscout.models import SearchRequest, SearchResult

T = TypeVar("T")
CORES = max(1, os.cpu_count() or 1)
#: Defaults of :class:`~toolscout.config.Settings` ``search_queue`` / ``search_queue_timeout``.
DEFAULT_QUEUE = 64
DEFAULT_WAIT_S = 5.0
#: A search waits for a slot only when it can expect one within this share of its deadline:
#: the estimate is an average, and the answer (the search included) should come within the
#: deadline. A longer queue would not answer more searches, only later.
ADMIT_SHARE = 0.5
#: Weight of the newest search in the moving average of the time a search holds its slot.
SERVICE_WEIGHT = 0.2


def slots_for(settings: Any) -> int:
    """Searches at once per process for :class:`~toolscout.config.Settings`:
    ``search_threads`` when set, else one per core for the local int8 encoder and four per
    core otherwise."""
    if settings.search_threads:
        return int(settings.search_threads)
    one_query_per_call = settings.query_encoder == "int8" and settings.embed_model.startswith(
        "local:"
    )
    return CORES if one_query_per_call else 4 * CORES


class SearchGate:
    """Slots, a bounded queue with a deadline, and the cache fast path, over one engine (async;
    the engine runs in threads). Limiters are created on first use: they belong to the event
    loop that runs the server."""

    def __init__(
        self,
        engine: Engine,
        slots: int,
        *,
        queue: int = DEFAULT_QUEUE,
        wait_s: float = DEFAULT_WAIT_S,
        retry_after: int = 1,
    ) -> None:
        self.engine = engine
        self.slots = max(1, slots)
        self.queue = max(0, queue)
        self.wait_s = wait_s
        self.retry_after = retry_after
        #: Searches refused so far (queue full or deadline passed).
        self.shed = 0
        self._waiting = 0
        #: Moving average of the seconds a search holds its slot (None until one has run).
        self._service_s: float | None = None
        self._limits: tuple[anyio.CapacityLimiter, ...] | None = None

    @classmethod
    def for_settings(cls, engine: Engine, settings: Any) -> SearchGate:
        """A gate sized by ``search_threads``, ``search_queue`` and ``search_queue_timeout``."""
        return cls(
            engine,
            slots_for(settings),
            queue=settings.search_queue,
            wait_s=settings.search_queue_timeout,
        )

    @property
    def waiting(self) -> int:
        """Searches admitted but not yet running (cache lookup or waiting for a slot)."""
        return self._waiting

    def _limiters(self) -> tuple[anyio.CapacityLimiter, ...]:
        """(slots, threads for admitted calls, threads for cache lookups)."""
        if self._limits is None:
            self._limits = (
                anyio.CapacityLimiter(self.slots),
                anyio.CapacityLimiter(self.slots),
                anyio.CapacityLimiter(max(4, self.slots)),
            )
        return self._limits

    def refusal(self) -> Overloaded | None:
        """What a search arriving now gets when every slot is busy and the queue is full
        (counted as shed), else None. Servers ask before reading a search request, so excess
        load is refused before it costs a parse (:class:`~toolscout.api.guard.Guard`)."""
        slots = self._limiters()[0]
        if slots.available_tokens > 0:
            return None
        if self._waiting >= self.queue:
            self.shed += 1
            return Overloaded(
                f"all {self.slots} search slot(s) busy and {self.queue} search(es) waiting; "
                f"retry in {self.retry_after} s",
                retry_after=self.retry_after,
            )
        if self.expected_wait() > ADMIT_SHARE * self.wait_s:
            self.shed += 1
            return Overloaded(
                f"all {self.slots} search slot(s) busy and the {self._waiting} search(es) "
                f"waiting would keep this one too close to its {self.wait_s:g} s deadline; "
                f"retry in {self.retry_after} s",
                retry_after=self.retry_after,
            )
        return None

    def expected_wait(self) -> float:
        """Seconds a search arriving now would wait for a slot, from the searches waiting and
        the recent time a search holds its slot (0 until one has run)."""
        if self._service_s is None:
            return 0.0
        return (self._waiting + 1) / self.slots * self._service_s

    def observe(self, seconds: float) -> None:
        """Record how long a search held its slot (a moving average over the recent ones)."""
        previous = self._service_s
        self._service_s = (
            seconds if previous is None else previous + SERVICE_WEIGHT * (seconds - previous)
        )

    def shed_on(
        self, routes: Collection[tuple[str, str]]
    ) -> Callable[[str, str], Overloaded | None]:
        """``shed(method, path)`` for :class:`~toolscout.api.guard.GuardConfig`: the refusal a
        request to one of ``routes`` gets now, else None (other routes are never shed)."""
        gated = frozenset(routes)

        def shed(method: str, path: str) -> Overloaded | None:
            return self.refusal() if (method, path) in gated else None

        return shed

    def _admit(self) -> None:
        refused = self.refusal()
        if refused is not None:
            raise refused

    def _late(self) -> Overloaded:
        self.shed += 1
        return Overloaded(
            f"no search slot came free within {self.wait_s:g} s; retry in {self.retry_after} s",
            retry_after=self.retry_after,
        )

    async def find(self, request: SearchRequest) -> SearchResult:
        """``Engine.find``: from the result cache when it holds the answer (the lookup reads the
        store's data version, so it runs off the event loop), else in a slot.

        Raises:
            Overloaded: the queue is full, or no slot came free before the deadline.
            QueryError: naming the invalid field; StoreError, EmbedError.
        """
        _, _, lookups = self._limiters()

        async def cached() -> SearchResult | None:
            return await anyio.to_thread.run_sync(self.engine.cached_find, request, limiter=lookups)

        return await self._admitted(partial(self.engine.find, request), first=cached)

    async def run(self, fn: Callable[[], T]) -> T:
        """Run one other search call (a single stage) in a slot.

        Raises:
            Overloaded: the queue is full, or no slot came free before the deadline.
        """
        return await self._admitted(fn)

    async def _admitted(
        self, fn: Callable[[], T], first: Callable[[], Awaitable[T | None]] | None = None
    ) -> T:
        """Admit, optionally try ``first`` (an answer without a slot), then run ``fn`` in a slot."""
        self._admit()
        slots, threads, _ = self._limiters()
        self._waiting += 1
        try:
            with anyio.move_on_after(self.wait_s) as waited:
                if first is not None:
                    answer = await first()
                    if answer is not None:
                        return answer
                await slots.acquire()
            if waited.cancelled_caught:
                raise self._late()
        finally:
            self._waiting -= 1
        began = anyio.current_time()
        try:
            return await anyio.to_thread.run_sync(fn, limiter=threads)
        finally:
            slots.release()
            self.observe(anyio.current_time() - began)
