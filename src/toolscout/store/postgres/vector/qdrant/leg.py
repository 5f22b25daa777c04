"""The vector leg of the PostgreSQL store kept in Qdrant collections.

PostgreSQL stays the source of truth: tools, their vectors (the ``embedding`` column, so an
index can always be re-pushed), assignments and skills are written there first, in one
transaction. Qdrant then receives a copy of what the transaction changed: one point per tool
(named vector ``dense``, payload ``tool_id``, ``server``, ``source``, ``item_type``,
``skill_ids`` and a ``digest`` of all of them plus the tool's text hash) and one point per skill
centroid in ``COLLECTION_skills``.

A crash between the two writes leaves Qdrant behind PostgreSQL. The first write of every store
process therefore reconciles first: it reads every tool's digest from PostgreSQL and every
point's digest from Qdrant, re-pushes what differs and deletes points whose tool is gone. So
the next sync repairs any gap (tests/contract/test_qdrant_leg.py kills nothing but writes
behind Qdrant's back through a plain PostgreSQL store, which is the same state).

Searches ask Qdrant for a few candidates beyond the limit and order them by (score, id), so
ties break as in the other stores; with int8 quantisation the candidates are re-scored with the
original vectors (Qdrant's ``rescore``), so scores are exact cosines.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError, StoreError
from toolscout.models import Filters, Scored
from toolscout.store.base import IndexIdentity
from toolscout.store.postgres.conn import Conn
from toolscout.store.postgres.database import PostgresDatabase
from toolscout.store.postgres.vector.pgvector import PgVectorLeg
from toolscout.store.postgres.vector.qdrant.target import QdrantTarget

#: Bumped when the collections' layout changes; an older collection is rebuilt from PostgreSQL.
SCHEMA = 1
VECTOR = "dense"
#: Candidates beyond the limit, so equal scores at the cut still break by id.
_MARGIN = 10
_BATCH = 256
_ID_SPACE = uuid.UUID("6f1d3c1e-6a55-4c3e-9d7e-2b1f0c9a8e11")
_PAYLOAD_INDEXES = ("skill_ids", "server", "source", "item_type", "tool_id")


def point_id(tool_id: str) -> str:
    """Qdrant ids are integers or UUIDs: a stable UUID per tool id."""
    return str(uuid.uuid5(_ID_SPACE, tool_id))


def _digest(text_hash: str, server: str, source: str, item_type: str, skills: list[str]) -> str:
    payload = json.dumps([SCHEMA, text_hash, server, source, item_type, sorted(skills)])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


_STATE_SQL = (
    "SELECT t.id, t.text_hash, coalesce(t.server, ''), coalesce(t.source, ''), t.item_type, "
    "coalesce(array(SELECT s.skill_id FROM tool_skills s WHERE s.tool_id = t.id "
    "ORDER BY s.skill_id), ARRAY[]::text[]) {vector} "
    "FROM tools t WHERE t.embedding IS NOT NULL {cond}"
)


class QdrantVectorLeg:
    """``nearest``/``nearest_many`` from Qdrant; writes mirrored after PostgreSQL commits."""

    def __init__(
        self,
        db: PostgresDatabase,
        identity: Callable[[], IndexIdentity | None],
        target: QdrantTarget,
        skill_source: Callable[[], Mapping[str, NDArray[np.float32]]],
    ) -> None:
        """``skill_source`` reads the skill centroids PostgreSQL holds (for reconciling).

        Raises: ConfigError when qdrant-client is not installed, StoreError when Qdrant cannot
        be reached."""
        try:
            from qdrant_client import QdrantClient
        except ImportError:
            raise ConfigError(
                "vectors: the Qdrant vector leg needs qdrant-client; "
                "install it with `pip install 'toolscout[qdrant]'`"
            ) from None

        self.db = db
        self.target = target
        #: Stored vectors, the dimension and bulk state stay PostgreSQL's.
        self.pg = PgVectorLeg(db, identity)
        self.in_bulk = False
        self._reconciled = False
        self._lock = threading.Lock()
        self._skill_source = skill_source
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

    # -- the PostgreSQL side's state -------------------------------------------------------
    @property
    def elsewhere(self) -> str | None:
        return self.target.display

    def bind(self, dim: int) -> None:
        """Create the collections for ``dim`` (checked when they exist). Raises: StoreError."""
        self.ensure_collections(dim)

    @property
    def dim(self) -> int | None:
        return self.pg.dim

    @dim.setter
    def dim(self, value: int | None) -> None:
        self.pg.dim = value

    def bound_dim(self) -> int | None:
        return self.pg.bound_dim()

    def ensure_index(self, conn: Conn) -> None:
        """PostgreSQL builds no HNSW graph of its own: Qdrant answers the vector leg."""

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Nothing to defer: points are written in batches either way."""
        yield

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors, read from PostgreSQL (the source of truth). Raises: StoreError."""
        return self.pg.vectors(ids)

    # -- collections -----------------------------------------------------------------------
    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            with warnings.catch_warnings():
                # Local mode warns that payload indexes only matter on a server; they do there.
                warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                yield
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Qdrant {what} at {self.target.display} failed: {exc}") from exc

    def _collection_ok(self, name: str, dim: int) -> bool:
        if not self.client.collection_exists(name):
            return False
        config = self.client.get_collection(name).config
        meta = config.metadata or {}
        vectors = config.params.vectors
        size = vectors[VECTOR].size if isinstance(vectors, dict) and VECTOR in vectors else None
        if meta.get("toolscout_schema") == SCHEMA and size == dim:
            return True
        self.client.delete_collection(name)  # an older layout: rebuilt from PostgreSQL
        return False

    def ensure_collections(self, dim: int) -> None:
        """Create (or migrate) both collections for ``dim``-dimensional vectors.

        Raises: StoreError."""
        from qdrant_client import models as qm

        t = self.target
        hnsw = qm.HnswConfigDiff(m=t.hnsw_m, ef_construct=t.hnsw_ef_construct)
        quant = (
            qm.ScalarQuantization(
                scalar=qm.ScalarQuantizationConfig(type=qm.ScalarType.INT8, always_ram=True)
            )
            if t.quantization == "int8"
            else None
        )
        with self._errors("collection setup"):
            for name in (t.collection, t.skills_collection):
                if self._collection_ok(name, dim):
                    if name == t.collection:  # settings may have changed since it was made
                        self.client.update_collection(
                            name, hnsw_config=hnsw, quantization_config=quant
                        )
                    continue
                self.client.create_collection(
                    name,
                    vectors_config={
                        VECTOR: qm.VectorParams(
                            size=dim, distance=qm.Distance.COSINE, on_disk=t.on_disk
                        )
                    },
                    hnsw_config=hnsw,
                    quantization_config=quant if name == t.collection else None,
                    metadata={"toolscout_schema": SCHEMA},
                )
                if name == t.collection:
                    for field in _PAYLOAD_INDEXES:
                        self.client.create_payload_index(
                            name, field, field_schema=qm.PayloadSchemaType.KEYWORD
                        )
                self._reconciled = False

    def reset(self) -> None:
        """Drop both collections (``index --rebuild``). Raises: StoreError."""
        with self._errors("reset"):
            for name in (self.target.collection, self.target.skills_collection):
                if self.client.collection_exists(name):
                    self.client.delete_collection(name)
        self._reconciled = False

    # -- writes ----------------------------------------------------------------------------
    def written(self, tool_ids: Sequence[str]) -> None:
        """Mirror PostgreSQL's committed state of ``tool_ids`` (present: upsert, gone: delete),
        after reconciling everything once per process. Raises: StoreError."""
        dim = self.bound_dim()
        if dim is None:
            return
        with self._lock:
            self.ensure_collections(dim)
            if not self._reconciled:
                self.reconcile()
                return
            self._push(list(dict.fromkeys(tool_ids)))

    def _state(self, ids: Sequence[str] | None, *, vectors: bool) -> list[Any]:
        cond, params = ("", ()) if ids is None else ("AND t.id = ANY(%s)", (list(ids),))
        sql = _STATE_SQL.format(vector=", t.embedding" if vectors else "", cond=cond)
        return self.db.query(sql, params, binary=vectors)

    def _push(self, ids: Sequence[str]) -> None:
        from qdrant_client import models as qm

        for start in range(0, len(ids), _BATCH):
            chunk = ids[start : start + _BATCH]
            rows = self._state(chunk, vectors=True)
            points = [
                qm.PointStruct(
                    id=point_id(r[0]),
                    vector={VECTOR: np.asarray(r[6], dtype=np.float32).tolist()},
                    payload={
                        "tool_id": r[0],
                        "server": r[2],
                        "source": r[3],
                        "item_type": r[4],
                        "skill_ids": list(r[5]),
                        "digest": _digest(r[1], r[2], r[3], r[4], list(r[5])),
                    },
                )
                for r in rows
            ]
            gone = sorted(set(chunk) - {r[0] for r in rows})
            with self._errors("write"):
                if points:
                    self.client.upsert(self.target.collection, points=points, wait=True)
                if gone:
                    self.client.delete(
                        self.target.collection,
                        points_selector=qm.PointIdsList(points=[point_id(i) for i in gone]),
                        wait=True,
                    )

    def reconcile(self) -> tuple[int, int]:
        """Bring Qdrant to PostgreSQL's state: re-push tools whose digest differs or whose
        point is missing, delete points of tools that are gone. Returns (pushed, deleted).

        Raises: StoreError."""
        from qdrant_client import models as qm

        want = {
            r[0]: _digest(r[1], r[2], r[3], r[4], list(r[5]))
            for r in self._state(None, vectors=False)
        }
        have: dict[str, tuple[str, str]] = {}
        offset: Any = None
        with self._errors("reconcile"):
            while True:
                points, offset = self.client.scroll(
                    self.target.collection,
                    limit=2048,
                    offset=offset,
                    with_payload=["tool_id", "digest"],
                )
                for p in points:
                    payload = p.payload or {}
                    have[str(payload.get("tool_id"))] = (str(p.id), str(payload.get("digest")))
                if offset is None:
                    break
        stale = sorted(i for i, d in want.items() if have.get(i, ("", ""))[1] != d)
        extra = sorted(set(have) - set(want))
        self._push(stale)
        if extra:
            with self._errors("reconcile"):
                self.client.delete(
                    self.target.collection,
                    points_selector=qm.PointIdsList(points=[uuid.UUID(have[i][0]) for i in extra]),
                    wait=True,
                )
        self._sync_skills(dict(self._skill_source()))
        self._reconciled = True
        return len(stale), len(extra)

    def skills_changed(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        """Mirror skill centroids into the skills collection (None deletes). Raises: StoreError."""
        dim = self.bound_dim()
        if dim is None or not vectors:
            return
        with self._lock:
            self.ensure_collections(dim)
            self._upsert_skills(vectors)

    def _sync_skills(self, wanted: Mapping[str, NDArray[np.float32]]) -> None:
        """Make the skills collection hold exactly ``wanted``."""
        stale = {k: None for k in self.skill_vectors() if k not in wanted}
        self._upsert_skills({**dict(wanted), **stale})

    def _upsert_skills(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        from qdrant_client import models as qm

        keep = [
            qm.PointStruct(
                id=point_id(k), vector={VECTOR: np.asarray(v).tolist()}, payload={"skill_id": k}
            )
            for k, v in sorted(vectors.items())
            if v is not None
        ]
        drop: list[int | str | uuid.UUID] = [
            point_id(k) for k, v in sorted(vectors.items()) if v is None
        ]
        with self._errors("skill write"):
            if keep:
                self.client.upsert(self.target.skills_collection, points=keep, wait=True)
            if drop:
                self.client.delete(
                    self.target.skills_collection,
                    points_selector=qm.PointIdsList(points=drop),
                    wait=True,
                )

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        """Every centroid in the skills collection. Raises: StoreError."""
        out: dict[str, NDArray[np.float32]] = {}
        dim = self.bound_dim()
        if dim is None:
            return out
        with self._errors("skill read"):
            if not self.client.collection_exists(self.target.skills_collection):
                return out
            offset: Any = None
            while True:
                points, offset = self.client.scroll(
                    self.target.skills_collection,
                    limit=1024,
                    offset=offset,
                    with_payload=["skill_id"],
                    with_vectors=[VECTOR],
                )
                for p in points:
                    vec = p.vector[VECTOR] if isinstance(p.vector, dict) else None
                    if p.payload and vec is not None:
                        out[str(p.payload["skill_id"])] = np.asarray(vec, dtype=np.float32)
                if offset is None:
                    return out

    # -- reads -----------------------------------------------------------------------------
    def _filter(self, filters: Filters | None) -> Any:
        """A Qdrant filter, or False when a filter admits nothing (an empty tuple)."""
        from qdrant_client import models as qm

        if filters is None or filters.is_empty():
            return None
        must: list[Any] = []
        fields: list[tuple[str, Sequence[str] | None]] = [
            ("server", filters.servers),
            ("source", filters.sources),
            (
                "item_type",
                [t.value for t in filters.item_types] if filters.item_types else filters.item_types,
            ),
            ("skill_ids", filters.skill_ids),
            ("tool_id", filters.tool_ids),
        ]
        for key, values in fields:
            if values is None:
                continue
            if len(values) == 0:
                return False
            must.append(qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values))))
        return qm.Filter(must=must)

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Raises: StoreError."""
        return self.nearest_many(np.asarray(vector)[None, :], limit=limit, filters=filters)[0]

    def nearest_many(
        self, vectors: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[list[Scored]]:
        """One batched query for all rows (one request's clauses). Raises: StoreError."""
        from qdrant_client import models as qm

        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        dim = self.bound_dim()
        if dim is None or limit <= 0:
            return [[] for _ in queries]
        if queries.shape[1] != dim:
            raise StoreError(f"query vector has dimension {queries.shape[1]}, index wants {dim}")
        where = self._filter(filters)
        if where is False:
            return [[] for _ in queries]
        # Local mode searches exactly and rejects search parameters; a server gets them.
        params = (
            None
            if self.target.path is not None
            else qm.SearchParams(
                hnsw_ef=max(self.target.ef, limit + _MARGIN),
                quantization=qm.QuantizationSearchParams(rescore=True, oversampling=2.0),
            )
        )
        requests = [
            qm.QueryRequest(
                query=q.tolist(),
                using=VECTOR,
                limit=limit + _MARGIN,
                filter=where,
                params=params,
                with_payload=["tool_id"],
            )
            for q in queries
        ]
        with self._errors("search"):
            if not self.client.collection_exists(self.target.collection):
                return [[] for _ in queries]
            answers = self.client.query_batch_points(self.target.collection, requests=requests)
        out: list[list[Scored]] = []
        for answer in answers:
            ranked = sorted(
                ((float(p.score), str((p.payload or {}).get("tool_id"))) for p in answer.points),
                key=lambda pair: (-pair[0], pair[1]),
            )
            out.append([Scored(i, s) for s, i in ranked[:limit]])
        return out

    def close(self) -> None:
        with self._errors("close"):
            self.client.close()
