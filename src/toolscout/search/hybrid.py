"""Hybrid retrieval: a lexical leg, a vector leg, and the fusion that ranks their union.

The default fusion (``adaptive``) was chosen by measurement (docs/BENCHMARKS.md, section 1).
Plain RRF loses to BM25 on lexical queries and to vectors on paraphrased ones; ``adaptive``
fixes both:

* it fuses the legs' *scores*, each divided by that leg's best score, so a clear winner in one
  leg keeps its margin instead of being flattened to a rank;
* it sets the lexical weight per query from the *lexical evidence*: the best BM25 score in units
  of the largest possible IDF (``ln(N + 1)``). A paraphrase ("file a bug in the repo") matches
  only a stray common word — low evidence, the vectors decide; a query restating a tool's words
  matches several rare terms — high evidence, both legs count equally. The weight is a logistic
  in the evidence (midpoint and slope in :class:`SearchConfig`).
* long, multi-request queries are embedded sentence by sentence; each tool keeps its best
  similarity over the clauses, so every request in the query finds its tool.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.errors import EmptyQuery, QueryError
from toolscout.models import Filters, Ranked, Scored, SearchMode
from toolscout.search.fusion import fuse_rrf, fuse_scores
from toolscout.search.text import identifier_key, query_tokens, split_sentences
from toolscout.store.base import Store

MAX_QUERY_CHARS = 1000
#: Threads shared by all searches of one searcher for their vector legs.
LEG_THREADS = 8
Fusion = Literal["adaptive", "rrf", "score"]

#: name, actions, enhanced, keywords, use_cases, domain, description, params
DEFAULT_FIELD_WEIGHTS: tuple[float, ...] = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)


@dataclass(frozen=True)
class SearchConfig:
    """Ranking parameters. Defaults are the measured ones; all are configuration."""

    fusion: Fusion = "adaptive"
    rrf_k: int = 60
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    field_weights: tuple[float, ...] = DEFAULT_FIELD_WEIGHTS
    candidates: int = 100
    #: How deep the lexical leg ranks (at least the search's limit). 50 instead of 100 cost
    #: <= 0.1 nDCG@10 and let PostgreSQL's MaxScore skip common terms' postings: BM25 p95 at
    #: 100k tools 41 -> 28 ms (docs/BENCHMARKS.md section 7).
    lexical_candidates: int = 50
    vector_floor: float = 0.0
    evidence_midpoint: float = 2.5
    evidence_slope: float = 0.25
    clause_split: bool = True
    exact_name_boost: bool = True
    #: Run the lexical and the vector leg at the same time on stores that gain from it (a
    #: search then costs about its slower leg: on PostgreSQL both legs run on the server,
    #: each on its own connection).
    parallel_legs: bool = True


def check_query(query: str) -> str:
    """Validate and strip a query.

    Raises:
        QueryError: empty, or longer than MAX_QUERY_CHARS.
    """
    if not isinstance(query, str):
        raise QueryError("query", "must be a string")
    text = query.strip()
    if not text:
        raise EmptyQuery()
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(
            "query", f"is {len(query)} characters; the limit is {MAX_QUERY_CHARS}, shorten it"
        )
    return text


class HybridSearcher:
    """Runs the legs against a store and fuses them. Thread-safe (no mutable state)."""

    def __init__(self, store: Store, embedder: Embedder, config: SearchConfig | None = None):
        self.store = store
        self.embedder = embedder
        self.config = config or SearchConfig()
        # Only stores whose reads gain from overlapping get the threads.
        self._legs = (
            ThreadPoolExecutor(max_workers=LEG_THREADS, thread_name_prefix="toolscout-leg")
            if store.parallel_reads
            else None
        )

    def close(self) -> None:
        """Stop the leg threads (searches after this run their legs one after the other)."""
        if self._legs is not None:
            self._legs.shutdown(wait=True)
            self._legs = None

    def embed_query(self, query: str) -> NDArray[np.float32]:
        """One row for a single-clause query; one row per clause (at most 8) otherwise.

        The whole text of a multi-clause query adds nothing measurable once its clauses are
        embedded (docs/BENCHMARKS.md) and is the most expensive text to embed, so it is skipped.
        """
        if self.config.clause_split:
            clauses = split_sentences(query)
            if len(clauses) > 1:
                return self.embedder.embed_query(clauses[:8])
        return self.embedder.embed_query([query])

    def _vector_leg(
        self, vectors: NDArray[np.float32], n: int, filters: Filters | None
    ) -> list[Scored]:
        runs = self.store.nearest_many(vectors, limit=n, filters=filters)
        if len(runs) == 1:
            return runs[0]
        # Each clause votes with its own similarity; a tool keeps its best.
        best: dict[str, float] = {}
        for run in runs:
            for hit in run:
                if hit.score > best.get(hit.id, -2.0):
                    best[hit.id] = hit.score
        return sorted((Scored(i, s) for i, s in best.items()), key=lambda h: (-h.score, h.id))[:n]

    def search(
        self,
        query: str,
        *,
        mode: SearchMode = SearchMode.HYBRID,
        limit: int = 10,
        filters: Filters | None = None,
        query_vectors: NDArray[np.float32] | None = None,
        timings: dict[str, float] | None = None,
    ) -> list[Ranked]:
        """Ranked ids (scores 0..1, best first, ties by id).

        Raises:
            QueryError: bad query or limit.
        """
        text = check_query(query)
        if limit < 1:
            raise QueryError("limit", "must be at least 1")
        timings = timings if timings is not None else {}
        cfg = self.config
        n = max(cfg.candidates, limit)
        lexical: list[Scored] = []
        vector: list[Scored] = []
        tokens = query_tokens(text)

        def vector_leg() -> list[Scored]:
            t0 = time.perf_counter()
            vecs = query_vectors if query_vectors is not None else self.embed_query(text)
            timings["embed_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            found = self._vector_leg(vecs, n, filters)
            timings["vector_ms"] = (time.perf_counter() - t0) * 1000
            return found

        pending: Future[list[Scored]] | None = None
        if mode is SearchMode.HYBRID and cfg.parallel_legs and self._legs is not None:
            pending = self._legs.submit(vector_leg)
        if mode in (SearchMode.BM25, SearchMode.HYBRID):
            t0 = time.perf_counter()
            depth = max(min(cfg.lexical_candidates, n), limit)
            lexical = self.store.lexical(
                tokens, limit=depth, filters=filters, weights=cfg.field_weights
            )
            timings["lexical_ms"] = (time.perf_counter() - t0) * 1000
        if pending is not None:
            vector = pending.result()
        elif mode in (SearchMode.VECTOR, SearchMode.HYBRID):
            vector = vector_leg()
        fused = self._fuse(mode, tokens, lexical, vector)
        fused = self._boost_exact_name(text, fused)
        lex_rank = {h.id: r for r, h in enumerate(lexical, 1)}
        vec_rank = {h.id: r for r, h in enumerate(vector, 1)}
        return [
            Ranked(h.id, min(1.0, max(0.0, h.score)), lex_rank.get(h.id), vec_rank.get(h.id))
            for h in fused[:limit]
        ]

    def _fuse(
        self, mode: SearchMode, tokens: list[str], lexical: list[Scored], vector: list[Scored]
    ) -> list[Scored]:
        cfg = self.config
        if mode is SearchMode.BM25:
            return fuse_scores([lexical], weights=[1.0])
        if mode is SearchMode.VECTOR:
            return [Scored(h.id, max(0.0, h.score)) for h in vector]
        if cfg.fusion == "rrf":
            return fuse_rrf(
                [lexical, vector], k=cfg.rrf_k, weights=[cfg.lexical_weight, cfg.vector_weight]
            )
        lw = cfg.lexical_weight
        if cfg.fusion == "adaptive":
            lw = lw * self._lexical_confidence(tokens, lexical)
        fused = fuse_scores(
            [lexical, vector],
            weights=[lw, cfg.vector_weight],
            floors=[0.0, cfg.vector_floor],
        )
        return fused

    def _lexical_confidence(self, tokens: list[str], lexical: list[Scored]) -> float:
        """0..1: logistic in the best BM25 score measured in units of the largest IDF."""
        if not lexical or not tokens:
            return 0.0
        evidence = lexical[0].score / math.log(self.store.count() + 1.0)
        cfg = self.config
        z = (evidence - cfg.evidence_midpoint) / max(cfg.evidence_slope, 1e-6)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def _boost_exact_name(self, text: str, fused: list[Scored]) -> list[Scored]:
        """A query that *is* a tool's name (any spelling: ``create-issue``, ``createIssue``)
        puts the tools with that name first."""
        if not self.config.exact_name_boost or " " in text or len(text) > 200:
            return fused
        key = identifier_key(text)
        if not key:
            return fused
        head = fused[:20]
        tools = self.store.get_many([h.id for h in head])
        exact = [h.id for h in head if h.id in tools and identifier_key(tools[h.id].name) == key]
        if not exact:
            return fused
        first = set(exact)
        return [Scored(i, 1.0) for i in exact] + [h for h in fused if h.id not in first]
