"""SearchGate: how a server runs searches - at most ``slots`` at once, repeats answered from
the result cache without queueing. Every server door (REST, MCP over HTTP) goes through one.

With the exact query encoder, searches in flight share the model: their query embeddings run
as one batch (:class:`~toolscout.embed.batching.QueryBatcher`), which costs less per query
than one run each, so four per core run at once. The default int8 encoder embeds one query per
call (no batch to gain), and more searches in flight than cores only thrash on the GIL and the
store lock: one per core (measured: docs/BENCHMARKS.md). The rest wait on the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from toolscout.engine import Engine
from toolscout.models import SearchRequest, SearchResult

T = TypeVar("T")
CORES = max(1, os.cpu_count() or 1)


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
    """Slots plus the cache fast path, over one engine (async; the engine runs in threads)."""

    def __init__(self, engine: Engine, slots: int) -> None:
        self.engine = engine
        self.slots = max(1, slots)
        self._limiter: anyio.CapacityLimiter | None = None

    def _slots(self) -> anyio.CapacityLimiter:
        # Created on first use: a limiter belongs to the running event loop.
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        return self._limiter

    async def find(self, request: SearchRequest) -> SearchResult:
        """``Engine.find``: from the result cache at once when it holds the answer (the lookup
        reads the store's data version, so it runs off the event loop), else in a slot.

        Raises:
            QueryError: naming the invalid field; StoreError, EmbedError.
        """
        result = await anyio.to_thread.run_sync(self.engine.cached_find, request)
        if result is None:
            result = await self.run(partial(self.engine.find, request))
        return result

    async def run(self, fn: Callable[[], T]) -> T:
        """Run one other search call (a single stage) in a slot."""
        return await anyio.to_thread.run_sync(fn, limiter=self._slots())
