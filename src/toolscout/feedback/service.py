"""FeedbackService: records what agents called after which request, and hands the search its
memory of them.

Recording is local (rows live in the index's own store, so nothing crosses between indexes),
on by default, and bounded by a retention limit (the newest ``keep`` rows stay). Off, nothing
is recorded and recorded rows no longer move rankings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from toolscout.embed.base import Embedder
from toolscout.errors import QueryError
from toolscout.feedback.memory import MemoryParams, RequestMemory
from toolscout.store.base import Store
from toolscout.store.roles import FeedbackRecord

#: What a call ended in.
OUTCOMES = ("success", "error")
MAX_QUERY_CHARS = 1000
MAX_SHOWN = 50
#: Past any retention limit: every row of a log.
ALL_ROWS = 1_000_000_000
EMBED_BATCH = 256


@dataclass(frozen=True)
class FeedbackConfig:
    """``enabled``: record and learn (the ``feedback`` setting); ``keep``: rows kept per index
    (``feedback_keep``); ``memory``: how rows move rankings."""

    enabled: bool = True
    keep: int = 10_000
    memory: MemoryParams = field(default_factory=MemoryParams)


def check_outcome(outcome: object) -> str:
    """Raises: QueryError when ``outcome`` is not ``success`` or ``error``."""
    if outcome not in OUTCOMES:
        raise QueryError("outcome", f"must be one of {', '.join(OUTCOMES)}; got {outcome!r}")
    return str(outcome)


class FeedbackService:
    """The feedback log of one engine's store and the memory built from it."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        config: FeedbackConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config or FeedbackConfig()
        self.clock = clock
        #: The search hook (None when feedback is off).
        self.memory: RequestMemory | None = (
            RequestMemory(store, embedder, self.config.memory, keep=self.config.keep, clock=clock)
            if self.config.enabled
            else None
        )

    def record(
        self,
        query: str,
        tool_id: str,
        outcome: str,
        *,
        shown: Sequence[str] = (),
        source: str = "api",
    ) -> int | None:
        """Record one call; returns its row id, or None when feedback is off. ``query`` may be
        empty (a call with no search before it): the row is kept for the audit, but cannot
        teach the ranking anything.

        Raises:
            QueryError: outcome not ``success``/``error``, no tool id, query too long.
            ToolNotFound: no indexed tool has ``tool_id``.
            StoreError, EmbedError.
        """
        outcome = check_outcome(outcome)
        text = query.strip() if isinstance(query, str) else ""
        if len(text) > MAX_QUERY_CHARS:
            raise QueryError("query", f"is {len(text)} characters; the limit is {MAX_QUERY_CHARS}")
        if not isinstance(tool_id, str) or not tool_id.strip():
            raise QueryError("tool_id", "must name the tool that was called")
        if not self.config.enabled:
            return None
        self.store.tools.get(tool_id)  # only indexed tools: raises ToolNotFound
        vector = None
        if text:
            vector = np.asarray(self.embedder.embed_query([text]), dtype=np.float32)[0]
        record = FeedbackRecord(
            id=0,
            created_at=self.clock(),
            query=text,
            tool_id=tool_id,
            outcome=outcome,
            shown=tuple(str(s) for s in list(shown)[:MAX_SHOWN]),
            source=source,
            embedder=self.embedder.name,
            vector=vector,
        )
        return self.store.feedback.add_feedback([record], keep=self.config.keep)[0]

    def carry_over(self, source: Store) -> int:
        """Append ``source``'s log to this index's (``index --rebuild``), oldest first; requests
        embedded by another model are embedded again now, so the first search after the
        rebuild does not pay for it. Returns how many rows were copied.

        Raises: StoreError, EmbedError."""
        rows = list(reversed(source.feedback.list_feedback(limit=ALL_ROWS, vectors=True)))
        stale = [i for i, r in enumerate(rows) if r.query and r.embedder != self.embedder.name]
        for start in range(0, len(stale), EMBED_BATCH):
            batch = stale[start : start + EMBED_BATCH]
            vectors = self.embedder.embed_query([rows[i].query for i in batch])
            for i, vector in zip(batch, vectors, strict=True):
                rows[i] = replace(
                    rows[i], embedder=self.embedder.name, vector=np.asarray(vector, np.float32)
                )
        if rows:
            self.store.feedback.add_feedback(rows, keep=max(self.config.keep, 1))
        return len(rows)

    def log(self, *, tool_id: str | None = None, limit: int = 100) -> list[FeedbackRecord]:
        """Recorded calls, newest first (without vectors).

        Raises: QueryError (limit outside 1..10000), StoreError."""
        if not 1 <= limit <= 10_000:
            raise QueryError("limit", "must be between 1 and 10000")
        return self.store.feedback.list_feedback(tool_id=tool_id, limit=limit)

    def clear(self, tool_id: str | None = None) -> int:
        """Delete the recorded calls (of one tool when given); returns how many.

        Raises: StoreError."""
        return self.store.feedback.clear_feedback(tool_id)

    def summary(self) -> dict[str, Any]:
        """Counts for ``info``: rows, successes, errors, tools called, and whether it is on.

        Raises: StoreError."""
        counts = self.store.feedback.feedback_summary()
        return {
            "enabled": self.config.enabled,
            "rows": counts["rows"],
            "success": counts["success"],
            "error": counts["error"],
            "tools": counts["tools"],
            "keep": self.config.keep,
        }

    def learned(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """Which tools learned from which requests: per tool, its successes and errors and
        its most recent successful requests, most successes first.

        Raises: StoreError."""
        by_tool: dict[str, dict[str, Any]] = {}
        for r in self.store.feedback.list_feedback(limit=self.config.keep):
            entry = by_tool.setdefault(
                r.tool_id, {"tool_id": r.tool_id, "success": 0, "error": 0, "requests": []}
            )
            entry[r.outcome] = entry.get(r.outcome, 0) + 1
            requests = entry["requests"]
            if r.outcome == "success" and r.query and r.query not in requests[:5]:
                requests.append(r.query)
        for entry in by_tool.values():
            entry["requests"] = entry["requests"][:5]
        ranked = sorted(by_tool.values(), key=lambda e: (-e["success"], e["error"], e["tool_id"]))
        return ranked[:limit]
