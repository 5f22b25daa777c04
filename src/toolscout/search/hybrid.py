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
* a request is split into its intents (sentences, and clauses that open a new request:
  ``search/intents.py``); each intent is embedded, a tool keeps its best similarity over them,
  and each intent is also fused on its own, so the best tool for *one* intent ranks as high as
  the best tool for the whole request ("book a meeting *and email her the agenda*").

With ``learned_ranker`` on (the default), a learned model re-orders the first fused candidates and
its probabilities are the scores (``search/rank.py``; its candidates' names and servers:
``search/candidates.py``). It also reads the cosine of the *whole* request: for a request of
several intents its intents' rows averaged (``whole_request = "intents_mean"``) or the text
embedded with them, searched as one more row of ``nearest_many``. It serves the packaged
embedding model with the adaptive fusion; with another model or fusion, or ``learned_ranker``
off, the fusion's order stands (:meth:`HybridSearcher.ranking` says which ran, and why). Then
scores come from ``search/calibration.py``: the probability that the tool serves the request. Either
way, a request that no indexed tool is likely to serve (judged from the legs before fusion) is
a ``no_match``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.errors import QueryError
from toolscout.models import Filters, Ranked, Scored, SearchMode
from toolscout.search.boost import Boost
from toolscout.search.calibration import Calibration, Evidence, load_calibration, scored_hits
from toolscout.search.candidates import CandidateCache, exact_name_first
from toolscout.search.config import SearchConfig
from toolscout.search.fusion import best_of_intents, fuse_legs, intent_owners, spread_intents
from toolscout.search.intents import split_intents
from toolscout.search.nametable import NameTable
from toolscout.search.queryrows import QueryRows, intents_mean, stacked, whole_run_of
from toolscout.search.rank import (
    Legs,
    Ranker,
    candidate_rows,
    config_blocks,
    rerank,
    serving_ranker,
)
from toolscout.search.request import check_query
from toolscout.search.text import query_tokens
from toolscout.store.base import IndexState, Store

log = logging.getLogger("toolscout.search")

#: At most this many intents of one request are embedded.
MAX_ROWS = 8
#: Calibration mismatches already logged (once per process each).
_WARNED: set[str] = set()
#: Threads shared by all searches of one searcher for the legs they run beside the caller.
LEG_THREADS = 8


