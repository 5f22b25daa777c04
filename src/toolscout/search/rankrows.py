"""The learned ranker's inputs (search/rank.py): one row of :data:`FEATURES` per (request,
candidate), from what one hybrid search's legs returned (:class:`Legs`) and the ranker's view of
each candidate (search/candidates.py).

A search re-scores its first 100 fused candidates, so the rows are built a feature at a time:
every leg's run is read once, against one map from tool id to row (by comprehensions, which
read a slot faster than ``map`` over ``attrgetter`` on CPython 3.11, or by ``map`` over C
callables), and the rest are numpy operations on whole columns.
Built a row at a time, they cost more than the trees; tests/support/rank_reference.py builds
them that way, and the two agree to the bit (tests/search/test_candidate_cache.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, count, repeat

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Scored, Tool
from toolscout.search.candidates import Candidate, candidate, missing

#: The ranker's inputs, in column order (search/rank.py's docstring says what each is).
FEATURES: tuple[str, ...] = (
    "intents",
    "log_tools",
    "lexical_evidence",
    "best_cosine",
    "median_cosine",
    "query_tokens",
    "cosine",
    "cosine_gap",
    "cosine_z",
    "vector_rank",
    "lexical",
    "lexical_relative",
    "lexical_rank",
    "fused",
    "fused_rank",
    "name_overlap",
    "name_covered",
    "server_best_gap",
    "server_share",
    "rrf",
    "whole_cosine",
    "whole_gap",
    "whole_z",
    "whole_rank",
)

#: The request's own columns, first in :data:`FEATURES`: one value for all its candidates.
REQUEST_COLUMNS = 6

#: The whole request's columns, last in :data:`FEATURES`.
WHOLE_COLUMNS = 4

#: The k of the reciprocal-rank feature, as in RRF.
RRF_K = 60.0

_HAS = frozenset.__contains__
#: Up to this many request tokens, a name's overlap is counted a token at a time.
_FEW_TOKENS = 2


@dataclass(frozen=True)
class Legs:
    """What one hybrid search's legs returned, best first. ``whole``: the nearest tools to the
    whole request's row (for a request of one intent, the vector leg's run)."""

    lexical: Sequence[Scored]
    vector: Sequence[Scored]
    fused: Sequence[Scored]
    intents: int
    tools: int
    whole: Sequence[Scored] = ()


def features(
    legs: Legs, candidates: Sequence[str], tokens: Sequence[str], tools: Mapping[str, Tool]
) -> NDArray[np.float64]:
    """One row of :data:`FEATURES` per candidate. ``tokens``: the request's analysed tokens;
    ``tools``: the candidates' tools (a missing one counts as an empty tool)."""
    seen = {
        tid: candidate(tid, tools[tid].name, tools[tid].server) if tid in tools else missing(tid)
        for tid in candidates
    }
    return candidate_rows(legs, candidates, tokens, seen)


