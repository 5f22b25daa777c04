"""qdrant-client as the Qdrant leg's engine: a Qdrant server, or the client's local mode for a
local folder with ``?engine=client`` (see ``collections.py``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError, StoreError
from toolscout.models import Filters
from toolscout.store.edgefilter import filter_values
from toolscout.store.postgres.vector.qdrant.collections import (
    PAGE,
    PAYLOAD_INDEXES,
    VECTOR,
    PointData,
)
from toolscout.store.postgres.vector.qdrant.target import QdrantTarget


class ClientCollections:
    """A Qdrant server through qdrant-client, or its local mode (``?engine=client``)."""

    def __init__(self, target: QdrantTarget) -> None:
        try:
            from qdrant_client import QdrantClient
            from qdrant_client import models as qm
        except ImportError:
            raise ConfigError(
                "vectors: a Qdrant server (or engine=client) needs qdrant-client; "
                "install it with `pip install 'toolscout[qdrant]'`"
            ) from None
        self.qm = qm
        self.target = target
        try:
            if target.path is not None:
                target.path.mkdir(parents=True, exist_ok=True)
                self.client = QdrantClient(path=str(target.path))
            else:
                self.client = QdrantClient(
                    host=target.host,
                    port=target.port,
                    https=target.https,
                    api_key=target.api_key,
                    timeout=target.timeout,
                )
        except Exception as exc:  # the client raises several kinds; all mean "not reachable"
            raise StoreError(f"Qdrant at {target.display} could not be opened: {exc}") from exc

    def layout(self, name: str) -> tuple[Any, int | None] | None:
        with _quiet():
            if not self.client.collection_exists(name):
                return None
            config = self.client.get_collection(name).config
        vectors = config.params.vectors
        size = vectors[VECTOR].size if isinstance(vectors, dict) and VECTOR in vectors else None
        return (config.metadata or {}).get("toolscout_schema"), size

    def _graph(self) -> tuple[Any, Any]:
        qm, t = self.qm, self.target
        hnsw = qm.HnswConfigDiff(m=t.hnsw_m, ef_construct=t.hnsw_ef_construct)
        quant = (
            qm.ScalarQuantization(
                scalar=qm.ScalarQuantizationConfig(type=qm.ScalarType.INT8, always_ram=True)
            )
            if t.quantization == "int8"
            else None
        )
        return hnsw, quant

    def create(self, name: str, dim: int, *, schema: int, tools: bool) -> None:
        qm = self.qm
        hnsw, quant = self._graph()
        with _quiet():
            if self.client.collection_exists(name):
                self.client.delete_collection(name)
            self.client.create_collection(
                name,
                vectors_config={
                    VECTOR: qm.VectorParams(
                        size=dim, distance=qm.Distance.COSINE, on_disk=self.target.on_disk
                    )
                },
                hnsw_config=hnsw,
                quantization_config=quant if tools else None,
                metadata={"toolscout_schema": schema},
            )
            if tools:
                for field in PAYLOAD_INDEXES:
                    self.client.create_payload_index(
                        name, field, field_schema=qm.PayloadSchemaType.KEYWORD
                    )

    def configure(self, name: str) -> None:
        hnsw, quant = self._graph()
        with _quiet():
            self.client.update_collection(name, hnsw_config=hnsw, quantization_config=quant)

    def drop(self, name: str) -> None:
        if self.client.collection_exists(name):
            self.client.delete_collection(name)

    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        qm = self.qm
        structs = [
            qm.PointStruct(id=p.id, vector={VECTOR: p.vector}, payload=p.payload) for p in points
        ]
        self.client.upsert(name, points=structs, wait=True)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        selector = self.qm.PointIdsList(points=list(ids))
        self.client.delete(name, points_selector=selector, wait=True)

    def scroll(
        self, name: str, fields: Sequence[str], *, vectors: bool = False
    ) -> Iterator[tuple[str, dict[str, Any], list[float] | None]]:
        if not self.client.collection_exists(name):
            return
        offset: Any = None
        while True:
            points, offset = self.client.scroll(
                name,
                limit=PAGE,
                offset=offset,
                with_payload=list(fields),
                with_vectors=[VECTOR] if vectors else False,
            )
            for p in points:
                vec: Any = p.vector.get(VECTOR) if isinstance(p.vector, dict) else None
                yield str(p.id), dict(p.payload or {}), vec
            if offset is None:
                return

    def query(
        self, name: str, queries: NDArray[np.float32], *, limit: int, filters: Filters | None
    ) -> list[list[tuple[float, str]]]:
        qm = self.qm
        must = [
            qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values)))
            for key, values in filter_values(filters)
        ]
        # Local mode searches exactly and rejects search parameters; a server gets them.
        params = (
            None
            if self.target.path is not None
            else qm.SearchParams(
                hnsw_ef=max(self.target.ef, limit),
                quantization=qm.QuantizationSearchParams(rescore=True, oversampling=2.0),
            )
        )
        requests = [
            qm.QueryRequest(
                query=q.tolist(),
                using=VECTOR,
                limit=limit,
                filter=qm.Filter(must=must) if must else None,
                params=params,
                with_payload=["tool_id"],
            )
            for q in queries
        ]
        if not self.client.collection_exists(name):
            return [[] for _ in queries]
        answers = self.client.query_batch_points(name, requests=requests)
        return [
            [(float(p.score), str((p.payload or {}).get("tool_id"))) for p in a.points]
            for a in answers
        ]

    def settle(self) -> None:
        """Writes wait for the server's acknowledgement already."""

    def close(self) -> None:
        self.client.close()


@contextmanager
def _quiet() -> Iterator[None]:
    """Local mode warns that payload indexes only matter on a server; they do there."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Payload indexes have no effect")
        yield
