"""The nearest-request memory: tools that served requests like this one before rank higher.

Every recorded call with a known request is a labelled example on the user's own tools. At
search time the new request is compared with the recorded ones (cosine of their embeddings);
each recorded request at or above ``threshold`` votes for the tool it called: +1 for a success,
-1 for an error, times how far above the threshold it is and its age decay (halved every
``half_life_days``). A tool whose votes sum above zero gains ``boost * (1 - exp(-votes /
saturation))`` on its fused score: bounded by ``boost`` however many rows agree, and errors
only ever cancel successes, so a failing tool is never promoted. Only tools already among the
fused candidates move, so filters (servers, item types) keep holding.

The threshold is what keeps the memory's influence to the requests it resembles: a thousand
rows promoting one tool for unrelated requests leave other requests' rankings as they were
(bench/feedback_replay.py measures both, docs/BENCHMARKS.md "Learning from use").
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.errors import ToolscoutError
from toolscout.models import Scored
from toolscout.store.base import Store
from toolscout.store.roles import FeedbackRecord

log = logging.getLogger("toolscout.feedback")

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class MemoryParams:
    """How recorded calls move a ranking.

    ``threshold``, ``boost`` and ``saturation`` were chosen for the default model and the
    hand-set fusion's scores on the dev tools of metatool, gorilla_apibench and bfcl with
    ``python bench/feedback_replay.py --sweep`` (docs/BENCHMARKS.md, "Learning from use"): the
    smallest boost whose future requests gain 10 points of hit@3 (pooled) while no set's tools
    without history lose any. ``ranked_threshold`` and ``ranked_boost`` take their place when
    the learned ranker scored the run: its scores are probabilities, closer together at the top
    than the fusion's, so the same boost crossed more of them (``python
    bench/feedback_replay.py --threshold T --boost B``: no threshold and boost met both aims
    there; these keep every set's tools without history where they were).
    """

    threshold: float = 0.5
    boost: float = 0.3
    saturation: float = 1.0
    half_life_days: float = 90.0
    ranked_threshold: float = 0.6
    ranked_boost: float = 0.3

    def for_ranked(self) -> MemoryParams:
        """The parameters for a run the learned ranker scored."""
        return replace(self, threshold=self.ranked_threshold, boost=self.ranked_boost)


@dataclass(frozen=True)
class Snapshot:
    """The recorded requests as one matrix, built once per change of the feedback log."""

    key: Hashable
    vectors: NDArray[np.float32]  # (rows, dim), normalised
    tools: tuple[str, ...]  # the distinct tools called
    tool_of_row: NDArray[np.intp]  # each row's index into ``tools``
    weights: NDArray[np.float32]  # sign (success +1, error -1) times age decay


_EMPTY = Snapshot(
    None,
    np.zeros((0, 0), dtype=np.float32),
    (),
    np.zeros(0, dtype=np.intp),
    np.zeros(0, dtype=np.float32),
)


class RequestMemory:
    """Boosts fused candidates from the feedback log of one store (thread-safe)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        params: MemoryParams | None = None,
        *,
        keep: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.params = params or MemoryParams()
        self.keep = keep
        self.clock = clock
        self._lock = threading.Lock()
        self._snapshot = _EMPTY
        self._version: Hashable | None = object()

    def apply(
        self,
        query_vectors: NDArray[np.float32],
        fused: list[Scored],
        version: Hashable | None,
        *,
        ranked: bool = False,
    ) -> list[Scored]:
        """``fused`` re-ordered with the learned boosts (unchanged when nothing resembles the
        request), from the log as of the index's data ``version`` (the search's own read);
        ``ranked``: the learned ranker scored ``fused`` (:meth:`MemoryParams.for_ranked`). A
        feedback log that cannot be read is skipped with a warning: feedback never fails a
        search."""
        if not fused:
            return fused
        try:
            snap = self._current(version)
            params = self.params.for_ranked() if ranked else self.params
            gains = self.gains(snap, query_vectors, params)
        except (ToolscoutError, ValueError, TypeError, ArithmeticError) as exc:
            # A damaged feedback table (or one a newer or older schema left) must not cost the
            # search: the ranking is the one without feedback.
            log.warning("feedback: the log could not be read, ranking without it: %s", exc)
            return fused
        if not gains:
            return fused
        scored = [Scored(h.id, h.score + gains.get(h.id, 0.0)) for h in fused]
        return sorted(scored, key=lambda h: (-h.score, h.id))

    def gains(
        self,
        snap: Snapshot,
        query_vectors: NDArray[np.float32],
        params: MemoryParams | None = None,
    ) -> dict[str, float]:
        """The bounded boost of each tool the resembling requests voted for (under ``params``,
        by default the memory's own)."""
        if not snap.tools:
            return {}
        q = np.asarray(query_vectors, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        if q.shape[1] != snap.vectors.shape[1]:
            return {}
        sims = (snap.vectors @ q.T).max(axis=1)
        p = params or self.params
        close = np.nonzero(sims >= p.threshold)[0]
        if close.size == 0:
            return {}
        reach = max(1e-6, 1.0 - p.threshold)
        strength = (sims[close] - p.threshold) / reach * snap.weights[close]
        votes = np.bincount(snap.tool_of_row[close], weights=strength, minlength=len(snap.tools))
        return {
            snap.tools[i]: p.boost * (1.0 - math.exp(-float(votes[i]) / max(p.saturation, 1e-6)))
            for i in np.nonzero(votes > 0)[0]
        }

    def snapshot(self) -> Snapshot:
        """The current matrix of recorded requests (rebuilt when the log changed).

        Raises: StoreError, EmbedError."""
        return self._current(self.store.state().version)

    def _current(self, version: Hashable | None) -> Snapshot:
        with self._lock:
            if version is not None and version == self._version:
                return self._snapshot
            summary = self.store.feedback.feedback_summary()
            key = (summary["rows"], summary["last_id"])
            if key != self._snapshot.key:
                self._snapshot = self._build(key)
            self._version = version
            return self._snapshot

    def _build(self, key: Hashable) -> Snapshot:
        # One matrix row per distinct (request, tool): a request repeated a hundred times costs
        # one row of the per-search product, its weights summed.
        now = self.clock()
        half_life = max(self.params.half_life_days, 1e-6) * SECONDS_PER_DAY
        weight: dict[tuple[str, str], float] = {}
        first: dict[tuple[str, str], FeedbackRecord] = {}
        for r in self.store.feedback.list_feedback(limit=self.keep, vectors=True):
            if not r.query:
                continue
            pair = (r.query, r.tool_id)
            sign = 1.0 if r.outcome == "success" else -1.0
            age = max(0.0, now - r.created_at)
            weight[pair] = weight.get(pair, 0.0) + sign * 0.5 ** (age / half_life)
            first.setdefault(pair, r)
        if not first:
            return replace(_EMPTY, key=key)
        pairs = sorted(first)
        vectors = self._vectors([first[p] for p in pairs])
        tools = tuple(sorted({tool for _, tool in pairs}))
        index = {t: i for i, t in enumerate(tools)}
        tool_of_row = np.array([index[tool] for _, tool in pairs], dtype=np.intp)
        weights = np.array([weight[p] for p in pairs], dtype=np.float32)
        return Snapshot(key, vectors, tools, tool_of_row, weights)

    def _vectors(self, rows: Sequence[FeedbackRecord]) -> NDArray[np.float32]:
        """Each row's request vector; rows recorded under another model (an index rebuilt
        with a new embedder), or whose vector is damaged, are embedded again here, in memory
        only."""
        dim = self.embedder.dim
        out = np.zeros((len(rows), dim), dtype=np.float32)
        missing: list[int] = []
        for i, r in enumerate(rows):
            v = r.vector
            usable = v is not None and v.shape == (dim,) and bool(np.isfinite(v).all())
            if usable and r.embedder == self.embedder.name:
                out[i] = v
            else:
                missing.append(i)
        if missing:
            texts = [rows[i].query for i in missing]
            out[missing] = np.asarray(self.embedder.embed_query(texts), dtype=np.float32)
        return out