def candidate_rows(
    legs: Legs, candidates: Sequence[str], tokens: Sequence[str], seen: Mapping[str, Candidate]
) -> NDArray[np.float64]:
    """:func:`features` from the ranker's view of each candidate (search/candidates.py), which
    ``seen`` holds for every one of them.

    Built a feature at a time: each leg's run is walked once, against one map from id to row,
    and the rest are numpy operations on whole columns (a search re-scores 100 candidates,
    where a row at a time cost more than the trees). The rows are the transpose of the columns
    (a view)."""
    k = len(candidates)
    row_of = dict(zip(candidates, range(k), strict=True))
    views = list(map(seen.__getitem__, candidates))
    idf = math.log(legs.tools + 1.0)
    own_whole = bool(legs.whole) and legs.whole is not legs.vector
    runs = [legs.vector, legs.lexical, legs.fused, *([legs.whole] if own_whole else [])]
    # A search's candidates are the fused run's head, in its order: that run is not walked.
    head = len(row_of) == k and [h.id for h in legs.fused[:k]] == list(candidates)
    placed = _Placed(runs, row_of, k, heads=2 if head else None)
    crowd = placed.scores(0)
    best_cos = float(crowd[0]) if crowd.size else 0.0
    best_lex = legs.lexical[0].score if legs.lexical else 0.0
    query = set(tokens)
    cols = np.empty((len(FEATURES), k), dtype=np.float64)
    cols[:REQUEST_COLUMNS] = np.array(
        [
            float(legs.intents),
            math.log(legs.tools + 1.0),
            best_lex / idf,
            best_cos,
            _median(crowd),
            float(len(query)),
        ]
    )[:, None]
    missing = [float(crowd[-1]) if crowd.size else 0.0, 0.0, 0.0]
    if own_whole:
        missing.append(float(placed.scores(3)[-1]))
    score, rank = placed.place(missing)
    cos, lex = score[0], score[1]
    _cosine_columns(cols[6:10], crowd, cos, rank[0])
    np.divide(lex, idf, out=cols[10])
    if best_lex > 0:
        np.divide(lex, best_lex, out=cols[11])
    else:
        cols[11] = 0.0
    np.log1p(rank[1], out=cols[12])
    cols[13] = score[2]
    np.log1p(rank[2], out=cols[14])
    _name_columns(cols[15:17], [v.name for v in views], query)
    _server_columns(cols[17:19], legs.vector, row_of, cos, [v.server for v in views])
    # Reciprocal ranks as RRF sums them: a tool the lexical leg did not return adds nothing.
    reciprocal = np.add(rank[:2], RRF_K)
    np.divide(1.0, reciprocal, out=reciprocal)
    reciprocal[1, rank[1] > len(legs.lexical)] = 0.0
    np.add(reciprocal[0], reciprocal[1], out=cols[19])
    cols[19] *= RRF_K
    if own_whole:
        _cosine_columns(cols[20:24], placed.scores(3), score[3], rank[3])
    elif legs.whole:
        # A request of one intent: its whole run is the vector leg's, column for column.
        cols[20:24] = cols[6:10]
    else:
        cols[20:24] = 0.0
    return cols.T


def copied_columns(legs: Legs) -> tuple[tuple[int, int], ...]:
    """Pairs (column, original) whose values :func:`candidate_rows` copies for ``legs``: a
    request of one intent's whole-request columns are its vector leg's (the trees then search
    each pair once: search/forest.py)."""
    return _WHOLE_COPIES if legs.whole and legs.whole is legs.vector else ()


#: The whole request's columns and the vector leg's they repeat for a request of one intent
#: (``cols[20:24] = cols[6:10]`` above).
_WHOLE_COPIES = tuple(zip(range(20, 24), range(6, 10), strict=True))


