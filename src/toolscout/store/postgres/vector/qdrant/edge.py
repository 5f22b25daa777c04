"""Qdrant Edge (``qdrant-edge-py``) as the Qdrant leg's engine for a local folder: one shard
folder per collection, with the HNSW graph, int8 quantisation and keyword payload indexes a
server builds (see ``collections.py``)."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import StoreError
from toolscout.models import Filters
from toolscout.store.edgefilter import filter_values
from toolscout.store.postgres.vector.qdrant.collections import (
    LAYOUT_FILE,
    PAGE,
    PAYLOAD_INDEXES,
    VECTOR,
    PointData,
)
from toolscout.store.postgres.vector.qdrant.target import QdrantTarget


class EdgeCollections:
    """Qdrant Edge shards, one folder per collection. Calls are serialised by one lock."""

    def __init__(self, target: QdrantTarget) -> None:
        import qdrant_edge as qe

        assert target.path is not None
        self.qe = qe
        self.target = target
        self.root = target.path
        self._shards: dict[str, Any] = {}
        self._dirty: set[str] = set()
        self._lock = threading.RLock()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"Qdrant folder {self.root} cannot be made: {exc}") from exc

    def _folder(self, name: str) -> Path:
        return self.root / name

    def _shard(self, name: str) -> Any | None:
        shard = self._shards.get(name)
        if shard is None and (self._folder(name) / LAYOUT_FILE).exists():
            try:
                shard = self.qe.EdgeShard.load(str(self._folder(name)))
            except Exception as exc:  # the binding raises plain Exceptions
                if "WouldBlock" in str(exc):
                    raise StoreError(
                        f"the Qdrant folder {self._folder(name)} is open in another process"
                    ) from exc
                return None  # damaged: dropped and rebuilt from PostgreSQL
            self._shards[name] = shard
        return shard

    def layout(self, name: str) -> tuple[Any, int | None] | None:
        with self._lock:
            try:
                raw = json.loads((self._folder(name) / LAYOUT_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if self._shard(name) is None:
                return None
            return raw.get("schema"), raw.get("dim")

    def _config(self, dim: int, tools: bool) -> Any:
        qe, t = self.qe, self.target
        quant = (
            qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, always_ram=True)
            if tools and t.quantization == "int8"
            else None
        )
        return qe.EdgeConfig(
            vectors={VECTOR: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            hnsw_config=qe.HnswIndexConfig(
                m=t.hnsw_m,
                ef_construct=t.hnsw_ef_construct,
                # Qdrant's default: below 10 MB of vectors (a segment or a filtered subset) a
                # search scans exactly, as a server would.
                full_scan_threshold=10_000,
                max_indexing_threads=0,
            ),
            quantization_config=quant,
            max_search_threads=1,
            payload_memory=qe.Memory.Cached,
        )

    def create(self, name: str, dim: int, *, schema: int, tools: bool) -> None:
        qe = self.qe
        with self._lock:
            self.drop(name)
            folder = self._folder(name)
            try:
                folder.mkdir(parents=True)
                shard = qe.EdgeShard.create(str(folder), self._config(dim, tools))
                if tools:
                    for key in PAYLOAD_INDEXES:
                        shard.update(
                            qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword)
                        )
                shard.flush()
                # Written last: a folder without it is an unfinished collection, made again.
                (folder / LAYOUT_FILE).write_text(
                    json.dumps({"schema": schema, "dim": dim}), encoding="utf-8"
                )
            except Exception as exc:  # the binding raises plain Exceptions
                raise StoreError(f"cannot create the Qdrant collection {folder}: {exc}") from exc
            self._shards[name] = shard

    def configure(self, name: str) -> None:
        """Graph and quantisation are fixed when a shard is made; ``index --rebuild`` remakes
        it with new settings."""

    def drop(self, name: str) -> None:
        with self._lock:
            shard = self._shards.pop(name, None)
            if shard is not None:
                with contextlib.suppress(Exception):  # a damaged shard: nothing left to save
                    shard.close()
            self._dirty.discard(name)
            try:
                shutil.rmtree(self._folder(name), ignore_errors=False)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot remove {self._folder(name)}: {exc}") from exc

    def _need(self, name: str) -> Any:
        shard = self._shard(name)
        if shard is None:
            raise StoreError(f"the Qdrant collection {self._folder(name)} does not exist")
        return shard

    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        qe = self.qe
        with self._lock:
            shard = self._need(name)
            try:
                shard.update(
                    qe.UpdateOperation.upsert_points(
                        [qe.Point(p.id, {VECTOR: p.vector}, p.payload) for p in points]
                    )
                )
            except Exception as exc:
                raise StoreError(f"Qdrant write to {self._folder(name)} failed: {exc}") from exc
            self._dirty.add(name)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        with self._lock:
            shard = self._need(name)
            try:
                shard.update(self.qe.UpdateOperation.delete_points(list(ids)))
            except Exception as exc:
                raise StoreError(f"Qdrant delete in {self._folder(name)} failed: {exc}") from exc
            self._dirty.add(name)

    def scroll(
        self, name: str, fields: Sequence[str], *, vectors: bool = False
    ) -> Iterator[tuple[str, dict[str, Any], list[float] | None]]:
        qe = self.qe
        offset: Any = None
        while True:
            with self._lock:
                shard = self._shard(name)
                if shard is None:
                    return
                try:
                    records, offset = shard.scroll(
                        qe.ScrollRequest(
                            offset=offset,
                            limit=PAGE,
                            with_payload=list(fields),
                            with_vector=[VECTOR] if vectors else False,
                        )
                    )
                except Exception as exc:
                    raise StoreError(f"Qdrant read of {self._folder(name)} failed: {exc}") from exc
            for r in records:
                vec = r.vector.get(VECTOR) if isinstance(r.vector, dict) else None
                vec = vec if isinstance(vec, list) else None
                yield str(r.id), dict(r.payload or {}), vec
            if offset is None:
                return

    def query(
        self, name: str, queries: NDArray[np.float32], *, limit: int, filters: Filters | None
    ) -> list[list[tuple[float, str]]]:
        qe = self.qe
        where = _edge_filter(qe, filters)
        params = qe.SearchParams(
            hnsw_ef=max(self.target.ef, limit),
            quantization=qe.QuantizationSearchParams(rescore=True, oversampling=2.0),
        )
        requests = [
            qe.QueryRequest(
                query=qe.Query.Nearest(q.tolist(), using=VECTOR),
                limit=limit,
                filter=where,
                params=params,
                with_payload=["tool_id"],
            )
            for q in queries
        ]
        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return [[] for _ in queries]
            try:
                found = shard.query_batch(qe.QueryBatchRequest(requests))
            except Exception as exc:
                raise StoreError(f"Qdrant search in {self._folder(name)} failed: {exc}") from exc
        return [[(float(p.score), str((p.payload or {})["tool_id"])) for p in pts] for pts in found]

    def settle(self) -> None:
        """Flush what was written, then build the graph of segments grown large enough."""
        with self._lock:
            for name in sorted(self._dirty):
                shard = self._shards.get(name)
                if shard is None:
                    continue
                try:
                    shard.flush()
                    shard.optimize()
                except Exception as exc:
                    raise StoreError(f"Qdrant flush of {self._folder(name)} failed: {exc}") from exc
            self._dirty.clear()

    def close(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                with contextlib.suppress(Exception):  # closing what is already broken
                    shard.close()
            self._shards.clear()


def _edge_filter(qe: Any, filters: Filters | None) -> Any:
    must = [
        qe.FieldCondition(key, match=qe.MatchAny(list(values)))
        for key, values in filter_values(filters)
    ]
    return qe.Filter(must=must) if must else None
