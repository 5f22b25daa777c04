"""The one hook a learned adjustment takes into a search (``toolscout.feedback``'s memory):
applied once, to the fused candidates, before they are cut to the limit."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Scored


class Boost(Protocol):
    """Re-scores fused candidates from the request's vectors (one row per intent)."""

    def apply(
        self,
        query_vectors: NDArray[np.float32],
        fused: list[Scored],
        version: Hashable | None,
        *,
        ranked: bool = False,
    ) -> list[Scored]:
        """``fused`` re-ordered, best first, at the index's data ``version`` (read once per
        search); ``ranked``: the learned ranker scored the run (its scores are then
        probabilities, not the fusion's). Never fails a search (problems are logged)."""
        ...
