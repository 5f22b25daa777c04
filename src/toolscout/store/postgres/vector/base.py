"""The vector leg of the PostgreSQL store, as one protocol.

The store's rows are the source of truth for vectors. A leg answers ``nearest`` either from
those rows (:class:`~toolscout.store.postgres.vector.pgvector.PgVectorLeg`) or from an engine
beside PostgreSQL that follows its commits
(:class:`~toolscout.store.postgres.vector.qdrant.QdrantVectorLeg`). The store calls the
follow-up hooks after every commit without asking which leg it holds; a leg whose vectors are
the rows implements them as no-ops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Filters, Scored
from toolscout.store.base import IndexState
from toolscout.store.postgres.conn import Conn


class VectorLeg(Protocol):
    """Nearest-neighbour search over the store's tools, and the upkeep that keeps it current."""

    #: The index dimension (None before an embedder is bound).
    dim: int | None
    #: True inside ``bulk()``: writes leave index building to the end.
    in_bulk: bool

    @property
    def elsewhere(self) -> str | None:
        """Where the vectors are searched outside PostgreSQL (for messages); None when the
        rows themselves are searched."""
        ...

    def bound_dim(self) -> int | None:
        """The dimension, re-read when unknown (another process may have bound the index)."""
        ...

    def ensure_index(self, conn: Conn) -> None:
        """Build what a large table needs, in the caller's write transaction."""
        ...

    def bulk(self) -> AbstractContextManager[None]:
        """Defer index upkeep over many writes. Raises: StoreError."""
        ...

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Best first, ties by id. Raises: StoreError."""
        ...

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        state: IndexState | None = None,
    ) -> list[list[Scored]]:
        """``nearest`` for each row; ``state``: what the search read of the index (a leg may
        take the tool count from it instead of asking). Raises: StoreError."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors by id. Raises: StoreError."""
        ...

    # -- follow-up after PostgreSQL commits ------------------------------------------------------
    def bind(self, dim: int) -> None:
        """The index's dimension is known. Raises: StoreError."""
        ...

    def written(self, tool_ids: Sequence[str]) -> None:
        """These tools were written or deleted. Raises: StoreError."""
        ...

    def skills_changed(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        """Skill centroids changed (None: removed). Raises: StoreError."""
        ...

    def skill_vectors(self) -> dict[str, NDArray[np.float32]] | None:
        """The centroids stage 1 searches when the leg holds its own; None: read the rows."""
        ...

    def reset(self) -> None:
        """Every tool and the identity were dropped. Raises: StoreError."""
        ...

    def close(self) -> None: ...