class HybridSearcher:
    """Runs the legs against a store and fuses them. Thread-safe (no mutable state)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        config: SearchConfig | None = None,
        calibration: Calibration | None = None,
        ranker: Ranker | None = None,
    ):
        self.store = store
        self.embedder = embedder
        self.config = config or SearchConfig()
        #: Maps each hit's evidence to a probability (the packaged fit unless given).
        self.calibration = calibration if calibration is not None else load_calibration()
        #: ``"fitted"``, or why the scores are approximate (reported in search metadata).
        self.calibration_status = self.calibration.status(embedder)
        if self.calibration_status != "fitted" and self.calibration_status not in _WARNED:
            _WARNED.add(self.calibration_status)
            log.warning(
                "scores are %s: they rank correctly but their probabilities are approximate "
                "and no_match is flagged only when nothing is found; re-fit with "
                "`python bench/fit/calibrate.py --write`",
                self.calibration_status,
            )
        #: Learned from use (``toolscout.feedback``): set by the engine, None when off.
        self.boost: Boost | None = None
        #: The learned ranker (the packaged one unless given; None: the fusion's order stands)
        #: and, when it is None, why (reported in search metadata as ``ranker_off``).
        self.ranker, self.ranker_off = serving_ranker(self.config, self.calibration_status, ranker)
        #: The ranker's view of its candidates (names' tokens, servers), per index version:
        #: the whole catalog's, loaded apart once the ranker first needs it.
        self.seen = CandidateCache(
            store.tools, catalog=NameTable(store.tools, lambda: store.state().version)
        )
        # The lexical legs that run beside the caller's vector leg (see _lexical_beside).
        self._legs: ThreadPoolExecutor | None = ThreadPoolExecutor(
            max_workers=LEG_THREADS, thread_name_prefix="toolscout-leg"
        )
        self._parallel_reads = store.parallel_reads

    def ranking(self, mode: SearchMode) -> tuple[str, str | None]:
        """What orders a search in ``mode`` (``"learned"``: the learned ranker re-scores the
        fused candidates; else the fusion's name, or the one leg's in a ``bm25`` or ``vector``
        search) and, when the ranker does not, why not."""
        if mode is not SearchMode.HYBRID:
            return mode.value, "the learned ranker re-scores hybrid searches only"
        if self._ranker_for(mode) is None:
            why = config_blocks(self.config) or self.ranker_off or "no ranker loaded"
            return self.config.fusion, why
        return "learned", None

    def _ranker_for(self, mode: SearchMode) -> Ranker | None:
        """The ranker a search in ``mode`` runs, or None (the configuration may have changed
        since the searcher was built: it is read per search)."""
        if mode is not SearchMode.HYBRID or config_blocks(self.config) is not None:
            return None
        return self.ranker

    def close(self) -> None:
        """Stop the leg threads (later searches run their legs in turn) and the loads of the
        candidates' names."""
        self.seen.close()
        if self._legs is not None:
            self._legs.shutdown(wait=True)
            self._legs = None

    def intents(self, query: str) -> list[str]:
        """The texts a query is embedded as: its intents, or the query itself."""
        if self.config.clause_split:
            return split_intents(query)[:MAX_ROWS]
        return [query]

    def embed_query(self, query: str) -> NDArray[np.float32]:
        """One row per intent of the query (the whole text of several adds nothing measurable
        to the fusion and costs the most to embed: docs/BENCHMARKS.md)."""
        return self.embedder.embed_query(self.intents(query))

    def embed_request(self, query: str, whole: bool) -> QueryRows:
        """:meth:`embed_query`, and with ``whole`` the whole request's row for a request of
        several intents, embedded in the same call (a request of one intent is its own whole)."""
        intents = self.intents(query)
        if not whole or len(intents) < 2:
            return self.embedder.embed_query(intents), None
        if self.config.whole_request == "intents_mean":
            rows = self.embedder.embed_query(intents)
            return rows, intents_mean(rows, intents)
        rows = self.embedder.embed_query([*intents, query.strip()])
        return rows[:-1], rows[-1:]

    def search(
        self,
        query: str,
        *,
        mode: SearchMode = SearchMode.HYBRID,
        limit: int = 10,
        filters: Filters | None = None,
        query_vectors: NDArray[np.float32] | None = None,
        timings: dict[str, float] | None = None,
        places: int | None = None,
    ) -> list[Ranked]:
        """Ranked ids, best first; scores are calibrated probabilities that never increase
        down the list.

        Raises:
            QueryError: bad query or limit.
        """
        found = self.search_evidence(
            query,
            mode=mode,
            limit=limit,
            filters=filters,
            query_vectors=query_vectors,
            timings=timings,
            places=places,
        )
        return [r for r, _ in found]

    def no_match(self, ranked: Sequence[Ranked], mode: SearchMode = SearchMode.HYBRID) -> bool:
        """True when nothing in ``ranked`` is likely to serve the request (with a calibration
        fitted for another model: only when ``ranked`` is empty)."""
        if not ranked:
            return True
        if self.calibration_status != "fitted":
            return False
        answerable = ranked[0].answerable
        chance = ranked[0].score if answerable is None else answerable
        return chance < self.calibration.no_match_below(mode.value)

    def search_evidence(
        self,
        query: str,
        *,
        mode: SearchMode = SearchMode.HYBRID,
        limit: int = 10,
        filters: Filters | None = None,
        query_vectors: NDArray[np.float32] | None = None,
        timings: dict[str, float] | None = None,
        places: int | None = None,
    ) -> list[tuple[Ranked, Evidence]]:
        """:meth:`search`, with the evidence behind each hit's score. ``places``: how many hits
        the caller will show (default ``limit``); every intent gets its share of them.

        Raises:
            QueryError: bad query or limit.
        """
        text = check_query(query)
        if limit < 1:
            raise QueryError("limit", "must be at least 1")
        return self.rank(
            text,
            self.store.state(),
            mode=mode,
            limit=limit,
            filters=filters,
            query_vectors=query_vectors,
            timings=timings,
            places=places,
        )

    def rank(
        self,
        text: str,
        state: IndexState,
        *,
        mode: SearchMode,
        limit: int,
        filters: Filters | None = None,
        query_vectors: NDArray[np.float32] | None = None,
        timings: dict[str, float] | None = None,
        places: int | None = None,
    ) -> list[tuple[Ranked, Evidence]]:
        """The legs, their fusion and the calibrated scores for a query already checked
        (:func:`check_query`) at index ``state`` (read once by the caller for every stage).

        Raises:
            StoreError, EmbedError.
        """
        timings = timings if timings is not None else {}
        cfg = self.config
        n = max(cfg.candidates, limit)
        tokens = query_tokens(text)
        lexical: list[Scored] = []
        runs: list[list[Scored]] = []
        embedded: list[NDArray[np.float32]] = []
        # The learned ranker reads the whole request's run of nearest tools too.
        ranker = self._ranker_for(mode)
        # The whole request's row: the ranker reads its run; without it, the vector leg may.
        whole = ranker is not None or (cfg.whole_row and mode is not SearchMode.BM25)
        whole_run: list[list[Scored]] = []

        brought: QueryRows | None = None if query_vectors is None else (query_vectors, None)

        def vector_leg() -> list[list[Scored]]:
            rows = self._query_rows(text, brought, whole, timings)
            embedded.append(rows[0])
            t0 = time.perf_counter()
            found = self.store.nearest_many(stacked(rows), limit=n, filters=filters, state=state)
            timings["vector_ms"] = (time.perf_counter() - t0) * 1000
            if rows[1] is not None:
                whole_run.append(found.pop())
            return found

        pool = self._lexical_beside(mode, tokens, query_vectors is None)
        pending = None
        if pool is not None:
            pending = pool.submit(self._lexical_timed, tokens, n, limit, filters, state, timings)
        if mode in (SearchMode.VECTOR, SearchMode.HYBRID):
            runs = vector_leg()
        if pending is not None:
            lexical = pending.result()
        elif mode in (SearchMode.BM25, SearchMode.HYBRID):
            lexical = self._lexical_timed(tokens, n, limit, filters, state, timings)
        vector = best_of_intents(runs if ranker is not None else runs + whole_run, n)
        fused = fuse_legs(cfg, mode, tokens, lexical, vector, state.tools)
        chances: dict[str, float] | None = None
        if ranker is not None and fused:
            t0 = time.perf_counter()
            legs = Legs(
                lexical, vector, fused, len(runs), state.tools, whole_run_of(runs, whole_run)
            )
            fused, chances = self._rerank(ranker, legs, tokens, state.version)
            timings["rerank_ms"] = (time.perf_counter() - t0) * 1000
        if self.boost is not None and embedded:
            fused = self.boost.apply(embedded[0], fused, state.version, ranked=bool(chances))
        if mode is not SearchMode.BM25 and cfg.intent_fusion and len(runs) > 1:
            fused = spread_intents(fused, intent_owners(runs), len(runs), places or limit)
        fused = self._boost_exact_name(text, fused)
        return scored_hits(
            self.calibration,
            mode,
            fused[:limit],
            lexical,
            vector,
            tools=state.tools,
            crowd=cfg.candidates,
            chances=chances,
        )

    def _lexical_beside(
        self, mode: SearchMode, tokens: list[str], embed: bool
    ) -> ThreadPoolExecutor | None:
        """The pool that runs the lexical leg while the caller runs the vector leg, or None
        (the legs then run in turn). A hybrid search with words runs it beside the vector leg
        on stores whose reads gain from overlapping, on the others beside the query embedding
        (``embed``: no vectors yet; onnxruntime lets go of the interpreter while it embeds).
        The embedding stays on the caller: the longer leg never waits for a pool thread to
        wake (docs/benchmarks/scale.md)."""
        pool = self._legs
        if mode is not SearchMode.HYBRID or not self.config.parallel_legs or not tokens:
            return None
        return pool if self._parallel_reads or embed else None

    def _lexical_timed(
        self,
        tokens: list[str],
        n: int,
        limit: int,
        filters: Filters | None,
        state: IndexState,
        timings: dict[str, float],
    ) -> list[Scored]:
        t0 = time.perf_counter()
        found = self._lexical(tokens, n, limit, filters, state)
        timings["lexical_ms"] = (time.perf_counter() - t0) * 1000
        return found

    def _query_rows(
        self, text: str, given: QueryRows | None, whole: bool, timings: dict[str, float]
    ) -> QueryRows:
        """The rows the vector leg searches: ``given`` or the request embedded now, and with
        ``whole`` the whole request's row when it has several intents (embedded alone when the
        caller brought the intents' rows)."""
        rows, extra = given if given is not None else self._embed_timed(text, timings, whole)
        if whole and extra is None and rows.shape[0] > 1:
            if self.config.whole_request == "intents_mean":
                return rows, intents_mean(rows, self.intents(text))
            extra = self._embed_whole(text, timings)
        return rows, extra

    def _embed_timed(self, text: str, timings: dict[str, float], whole: bool) -> QueryRows:
        t0 = time.perf_counter()
        rows = self.embed_request(text, whole)
        timings["embed_ms"] = (time.perf_counter() - t0) * 1000
        return rows

    def _embed_whole(self, text: str, timings: dict[str, float]) -> NDArray[np.float32]:
        """The whole request's row alone (the caller brought its intents' rows)."""
        t0 = time.perf_counter()
        row = self.embedder.embed_query([text.strip()])
        timings["whole_embed_ms"] = (time.perf_counter() - t0) * 1000
        return row

    def legs(self, query: str) -> tuple[Legs, list[str]]:
        """The legs of a hybrid search for ``query`` (no filters) and its analysed tokens, as
        the ranker sees them; the fit script learns from these.

        Raises:
            QueryError: bad query.
        """
        text = check_query(query)
        n = self.config.candidates
        tokens = query_tokens(text)
        state = self.store.state()
        lexical = self._lexical(tokens, n, n, None, state)
        rows = self.embed_request(text, True)
        runs = self.store.nearest_many(stacked(rows), limit=n, state=state)
        own = runs.pop() if rows[1] is not None else runs[0]
        vector = best_of_intents(runs, n)
        fused = fuse_legs(self.config, SearchMode.HYBRID, tokens, lexical, vector, state.tools)
        return Legs(lexical, vector, fused, len(runs), state.tools, own), tokens

    def candidate_features(
        self, legs: Legs, tokens: list[str], version: Hashable | None = None
    ) -> tuple[list[str], NDArray[np.float64]]:
        """The candidates the ranker re-scores (the first ``candidates`` fused hits) and their
        feature rows (search/rank.py), at the index's data ``version`` (None: read from the
        store; names and servers only: search/candidates.py); the fit script reads these."""
        ids = [h.id for h in legs.fused[: self.config.candidates]]
        return ids, candidate_rows(legs, ids, tokens, self.seen.get(ids, version, legs.tools))

    def _rerank(
        self, ranker: Ranker, legs: Legs, tokens: list[str], version: Hashable | None
    ) -> tuple[list[Scored], dict[str, float]]:
        ids, x = self.candidate_features(legs, tokens, version)
        return rerank(ranker, legs, ids, x)

    def _lexical(
        self, tokens: list[str], n: int, limit: int, filters: Filters | None, state: IndexState
    ) -> list[Scored]:
        if not tokens:
            return []
        depth = max(min(self.config.lexical_candidates, n), limit)
        weights = self.config.field_weights
        return self.store.lexical(
            tokens, limit=depth, filters=filters, weights=weights, state=state
        )

    def _boost_exact_name(self, text: str, fused: list[Scored]) -> list[Scored]:
        """A query that *is* a tool's name puts the tools with that name first (when on)."""
        if not self.config.exact_name_boost:
            return fused
        return exact_name_first(self.store.tools, text, fused)
