"""The rows a hybrid search hands the vector leg (search/hybrid.py): a request's intents' rows
and, when the learned ranker reads it, the whole request's row, and the runs they come back as.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Scored

#: A request's intents' rows, and the whole request's row when it was made apart from them
#: (several intents and the learned ranker on; else None).
QueryRows = tuple[NDArray[np.float32], NDArray[np.float32] | None]


def intents_mean(rows: NDArray[np.float32], intents: Sequence[str]) -> NDArray[np.float32]:
    """The intents' rows averaged by their texts' lengths, normalised: one row (the whole
    request's, with ``SearchConfig.whole_request = "intents_mean"``; no embedding)."""
    weights = np.array([len(t) for t in intents], dtype=np.float32)[: rows.shape[0], None]
    mean = (rows * weights).sum(axis=0)
    out: NDArray[np.float32] = (mean / max(float(np.linalg.norm(mean)), 1e-12))[None, :]
    return out.astype(np.float32)


def stacked(rows: QueryRows) -> NDArray[np.float32]:
    """The intents' rows, then the whole request's when it has one of its own."""
    return rows[0] if rows[1] is None else np.vstack([rows[0], rows[1]])


def whole_run_of(runs: list[list[Scored]], apart: list[list[Scored]]) -> list[Scored]:
    """The whole request's run: the one searched apart, else a single intent's run."""
    if apart:
        return apart[0]
    return runs[0] if len(runs) == 1 else []
