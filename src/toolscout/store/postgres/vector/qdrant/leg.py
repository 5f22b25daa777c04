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
original vectors (Qdrant's ``rescore``), so scores are exact cosines. The engine is Qdrant Edge
for a local folder and qdrant-client for a server (``engines.py``); this file is the same for both.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import StoreError
from toolscout.models import Filters, Scored
from toolscout.store.base import IndexIdentity, IndexState
from toolscout.store.edgefilter import admits_nothing
from toolscout.store.postgres.conn import Conn
from toolscout.store.postgres.database import PostgresDatabase
from toolscout.store.postgres.vector.pgvector import PgVectorLeg
from toolscout.store.postgres.vector.qdrant.collections import PointData, open_collections
from toolscout.store.postgres.vector.qdrant.target import QdrantTarget

#: Bumped when the collections' layout changes; an older collection is rebuilt from PostgreSQL.
SCHEMA = 1
#: Candidates beyond the limit, so equal scores at the cut still break by id.
_MARGIN = 10
_BATCH = 256
_ID_SPACE = uuid.UUID("6f1d3c1e-6a55-4c3e-9d7e-2b1f0c9a8e11")


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

        Raises: ConfigError when a server URL is given without qdrant-client installed,
        StoreError when Qdrant cannot be reached or opened."""
        self.db = db
        self.target = target
        #: Stored vectors, the dimension and bulk state stay PostgreSQL's.
        self.pg = PgVectorLeg(db, identity)
        self.in_bulk = False
        self._reconciled = False
        self._lock = threading.Lock()
        self._skill_source = skill_source
        self.engine = open_collections(target)

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
            yield
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Qdrant {what} at {self.target.display} failed: {exc}") from exc

    def ensure_collections(self, dim: int) -> None:
        """Create both collections for ``dim``-dimensional vectors, or re-make one of an older
        layout (rebuilt from PostgreSQL). Raises: StoreError."""
        t = self.target
        with self._errors("collection setup"):
            for name in (t.collection, t.skills_collection):
                if self.engine.layout(name) == (SCHEMA, dim):
                    if name == t.collection:  # settings may have changed since it was made
                        self.engine.configure(name)
                    continue
                self.engine.create(name, dim, schema=SCHEMA, tools=name == t.collection)
                self._reconciled = False

    def reset(self) -> None:
        """Drop both collections (``index --rebuild``). Raises: StoreError."""
        with self._errors("reset"):
            for name in (self.target.collection, self.target.skills_collection):
                self.engine.drop(name)
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
            else:
                self._push(list(dict.fromkeys(tool_ids)))
            with self._errors("flush"):
                self.engine.settle()

    def _state(self, ids: Sequence[str] | None, *, vectors: bool) -> list[Any]:
        cond, params = ("", ()) if ids is None else ("AND t.id = ANY(%s)", (list(ids),))
        sql = _STATE_SQL.format(vector=", t.embedding" if vectors else "", cond=cond)
        return self.db.query(sql, params, binary=vectors)

    def _push(self, ids: Sequence[str]) -> None:
        coll = self.target.collection
        for start in range(0, len(ids), _BATCH):
            chunk = ids[start : start + _BATCH]
            rows = self._state(chunk, vectors=True)
            points = [
                PointData(
                    point_id(r[0]),
                    np.asarray(r[6], dtype=np.float32).tolist(),
                    {
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
                    self.engine.upsert(coll, points)
                if gone:
                    self.engine.delete(coll, [point_id(i) for i in gone])

    def reconcile(self) -> tuple[int, int]:
        """Bring Qdrant to PostgreSQL's state: re-push tools whose digest differs or whose
        point is missing, delete points of tools that are gone. Returns (pushed, deleted).

        Raises: StoreError."""
        want = {
            r[0]: _digest(r[1], r[2], r[3], r[4], list(r[5]))
            for r in self._state(None, vectors=False)
        }
        have: dict[str, tuple[str, str]] = {}
        with self._errors("reconcile"):
            for pid, payload, _ in self.engine.scroll(
                self.target.collection, ["tool_id", "digest"]
            ):
                have[str(payload.get("tool_id"))] = (pid, str(payload.get("digest")))
        stale = sorted(i for i, d in want.items() if have.get(i, ("", ""))[1] != d)
        extra = sorted(set(have) - set(want))
        self._push(stale)
        if extra:
            with self._errors("reconcile"):
                self.engine.delete(self.target.collection, [have[i][0] for i in extra])
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
            with self._errors("flush"):
                self.engine.settle()

    def _sync_skills(self, wanted: Mapping[str, NDArray[np.float32]]) -> None:
        """Make the skills collection hold exactly ``wanted``."""
        stale = {k: None for k in self.skill_vectors() if k not in wanted}
        self._upsert_skills({**dict(wanted), **stale})

    def _upsert_skills(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        keep = [
            PointData(point_id(k), np.asarray(v).tolist(), {"skill_id": k})
            for k, v in sorted(vectors.items())
            if v is not None
        ]
        drop = [point_id(k) for k, v in sorted(vectors.items()) if v is None]
        with self._errors("skill write"):
            if keep:
                self.engine.upsert(self.target.skills_collection, keep)
            if drop:
                self.engine.delete(self.target.skills_collection, drop)

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        """Every centroid in the skills collection. Raises: StoreError."""
        out: dict[str, NDArray[np.float32]] = {}
        if self.bound_dim() is None:
            return out
        with self._errors("skill read"):
            found = self.engine.scroll(self.target.skills_collection, ["skill_id"], vectors=True)
            for _, payload, vec in found:
                if "skill_id" in payload and vec is not None:
                    out[str(payload["skill_id"])] = np.asarray(vec, dtype=np.float32)
        return out

    # -- reads -----------------------------------------------------------------------------
    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Raises: StoreError."""
        return self.nearest_many(np.asarray(vector)[None, :], limit=limit, filters=filters)[0]

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        state: IndexState | None = None,
    ) -> list[list[Scored]]:
        """One batched query for all rows (one request's clauses); ``state`` is not needed.

        Raises: StoreError."""
        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        dim = self.bound_dim()
        if dim is None or limit <= 0 or admits_nothing(filters):
            return [[] for _ in queries]
        if queries.shape[1] != dim:
            raise StoreError(f"query vector has dimension {queries.shape[1]}, index wants {dim}")
        with self._errors("search"):
            answers = self.engine.query(
                self.target.collection, queries, limit=limit + _MARGIN, filters=filters
            )
        return [
            [Scored(i, s) for s, i in sorted(found, key=lambda p: (-p[0], p[1]))[:limit]]
            for found in answers
        ]

    def close(self) -> None:
        with self._errors("close"):
            self.engine.close()
