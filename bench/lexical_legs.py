"""Lexical legs compared by bench/lexical.py, their protocol and what they share: the store's own
(FTS5 and its posting index), tantivy and bm25s here, the legs that store BM25F term factors in
bench/lexical_impacts.py; all over the same analysed field texts
(``toolscout.search.document.lexical_fields``, the analyser's tokens).

Every leg takes the tools' eight analysed fields and the store's per-field weights
(``SearchConfig.field_weights``) and answers ``search(tokens, limit)`` with ``Scored`` hits,
best first, ties by id (each fetches a margin past ``limit`` and sorts by score, then id, as
the store does). How each one treats the fields:

* ``fts5``: the SQLite store itself (``FTS5Lexical``): one FTS5 column per field; ``bm25()``
  adds each field's occurrences times its weight into one term frequency and normalises by the
  row's whole length (a BM25F), Robertson IDF ``ln((N - n + 0.5) / (n + 0.5))`` (floored at
  1e-6), k1 1.2, b 0.75, weights given at query time.
* ``tantivy``: one tantivy text field per field (whitespace tokenizer: the tokens are already
  analysed; frequencies, no positions), a boolean OR of ``term^weight`` per field: a sum of
  per-field BM25s (each field its own length norm and IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))``),
  weights at query time. Block-max WAND top-k.
* ``bm25s``: one bag of tokens per tool, each field's tokens repeated ``2 x weight`` times (the
  weights are multiples of 0.5); k1 2.4 so that the doubled frequency saturates as FTS5's does,
  Robertson IDF; scores times FTS5's ``(k1 + 1)``, which bm25s's term factor leaves out. The
  length norm is the weighted bag's. Weights fixed at build time. Exhaustive scoring (numpy
  over the query terms' columns of a sparse matrix), then a partial sort.
* ``postings``: the SQLite store's own in-memory posting index (``store/sqlite/lex/``, forced
  on at any size): FTS5's formula, tokens and totals in numpy, weights at load time.
* ``qdrant``, ``qdrant_exact`` and ``impact`` store FTS5's BM25F term factor per tool and term
  at build time: bench/lexical_impacts.py.

Filters are not exercised here (every leg can push them: FTS5 through ``rowid IN``, tantivy a
``Must`` term clause on keyword fields, bm25s a weight mask, Qdrant a keyword payload index).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import bm25s
import numpy as np
import tantivy

from toolscout.models import Scored, Tool
from toolscout.search.text import ANALYZER_VERSION
from toolscout.store.base import LEXICAL_FIELDS, IndexEntry, IndexIdentity
from toolscout.store.sqlite.store import SQLiteStore

#: Hits fetched past ``limit`` so that ties at the cut order by id (as the store's TIE_MARGIN).
MARGIN = 32
K1, B = 1.2, 0.75

Doc = tuple[Tool, Mapping[str, str]]


def weighted_terms(
    fields: dict[str, str], weights: Sequence[float], vocab: dict[str, int]
) -> dict[int, float]:
    """A tool's BM25F term frequencies: each analysed field's token counts times its weight, by
    term number (new terms are numbered into ``vocab``)."""
    tf: dict[int, float] = {}
    for field, w in zip(LEXICAL_FIELDS, weights, strict=True):
        for tok in fields[field].split():
            key = vocab.setdefault(tok, len(vocab))
            tf[key] = tf.get(key, 0.0) + w
    return tf


class Leg(Protocol):
    name: str

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None: ...
    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]: ...
    def size_bytes(self) -> int: ...
    def facts(self) -> dict[str, int]: ...
    def close(self) -> None: ...


def folder_bytes(folder: Path) -> int:
    """Bytes the folder's files occupy on disk (allocated blocks: Qdrant's segments are sparse
    preallocated files whose length says little)."""
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


def ranked(pairs: Sequence[tuple[float, str]], limit: int) -> list[Scored]:
    """Best first, ties by id, positive scores only."""
    best = sorted((p for p in pairs if p[0] > 0), key=lambda p: (-p[0], p[1]))
    return [Scored(i, s) for s, i in best[:limit]]


class FTS5Leg:
    """The SQLite store's own leg, on a store holding only these tools (1-d dummy vectors)."""

    name = "fts5"

    def __init__(self, store: SQLiteStore | None = None) -> None:
        self.store = store
        self.weights: tuple[float, ...] = ()
        self.folder: Path | None = None

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None:
        self.folder, self.weights = folder, tuple(weights)
        folder.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStore(str(folder / "fts5.db"))
        self.store.bind(IndexIdentity("bench-lexical", 1, ANALYZER_VERSION))
        one = np.ones(1, dtype=np.float32)
        for start in range(0, len(docs), 5000):
            self.store.upsert(
                [IndexEntry(t, f, one, t.content_hash) for t, f in docs[start : start + 5000]]
            )

    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]:
        assert self.store is not None
        weights = self.weights or None
        return self.store.lexical(list(tokens), limit=limit, weights=weights)

    def size_bytes(self) -> int:
        """The FTS5 index's own pages (not the tools' rows)."""
        assert self.store is not None
        rows = self.store.database.query("SELECT sum(length(block)) FROM tools_fts_data", [])
        return int(rows[0][0] or 0)

    def facts(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


class PostingsLeg(FTS5Leg):
    """The SQLite store's in-memory posting index (``store/sqlite/lex/``), forced on: FTS5's
    scores from numpy; the size reported is its ``tools_terms`` rows."""

    name = "postings"

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None:
        self.folder, self.weights = folder, tuple(weights)
        folder.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStore(f"sqlite:///{folder / 'postings.db'}?lex_min_tools=0")
        self.store.bind(IndexIdentity("bench-lexical", 1, ANALYZER_VERSION))
        one = np.ones(1, dtype=np.float32)
        for start in range(0, len(docs), 5000):
            self.store.upsert(
                [IndexEntry(t, f, one, t.content_hash) for t, f in docs[start : start + 5000]]
            )
        self.store.lex.current(self.weights)  # loaded here, not inside the first timed search
        self.store.lex.wait_loaded(None)
        assert self.store.lex.current(self.weights) is not None

    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]:
        assert self.store is not None
        return self.store.lex.lexical(list(tokens), limit=limit, weights=self.weights)

    def size_bytes(self) -> int:
        assert self.store is not None
        rows = self.store.database.query(
            "SELECT sum(length(terms) + length(tf) + 16) FROM tools_terms", []
        )
        return int(rows[0][0] or 0)

    def facts(self) -> dict[str, int]:
        assert self.store is not None
        described = self.store.lex.describe()
        return {"postings": int(described["postings"]), "terms": int(described["terms"])}