class _Placed:
    """Runs of scored tools against the candidates' rows, all placed in one pass: for each run,
    each candidate's score in it and its place from 1."""

    def __init__(
        self,
        runs: Sequence[Sequence[Scored]],
        row_of: Mapping[str, int],
        k: int,
        heads: int | None = None,
    ):
        """``heads``: a run whose first ``k`` tools are the candidates, row for row (only those
        are placed: the tools after them are no candidates, and every candidate is found)."""
        self.k = k
        self.sizes = [k if r == heads else len(run) for r, run in enumerate(runs)]
        self.starts = [0, *accumulate(self.sizes)]
        # Run r's tools land in row r of a grid one column wider than the candidates; the
        # spare column takes those that are not candidates. Comprehensions: the interpreter's
        # own reads of a slot beat map() over attrgetter here.
        found: list[float] = []
        at: list[int] = []
        get = row_of.get
        for r, run in enumerate(runs):
            base = r * (k + 1)
            if r == heads:
                found += [h.score for h in run[:k]]
                at += range(base, base + k)
            else:
                found += [h.score for h in run]
                at += [get(h.id, k) + base for h in run]
        self.found = np.fromiter(found, dtype=np.float64, count=len(found))
        self.at = np.fromiter(at, dtype=np.intp, count=len(at))

    def scores(self, r: int) -> NDArray[np.float64]:
        """Run ``r``'s own scores, in its order."""
        return self.found[self.starts[r] : self.starts[r + 1]]

    def place(self, missing: Sequence[float]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per run (rows) and candidate (columns): the candidate's score in the run (the run's
        ``missing`` when it is not there) and its place from 1 (one past the run's end)."""
        n = len(self.sizes)
        grid = np.empty((2, n, self.k + 1), dtype=np.float64)
        grid[...] = np.array([missing, [size + 1.0 for size in self.sizes]])[:, :, None]
        flat = grid.reshape(2, -1)
        flat[0, self.at] = self.found
        # Each tool's place in its own run: its index in all runs, less where its run starts.
        starts = np.array(self.starts[:-1], dtype=np.float64).repeat(self.sizes)
        flat[1, self.at] = np.arange(1.0, len(self.at) + 1.0) - starts
        return grid[0, :, : self.k], grid[1, :, : self.k]


def _median(crowd: NDArray[np.float64]) -> float:
    """``np.median(crowd)`` (0 for none), from one partition."""
    n = crowd.size
    if n == 0:
        return 0.0
    half = n // 2
    part = crowd.copy()
    # The array's own methods: numpy's module-level wrappers add a Python frame each.
    if n % 2:
        part.partition(half)
        return float(part[half])
    part.partition((half - 1, half))
    low, high = part[half - 1 : half + 1].tolist()
    # The mean of the two middle values as numpy takes it: their sum, halved.
    return float(low + high) / 2.0


def _cosine_columns(
    out: NDArray[np.float64],
    crowd: NDArray[np.float64],
    sims: NDArray[np.float64],
    rank: NDArray[np.float64],
) -> None:
    """Into ``out``, per candidate: its cosine in a run of nearest tools (``crowd``, best
    first), the gap to the run's best, its z-score in the run and its log rank (``rank``: its
    place from 1)."""
    n = crowd.size
    # ``crowd.mean()`` and ``crowd.std()`` with the same operations on the same floats (the
    # same bits: np.add.reduce is what ``.sum()`` runs), without numpy's Python-level
    # wrappers: a tenth of the rows' time.
    mu = float(np.add.reduce(crowd)) / n if n else 0.0
    sd = 1.0
    if n > 1:
        dev = crowd - mu
        dev *= dev
        sd = math.sqrt(float(np.add.reduce(dev)) / n)
    out[0] = sims
    np.subtract(sims, float(crowd[0]) if crowd.size else 0.0, out=out[1])
    np.subtract(sims, mu, out=out[2])
    out[2] /= max(sd, 1e-6)
    np.log1p(rank, out=out[3])


def _name_columns(
    out: NDArray[np.float64], names: Sequence[frozenset[str]], query: set[str]
) -> None:
    """Into ``out``: how much of each candidate's name the request says, and how much of the
    request its name covers."""
    if not query:
        out[:] = 0.0
        return
    k = len(names)
    if len(query) <= _FEW_TOKENS:
        # A token at a time: a membership test per name, no set built for each.
        first, *rest = query
        out[0] = np.fromiter(map(_HAS, names, repeat(first)), dtype=np.float64, count=k)
        for token in rest:
            out[0] += np.fromiter(map(_HAS, names, repeat(token)), dtype=np.float64, count=k)
    else:
        out[0] = np.fromiter(map(len, map(query.intersection, names)), dtype=np.float64, count=k)
    out[1] = out[0]
    out[0] /= np.maximum(np.fromiter(map(len, names), dtype=np.float64, count=k), 1.0)
    out[1] /= len(query)


def _server_columns(
    out: NDArray[np.float64],
    vector: Sequence[Scored],
    row_of: Mapping[str, int],
    cos: NDArray[np.float64],
    servers: Sequence[str],
) -> None:
    """Into ``out``, a tool's server peers: the best cosine among them (a request for one API
    often fits several of its endpoints), as a gap to the vector leg's best, and their share of
    the vector leg's first ten."""
    # Each candidate's peer group: the row of the first candidate with its server.
    group_of: dict[str, int] = {}
    groups = list(map(group_of.setdefault, servers, count()))
    # How many of the vector leg's first ten each group holds (only groups that hold some).
    top: dict[int, float] = {}
    for h in vector[:10]:
        i = row_of.get(h.id)
        # A tool that is no candidate is a group of its own (its id stands for its server).
        g = group_of.get(h.id) if i is None else groups[i]
        if g is not None:
            top[g] = top.get(g, 0.0) + 1.0
    if len(group_of) == len(servers):
        # No two candidates share a server: each is its own group.
        np.maximum(cos, -1.0, out=out[0])
        out[1] = 0.0
        out[1, list(top)] = list(top.values())
    else:
        group = np.array(groups, dtype=np.intp)
        best = np.empty(len(servers))
        best.fill(-1.0)
        np.maximum.at(best, group, cos)
        out[0] = best[group]
        held = np.zeros(len(servers))
        held[list(top)] = list(top.values())
        out[1] = held[group]
    out[0] -= vector[0].score if vector else 0.0
    out[1] /= max(1, min(10, len(vector)))
