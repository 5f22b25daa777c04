"""The in-memory posting index the embedded store's lexical leg scores: FTS5's ``bm25()``
in numpy, over every tool's terms (``tools_terms``), with the very float operations of
:mod:`toolscout.store.fts5` in FTS5's order, so scores are bit-identical to FTS5's.

Postings are grouped by term (``starts[t]:starts[t+1]``), each a tool position and its
weighted term frequency for the index's field weights. A load builds the ``base`` group from
every row; later changes go to a small ``delta`` group (rebuilt on each change) and mark the
tool's old position dead. Document frequencies are counted at query time over the live
postings, ``N`` and ``avgdl`` come from FTS5's own totals (see
:func:`~toolscout.store.sqlite.lex.rows.fts5_totals`), so a change never needs the index
rebuilt to stay exact; the leg reloads it when the delta grows large.

A query adds each term's ``idf * f (k1 + 1) / (f + k1 (1 - b + b D / avgdl))`` into a dense
array (many postings) or one over the touched tools (few), term by term in query order, then
partially sorts it; ties at the cut are ordered by tool id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.models import Scored
from toolscout.store.fts5 import K1, B, idf
from toolscout.store.sqlite.lex.rows import TermsRow, decode

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]
#: A query scores into an array as long as the positions when its postings are at least this
#: share of them; below, into one over the tools it touches (np.unique).
DENSE_SHARE = 1 / 16


@dataclass
class Group:
    """Postings grouped by term id: term ``t``'s are ``pos[starts[t]:starts[t+1]]``."""

    starts: Ints
    pos: NDArray[np.int32]
    f: Floats

    @classmethod
    def empty(cls) -> Group:
        return cls(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0))

    def span(self, term: int) -> tuple[int, int]:
        if term + 1 >= len(self.starts):
            return 0, 0
        return int(self.starts[term]), int(self.starts[term + 1])


def _group(terms: Ints, pos: Ints, f: Floats, vocab_size: int) -> Group:
    order = np.argsort(terms, kind="stable")
    counts = np.bincount(terms, minlength=vocab_size)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Group(starts, pos[order].astype(np.int32), f[order])


@dataclass
class Postings:
    """The rows' postings as arrays; one row's arrays come from :meth:`parse`."""

    terms: list[Ints] = field(default_factory=list)
    pos: list[Ints] = field(default_factory=list)
    f: list[Floats] = field(default_factory=list)
    size: int = 0

    def add(self, terms: Ints, position: int, f: Floats) -> None:
        self.terms.append(terms)
        self.pos.append(np.full(len(terms), position, dtype=np.int64))
        self.f.append(f)
        self.size += len(terms)

    def group(self, vocab_size: int) -> Group:
        if not self.terms:
            return Group(np.zeros(vocab_size + 1, np.int64), np.zeros(0, np.int32), np.zeros(0))
        return _group(
            np.concatenate(self.terms), np.concatenate(self.pos), np.concatenate(self.f), vocab_size
        )


