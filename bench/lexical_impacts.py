"""Lexical legs of bench/lexical.py that store FTS5's BM25F term factor per tool and term at
build time, so a query only sums its terms' factors times an IDF:

* ``qdrant``: a Qdrant Edge shard with one sparse vector per tool (the IDF modifier on): a
  token's value is FTS5's BM25F term factor ``tf_w (k1 + 1) / (tf_w + k1 (1 - b + b D / avgdl))``
  (weighted frequency, whole-row length, ``avgdl`` of the catalog at build time); Qdrant
  multiplies by its IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))`` at query time. Weights and
  ``avgdl`` fixed at build time. The token -> sparse index vocabulary is a dict kept by the leg.
  ``qdrant_exact``: the same shard without the modifier, the query carrying FTS5's IDFs.
* ``impact``: the same factors in a numpy posting matrix, scored with FTS5's IDF and floor.

The legs' protocol and the other legs: bench/lexical_legs.py.
"""

from __future__ import annotations

import math
import shutil
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from lexical_legs import K1, MARGIN, B, Doc, folder_bytes, ranked, weighted_terms
from toolscout.models import Scored
from toolscout.store.base import LEXICAL_FIELDS


class QdrantSparseLeg:
    """``qdrant``: Qdrant's IDF modifier. ``qdrant_exact`` (``exact_idf``): no modifier; the
    query's values are FTS5's IDFs from document frequencies the leg counts itself (a store
    would keep them in a table written with the rows), so the scores are FTS5's."""

    name = "qdrant"

    def __init__(self, exact_idf: bool = False) -> None:
        self.exact_idf = exact_idf
        self.name = "qdrant_exact" if exact_idf else "qdrant"
        self.vocab: dict[str, int] = {}
        self.df: dict[int, int] = {}
        self.tools = 0
        self.folder = Path()
        self.shard: Any = None

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None:
        self.folder = folder / self.name
        if self.folder.exists():
            shutil.rmtree(self.folder)
        params = (
            qe.EdgeSparseVectorParams()  # no modifier: the query carries the IDFs
            if self.exact_idf
            else qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)
        )
        config = qe.EdgeConfig(
            sparse_vectors={"lex": params},
            max_search_threads=1,
        )
        self.tools = len(docs)
        self.shard = qe.EdgeShard.create(str(self.folder), config)
        lengths = [sum(len(f[x].split()) for x in LEXICAL_FIELDS) for _, f in docs]
        avgdl = max(1e-9, sum(lengths) / max(1, len(lengths)))
        points = []
        for row, ((tool, fields), length) in enumerate(zip(docs, lengths, strict=True)):
            tf = weighted_terms(fields, weights, self.vocab)
            norm = K1 * (1 - B + B * length / avgdl)
            keys = sorted(tf)
            for k in keys:
                self.df[k] = self.df.get(k, 0) + 1
            values = [tf[k] * (K1 + 1) / (tf[k] + norm) for k in keys]
            points.append(qe.Point(row, {"lex": qe.SparseVector(keys, values)}, {"id": tool.id}))
            if len(points) == 2000:
                self.shard.update(qe.UpdateOperation.upsert_points(points))
                points = []
        if points:
            self.shard.update(qe.UpdateOperation.upsert_points(points))
        self.shard.flush()
        self.shard.optimize()

    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]:
        keys = sorted({self.vocab[t] for t in tokens if t in self.vocab})
        if not keys:
            return []
        weights = [1.0] * len(keys)
        if self.exact_idf:
            n = self.tools
            weights = [
                max(math.log((n - self.df[k] + 0.5) / (self.df[k] + 0.5)), 1e-6) for k in keys
            ]
        request = qe.QueryRequest(
            query=qe.Query.Nearest(qe.SparseVector(keys, weights), using="lex"),
            limit=limit + MARGIN,
            with_payload=["id"],
        )
        points = self.shard.query(request)
        return ranked([(float(p.score), str(p.payload["id"])) for p in points], limit)

    def size_bytes(self) -> int:
        return folder_bytes(self.folder)

    def facts(self) -> dict[str, int]:
        info = self.shard.info()
        return {"segments": int(info.segments_count), "points": int(info.points_count)}

    def close(self) -> None:
        if self.shard is not None:
            self.shard.close()
            self.shard = None


class ImpactLeg:
    """FTS5's BM25F exactly, scored in numpy: a term -> (tool, factor) posting matrix where the
    factor is ``tf_w (k1 + 1) / (tf_w + k1 (1 - b + b D / avgdl))``; a query adds each term's
    postings times its IDF (from the posting count, FTS5's formula and floor) into one score
    array and partially sorts it. bm25s's way of scoring, with FTS5's formula."""

    name = "impact"

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self.folder = Path()

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None:
        self.folder = folder / "impact"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ids = [tool.id for tool, _ in docs]
        lengths = [sum(len(f[x].split()) for x in LEXICAL_FIELDS) for _, f in docs]
        avgdl = max(1e-9, sum(lengths) / max(1, len(lengths)))
        # Compact typed arrays: at 1M tools the postings number ~10^8.
        terms, rows, values = array("q"), array("i"), array("d")
        for row, ((_, fields), length) in enumerate(zip(docs, lengths, strict=True)):
            tf = weighted_terms(fields, weights, self.vocab)
            norm = K1 * (1 - B + B * length / avgdl)
            for key, f in tf.items():
                terms.append(key)
                rows.append(row)
                values.append(f * (K1 + 1) / (f + norm))
        keys = np.frombuffer(terms, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        self.rows = np.frombuffer(rows, dtype=np.int32)[order]
        self.values = np.frombuffer(values, dtype=np.float64)[order]
        counts = np.bincount(keys, minlength=len(self.vocab))
        self.starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        np.savez(self.folder / "postings.npz", rows=self.rows, values=self.values,
                 starts=self.starts)  # fmt: skip

    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]:
        keys = {self.vocab[t] for t in tokens if t in self.vocab}
        if not keys:
            return []
        n = len(self.ids)
        scores = np.zeros(n, dtype=np.float64)
        for key in keys:
            a, b = self.starts[key], self.starts[key + 1]
            hits = b - a
            idf = max(math.log((n - hits + 0.5) / (hits + 0.5)), 1e-6)
            scores[self.rows[a:b]] += idf * self.values[a:b]
        k = min(limit + MARGIN, n)
        top = np.argpartition(-scores, k - 1)[:k]
        return ranked([(float(scores[i]), self.ids[i]) for i in top], limit)

    def size_bytes(self) -> int:
        return folder_bytes(self.folder)

    def facts(self) -> dict[str, int]:
        return {"postings": len(self.rows), "terms": len(self.vocab)}

    def close(self) -> None:
        self.vocab = {}
