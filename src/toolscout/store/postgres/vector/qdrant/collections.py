"""The two engines behind the Qdrant vector leg, one small interface (:class:`Collections`).

- :class:`EdgeCollections`: Qdrant Edge (``qdrant-edge-py``), Qdrant's own engine in process:
  one shard folder per collection under the ``qdrant+local://`` folder, with the HNSW graph,
  int8 quantisation and keyword payload indexes a server builds. The default for a local folder.
- :class:`ClientCollections`: ``qdrant-client`` against a Qdrant server (``qdrant://``,
  ``qdrant's://``), or against its in-process reference implementation for a local folder with
  ``?engine=client`` (exact search, no graph: useful to exercise the server's code path
  without a server).

The leg (``leg.py``) speaks only this interface, so both engines share its write path, its
reconciliation and its tie-breaking. Point ids are UUID strings; payloads are flat JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Filters
from toolscout.store.postgres.vector.qdrant.target import QdrantTarget

VECTOR = "dense"
#: The layout a collection records (schema version and dimension), read back by :meth:`layout`.
LAYOUT_FILE = "toolscout.json"
PAYLOAD_INDEXES = ("skill_ids", "server", "source", "item_type", "tool_id")
#: Points read per page when a collection is scrolled.
PAGE = 1024


@dataclass(frozen=True)
class PointData:
    """One point: a UUID string id, its vector and payload."""

    id: str
    vector: list[float]
    payload: dict[str, Any]


class Collections(Protocol):
    """Named collections of dense ``VECTOR`` points with keyword payload indexes."""

    def layout(self, name: str) -> tuple[Any, int | None] | None:
        """(schema, dimension) a collection records, or None when there is none."""
        ...

    def create(self, name: str, dim: int, *, schema: int, tools: bool) -> None:
        """A new collection (``tools``: with the target's graph, quantisation and indexes)."""
        ...

    def configure(self, name: str) -> None:
        """Apply the target's graph and quantisation settings to an existing collection."""
        ...

    def drop(self, name: str) -> None: ...

    def upsert(self, name: str, points: Sequence[PointData]) -> None: ...

    def delete(self, name: str, ids: Sequence[str]) -> None: ...

    def scroll(
        self, name: str, fields: Sequence[str], *, vectors: bool = False
    ) -> Iterator[tuple[str, dict[str, Any], list[float] | None]]:
        """Every point: (id, the payload's ``fields``, the vector when asked)."""
        ...

    def query(
        self, name: str, queries: NDArray[np.float32], *, limit: int, filters: Filters | None
    ) -> list[list[tuple[float, str]]]:
        """(score, ``tool_id``) of the ``limit`` nearest points per query row."""
        ...

    def settle(self) -> None:
        """After a write: make it durable and searchable at full speed."""
        ...

    def close(self) -> None: ...


def open_collections(target: QdrantTarget) -> Collections:
    """The engine ``target`` names. Raises: ConfigError (missing package), StoreError."""
    if target.path is not None and target.engine == "edge":
        from toolscout.store.postgres.vector.qdrant.edge import EdgeCollections

        return EdgeCollections(target)
    from toolscout.store.postgres.vector.qdrant.client import ClientCollections

    return ClientCollections(target)