class TantivyLeg:
    name = "tantivy"

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.weights: tuple[float, ...] = ()
        self.folder = Path()
        self.index: Any = None
        self.searcher: Any = None

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None:
        self.folder, self.weights = folder / "tantivy", tuple(weights)
        self.folder.mkdir(parents=True, exist_ok=True)
        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field("row", fast=True)
        for field in LEXICAL_FIELDS:
            builder.add_text_field(field, tokenizer_name="whitespace", index_option="freq")
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema, path=str(self.folder))
        writer = self.index.writer(heap_size=256_000_000)
        self.ids = []
        for row, (tool, fields) in enumerate(docs):
            self.ids.append(tool.id)
            doc = tantivy.Document(**{f: fields[f] for f in LEXICAL_FIELDS})
            doc.add_unsigned("row", row)
            writer.add_document(doc)
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]:
        clauses = [
            (
                tantivy.Occur.Should,
                tantivy.Query.boost_query(
                    tantivy.Query.term_query(self.schema, field, tok, index_option="freq"), w
                ),
            )
            for tok in tokens
            for field, w in zip(LEXICAL_FIELDS, self.weights, strict=True)
            if w > 0
        ]
        if not clauses:
            return []
        query = tantivy.Query.boolean_query(clauses)
        hits = self.searcher.search(query, limit + MARGIN, count=False).hits
        rows = self.searcher.fast_field_values("row", [addr for _, addr in hits])
        pairs = zip(hits, rows, strict=True)
        return ranked([(float(s), self.ids[int(r or 0)]) for (s, _), r in pairs], limit)

    def size_bytes(self) -> int:
        return folder_bytes(self.folder)

    def facts(self) -> dict[str, int]:
        return {"segments": int(self.searcher.num_segments)}

    def close(self) -> None:
        self.searcher = self.index = None


class BM25sLeg:
    name = "bm25s"
    #: bm25s's term factor is ``tf / (tf + k1 norm)``, without FTS5's ``(k1 + 1)``: with the
    #: doubled frequency and k1, ``2 tf / (2 tf + 2 k1 norm)`` is FTS5's factor over (k1 + 1).
    SCALE = K1 + 1

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.folder = Path()
        self.model: Any = None

    def build(self, docs: Sequence[Doc], weights: Sequence[float], folder: Path) -> None:
        self.folder = folder / "bm25s"
        repeat = [round(2 * w) for w in weights]
        corpus = []
        self.ids = []
        for tool, fields in docs:
            self.ids.append(tool.id)
            bag: list[str] = []
            for field, times in zip(LEXICAL_FIELDS, repeat, strict=True):
                # Interned: a million bags share one string per distinct token.
                bag.extend([sys.intern(t) for t in fields[field].split()] * times)
            corpus.append(bag)
        self.model = bm25s.BM25(k1=2 * K1, b=B, method="robertson")
        self.model.index(corpus, show_progress=False)
        self.model.save(str(self.folder), show_progress=False)

    def search(self, tokens: Sequence[str], limit: int) -> list[Scored]:
        known = [t for t in tokens if t in self.model.vocab_dict]
        if not known:
            return []
        scores = self.model.get_scores(known)
        k = min(limit + MARGIN, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        return ranked([(float(scores[i]) * self.SCALE, self.ids[i]) for i in top], limit)

    def size_bytes(self) -> int:
        return folder_bytes(self.folder)

    def facts(self) -> dict[str, int]:
        return {"postings": len(self.model.scores["data"])}

    def close(self) -> None:
        self.model = None