class PostingIndex:
    """Every live tool's postings for one set of field weights. Not thread-safe for writes:
    the leg applies changes under its lock and searches read a consistent state."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)
        self.vocab: dict[str, int] = {}
        self.ids: list[str] = []
        self.rowids: Ints = np.zeros(0, np.int64)
        self.length: Floats = np.zeros(0)
        self.alive: NDArray[np.bool_] = np.zeros(0, bool)
        self.hashes: list[int] = []
        self.base = Group.empty()
        self.delta = Group.empty()
        self._delta_rows = Postings()
        #: Position of each rowid (-1: none), grown as rowids grow.
        self.where: NDArray[np.int64] = np.zeros(0, np.int64)
        self.dead = 0
        self.rows_total, self.tokens_total = 0, 0
        self.norm: Floats = np.zeros(0)

    # -- building -----------------------------------------------------------------------------
    def parse(self, row: TermsRow) -> tuple[Ints, Floats]:
        """The row's term ids (new terms join the vocabulary) and weighted frequencies, summed
        over its fields in column order (as FTS5 and the PostgreSQL store do)."""
        words = row.terms.split()
        terms = np.fromiter(
            (self.vocab.setdefault(w, len(self.vocab)) for w in words), np.int64, len(words)
        )
        index, col, count = decode(row.tf)
        f = np.bincount(index, weights=self.weights[col] * count, minlength=len(words))
        return terms, f.astype(np.float64, copy=False)

    def load(self, chunks: Any) -> None:
        """Build the base group from ``chunks`` (lists of rows, rowid order), a chunk at a
        time in numpy."""
        built = Postings()
        rowids: list[int] = []
        lengths: list[int] = []
        for chunk in chunks:
            first = len(rowids)
            for row in chunk:
                rowids.append(row.rowid)
                lengths.append(row.length)
                self.ids.append(row.tool_id)
                self.hashes.append(hash((row.length, row.terms, row.tf)))
            self._parse_chunk(chunk, first, built)
        self.rowids = np.asarray(rowids, dtype=np.int64)
        self.length = np.asarray(lengths, dtype=np.float64)
        self.alive = np.ones(len(rowids), bool)
        self.base = built.group(len(self.vocab))
        self._index_rowids()

    def _parse_chunk(self, chunk: Sequence[TermsRow], first: int, into: Postings) -> None:
        """:meth:`parse` of many rows at once (positions from ``first``)."""
        rows = len(chunk)
        words = " ".join(r.terms for r in chunk).split()
        vocab = self.vocab
        terms = np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), np.int64, len(words))
        per_row = np.fromiter((len(r.terms.split()) for r in chunk), np.int64, rows)
        records = np.fromiter((len(r.tf) // 4 for r in chunk), np.int64, rows)
        index, col, count = decode(b"".join(r.tf for r in chunk))
        offsets = np.cumsum(per_row) - per_row
        at = offsets[np.repeat(np.arange(rows), records)] + index
        f = np.bincount(at, weights=self.weights[col] * count, minlength=len(words))
        pos = np.repeat(np.arange(first, first + rows, dtype=np.int64), per_row)
        into.terms.append(terms)
        into.pos.append(pos)
        into.f.append(f.astype(np.float64, copy=False))
        into.size += len(terms)

    def _index_rowids(self) -> None:
        top = int(self.rowids.max()) + 1 if len(self.rowids) else 0
        where = np.full(max(top, len(self.where)), -1, np.int64)
        live = np.flatnonzero(self.alive)
        where[self.rowids[live]] = live
        self.where = where

    def position(self, rowid: int) -> int:
        return int(self.where[rowid]) if rowid < len(self.where) else -1

    def apply(self, rows: Sequence[TermsRow], gone: Sequence[int]) -> None:
        """Bring changed rows in and take deleted ones out (idempotent)."""
        alive = self.alive.copy()
        for rowid in gone:
            at = self.position(rowid)
            if at >= 0 and alive[at]:
                alive[at] = False
                self.dead += 1
        rowids: list[int] = []
        lengths: list[int] = []
        start = len(self.rowids)
        for row in rows:
            at = self.position(row.rowid)
            digest = hash((row.length, row.terms, row.tf))
            if at >= 0 and alive[at] and self.hashes[at] == digest:
                continue  # a skill change, or a replay: the terms are the same
            if at >= 0 and alive[at]:
                alive[at] = False
                self.dead += 1
            terms, f = self.parse(row)
            self._delta_rows.add(terms, start + len(rowids), f)
            rowids.append(row.rowid)
            lengths.append(row.length)
            self.ids.append(row.tool_id)
            self.hashes.append(digest)
        self.rowids = np.concatenate([self.rowids, np.asarray(rowids, dtype=np.int64)])
        self.length = np.concatenate([self.length, np.asarray(lengths, dtype=np.float64)])
        self.alive = np.concatenate([alive, np.ones(len(rowids), bool)])
        self.delta = self._delta_rows.group(len(self.vocab))
        self._index_rowids()

    def set_totals(self, rows: int, tokens: int) -> None:
        """FTS5's ``N`` and token total; the length norm of every position follows them."""
        if (rows, tokens) == (self.rows_total, self.tokens_total) and len(self.norm) == len(
            self.length
        ):
            return  # a write elsewhere in the file (feedback, enrichment): nothing moved
        self.rows_total, self.tokens_total = rows, tokens
        avgdl = tokens / rows if rows else 1.0
        self.norm = K1 * ((1.0 - B) + (B * self.length) / avgdl)

    @property
    def live(self) -> int:
        return len(self.rowids) - self.dead

    @property
    def delta_size(self) -> int:
        return self._delta_rows.size

    @property
    def base_size(self) -> int:
        return len(self.base.pos)

    # -- searching ----------------------------------------------------------------------------
    def _term(self, term: int) -> tuple[NDArray[np.int32], Floats, int]:
        """The term's live positions, frequencies and document frequency."""
        parts = [(g.pos[a:b], g.f[a:b]) for g in (self.base, self.delta) for a, b in [g.span(term)]]
        pos = np.concatenate([p for p, _ in parts]) if parts[1][0].size else parts[0][0]
        f = np.concatenate([x for _, x in parts]) if parts[1][0].size else parts[0][1]
        if self.dead:
            keep = self.alive[pos]
            pos, f = pos[keep], f[keep]
        return pos, f, len(pos)

    def scores(self, terms: Sequence[str]) -> tuple[Ints, Floats]:
        """Every tool holding a query term and its BM25 score (``terms``: FTS5's phrases, in
        order, duplicates kept)."""
        found: list[tuple[NDArray[np.int32], Floats]] = []
        for word in terms:
            term = self.vocab.get(word)
            if term is None:
                continue
            pos, f, hits = self._term(term)
            if not hits:
                continue
            weight = idf(hits, self.rows_total)
            found.append((pos, weight * ((f * (K1 + 1.0)) / (f + self.norm[pos]))))
        if not found:
            return np.zeros(0, np.int64), np.zeros(0)
        total = sum(len(p) for p, _ in found)
        if total >= DENSE_SHARE * len(self.rowids):
            acc = np.zeros(len(self.rowids))
            seen = np.zeros(len(self.rowids), bool)
            for pos, v in found:
                acc[pos] += v
                seen[pos] = True
            where = np.flatnonzero(seen)
            return where, acc[where]
        universe, inverse = np.unique(np.concatenate([p for p, _ in found]), return_inverse=True)
        acc = np.zeros(len(universe))
        at = 0
        for pos, v in found:
            acc[inverse[at : at + len(pos)]] += v
            at += len(pos)
        return universe.astype(np.int64), acc

    def top(
        self, terms: Sequence[str], limit: int, allowed: NDArray[np.bool_] | None = None
    ) -> list[Scored]:
        """The ``limit`` best, score then id (``allowed``: a mask over positions)."""
        pos, score = self.scores(terms)
        if allowed is not None and len(pos):
            keep = allowed[pos]
            pos, score = pos[keep], score[keep]
        if limit <= 0 or not len(pos):
            return []
        if len(pos) > limit:
            kth = np.partition(score, len(score) - limit)[len(score) - limit]
            keep = score >= kth
            pos, score = pos[keep], score[keep]
        ids = self.ids
        ranked = sorted(
            ((float(s), ids[int(p)]) for p, s in zip(pos, score, strict=True)),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [Scored(i, s) for s, i in ranked[:limit]]

    def mask(self, rowids: Sequence[int]) -> NDArray[np.bool_]:
        """Positions of the live tools among ``rowids``."""
        allowed = np.zeros(len(self.rowids), bool)
        found = np.asarray(rowids, dtype=np.int64)
        at = self.where[found[found < len(self.where)]]
        allowed[at[at >= 0]] = True
        return allowed
