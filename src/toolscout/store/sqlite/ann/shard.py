"""One Qdrant Edge shard holding the tools' vectors, with the state that says which committed
SQLite state it mirrors.

A point per tool: id = the tool's SQLite rowid, the vector, and a payload of ``tool_id``,
``server``, ``source``, ``item_type`` and ``skill_ids``, each with a keyword payload index, so
a search's filters are answered inside the engine. ``state.json`` beside the segments records
the index's ``epoch`` (a random token the SQLite file draws when created or reset), the last
change-log ``seq`` the points include, the dimension and the graph's parameters; it is written
(atomically) only after the points it describes are flushed, so it never claims more than the
shard holds.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe
from numpy.typing import NDArray

from toolscout.errors import StoreError
from toolscout.models import Filters, Scored
from toolscout.store.edgefilter import admits_nothing, filter_values

#: Bumped when the points' layout changes; a shard of another layout is rebuilt.
LAYOUT = 1
STATE_FILE = "state.json"
_KEYWORDS = ("tool_id", "server", "source", "item_type", "skill_ids")
#: Candidates beyond the limit, so equal scores at the cut still break by id.
_MARGIN = 8


@dataclass(frozen=True)
class GraphParams:
    """HNSW parameters (docs/BENCHMARKS.md §2 has the recall they give)."""

    m: int = 16
    ef_construct: int = 200
    #: Search breadth; a search asks for at least its limit.
    ef: int = 400
    #: Below this many KB of vectors (per segment or per filtered subset) Qdrant scans exactly.
    full_scan_kb: int = 10_000
    #: Segments under this many KB stay unindexed (exact scans) until the optimizer runs.
    indexing_kb: int = 10_000


@dataclass(frozen=True)
class ShardState:
    """What ``state.json`` records."""

    layout: int
    epoch: str
    seq: int
    dim: int
    m: int
    ef_construct: int


@dataclass(frozen=True)
class Row:
    """A tool as the shard stores it."""

    rowid: int
    tool_id: str
    server: str | None
    source: str | None
    item_type: str
    skill_ids: list[str]
    vector: NDArray[np.float32]


def read_state(folder: Path) -> ShardState | None:
    """The recorded state, or None when it is missing or unreadable."""
    try:
        raw = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        return ShardState(**raw)
    except (OSError, ValueError, TypeError):
        return None


def indexing_threads() -> int:
    """Threads that build a graph: all cores but one, which stays with the searches the exact
    leg answers meanwhile. On the project's 2-core machine, the engine's own choice (0) took
    twice as long as one thread while other work ran (docs/benchmarks/scale.md)."""
    return max(1, (os.cpu_count() or 2) - 1)


def _config(dim: int, graph: GraphParams) -> qe.EdgeConfig:
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
        hnsw_config=qe.HnswIndexConfig(
            m=graph.m,
            ef_construct=graph.ef_construct,
            full_scan_threshold=graph.full_scan_kb,
            max_indexing_threads=indexing_threads(),
        ),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=graph.indexing_kb),
        # Searches run on the caller's thread budget, as the exact leg's BLAS does.
        max_search_threads=1,
        # Payloads are small (~100 bytes a tool) and every hit reads its tool id: kept cached.
        payload_memory=qe.Memory.Cached,
    )


class EdgeIndex:
    """An open shard. Not thread-safe: its owner serialises calls."""

    def __init__(self, folder: Path, shard: Any, state: ShardState, graph: GraphParams) -> None:
        self.folder = folder
        self.shard = shard
        self.state = state
        self.graph = graph

    @classmethod
    def create(cls, folder: Path, *, epoch: str, dim: int, graph: GraphParams) -> EdgeIndex:
        """A new, empty shard in ``folder`` (which must not hold one). Raises: StoreError."""
        try:
            shard = qe.EdgeShard.create(str(folder), _config(dim, graph))
            for key in _KEYWORDS:
                shard.update(
                    qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword)
                )
        except Exception as exc:  # the binding raises plain Exceptions
            raise StoreError(f"cannot create the vector shard at {folder}: {exc}") from exc
        state = ShardState(LAYOUT, epoch, 0, dim, graph.m, graph.ef_construct)
        return cls(folder, shard, state, graph)

    @classmethod
    def load(cls, folder: Path, *, epoch: str, dim: int, graph: GraphParams) -> EdgeIndex | None:
        """The shard in ``folder`` if it belongs to this index (epoch, dimension, layout and
        graph parameters match) and opens; None when it must be rebuilt.

        Raises: StoreError when another process holds it open."""
        state = read_state(folder)
        wanted = (LAYOUT, epoch, dim, graph.m, graph.ef_construct)
        if state is None or (state.layout, state.epoch, state.dim, state.m, state.ef_construct) != (
            wanted
        ):
            return None
        try:
            shard = qe.EdgeShard.load(str(folder))
        except Exception as exc:
            if "WouldBlock" in str(exc):
                raise StoreError(
                    f"the vector shard at {folder} is open in another process"
                ) from exc
            return None  # damaged: rebuilt from the rows
        return cls(folder, shard, state, graph)

    # -- writes ------------------------------------------------------------------------------
    def apply(self, rows: Sequence[Row], gone: Sequence[int]) -> None:
        """Upsert ``rows`` and delete the points ``gone``. Raises: StoreError."""
        try:
            if rows:
                points = [
                    qe.Point(
                        r.rowid,
                        # The binding reads any float sequence (its stub names lists only): no
                        # Python list of 384 floats per point.
                        r.vector,  # type: ignore[arg-type]
                        {
                            "tool_id": r.tool_id,
                            **({"server": r.server} if r.server is not None else {}),
                            **({"source": r.source} if r.source is not None else {}),
                            "item_type": r.item_type,
                            "skill_ids": r.skill_ids,
                        },
                    )
                    for r in rows
                ]
                self.shard.update(qe.UpdateOperation.upsert_points(points))
            if gone:
                self.shard.update(qe.UpdateOperation.delete_points(list(gone)))
        except Exception as exc:
            raise StoreError(f"cannot write the vector shard at {self.folder}: {exc}") from exc

    def commit(self, seq: int) -> None:
        """Flush the points, then record that they include change ``seq``. Raises: StoreError."""
        try:
            self.shard.flush()
        except Exception as exc:
            raise StoreError(f"cannot flush the vector shard at {self.folder}: {exc}") from exc
        state = ShardState(**{**asdict(self.state), "seq": seq})
        tmp = self.folder / (STATE_FILE + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(asdict(state), fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.folder / STATE_FILE)
        except OSError as exc:
            raise StoreError(f"cannot record the vector shard's state: {exc}") from exc
        self.state = state

    def optimize(self) -> None:
        """Build the HNSW graph of every segment large enough (blocks). Raises: StoreError."""
        try:
            self.shard.optimize()
        except Exception as exc:
            raise StoreError(f"cannot index the vector shard at {self.folder}: {exc}") from exc

    def counts(self) -> tuple[int, int]:
        """(points, points in an HNSW graph). Raises: StoreError."""
        try:
            info = self.shard.info()
        except Exception as exc:
            raise StoreError(f"cannot read the vector shard at {self.folder}: {exc}") from exc
        return int(info.points_count), int(info.indexed_vectors_count)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a damaged shard: nothing left to save
            self.shard.close()

    # -- reads -------------------------------------------------------------------------------
    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None,
        ids_of: Callable[[list[int]], Mapping[int, str]],
    ) -> list[list[Scored]]:
        """Best first, ties by id. ``ids_of`` names the points found (rowid -> tool id; a
        rowid it lacks, a tool deleted since the shard caught up, is left out): reading
        payloads would cost about as much as the graph search itself (docs/benchmarks/scale.md).

        Raises: StoreError."""
        flt = shard_filter(filters)
        if flt is False or limit <= 0:
            return [[] for _ in vectors]
        params = qe.SearchParams(hnsw_ef=max(self.graph.ef, limit + _MARGIN))
        requests = [
            qe.QueryRequest(
                query=qe.Query.Nearest(np.asarray(v, dtype=np.float32).tolist()),
                limit=limit + _MARGIN,
                filter=flt,
                params=params,
                with_payload=False,
            )
            for v in vectors
        ]
        try:
            found = [
                [(float(p.score), int(p.id)) for p in points]
                for points in self.shard.query_batch(qe.QueryBatchRequest(requests))
            ]
        except Exception as exc:
            raise StoreError(f"vector search on {self.folder} failed: {exc}") from exc
        names = ids_of(sorted({rowid for points in found for _, rowid in points}))
        out: list[list[Scored]] = []
        for points in found:
            ranked = sorted(
                ((score, names[rowid]) for score, rowid in points if rowid in names),
                key=lambda pair: (-pair[0], pair[1]),
            )
            out.append([Scored(i, s) for s, i in ranked[:limit]])
        return out


def shard_filter(filters: Filters | None) -> Any:
    """A Qdrant filter for ``filters``: None when nothing is restricted, False when a filter
    admits nothing (an empty list)."""
    if admits_nothing(filters):
        return False
    must: list[Any] = [
        qe.FieldCondition(k, match=qe.MatchAny(v)) for k, v in filter_values(filters)
    ]
    return qe.Filter(must=must) if must else None
