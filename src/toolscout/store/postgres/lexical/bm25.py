"""The BM25 formula, once: its constants, FTS5's IDF, the SQL expressions the statements in
:mod:`.sql` use and the numpy scorer :mod:`.cached` uses. Both evaluate the same float
operations in the same order as SQLite FTS5's ``bm25()`` (``fts5_aux.c``)::

    idf_i  = ln((N - n_i + 0.5) / (n_i + 0.5)), or IDF_FLOOR when that is <= 0
    f_i    = sum over fields c of w_c * tf_{i,c}            (in column order)
    score  = sum_i idf_i * ((f_i * (K1 + 1)) / (f_i + K1 * (1 - B + B * D / avgdl)))

so the stores' lexical scores are bit-identical.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from toolscout.store.fts5 import IDF_FLOOR, K1, B, idf
from toolscout.store.postgres.lexical.postings import DENSE_MAX, PostingList
from toolscout.store.postgres.lexical.terms import TF_COLUMNS

__all__ = [
    "DENSE_SPREAD",
    "IDF_FLOOR",
    "K1",
    "B",
    "bm25_scores",
    "field_sum_sql",
    "idf",
    "idf_floor_sql",
    "term_score_sql",
]


def _f8(value: float) -> str:
    return f"{float(value)!r}::float8"


def idf_floor_sql(raw: str) -> str:
    """SQL for FTS5's floor applied to the IDF expression ``raw``."""
    return f"CASE WHEN {raw} <= 0 THEN {_f8(IDF_FLOOR)} ELSE {raw} END"


def field_sum_sql(weights: Sequence[float], alias: str = "h") -> str:
    """SQL for FTS5's weighted term frequency of posting ``alias``, summed in column order."""
    terms = zip(weights, TF_COLUMNS, strict=True)
    return " + ".join(f"{_f8(w)} * {alias}.{c}" for w, c in terms)


def term_score_sql(f: str, doc_len: str) -> str:
    """SQL for one term's BM25 factor (to be multiplied by its IDF) given the weighted term
    frequency ``f`` and the document length ``doc_len``; avgdl from ``lexical_stats``."""
    return f"""((({f}) * ({_f8(K1)} + 1.0::float8))
                   / (({f}) + {_f8(K1)} * (1::float8 - {_f8(B)}
                      + {_f8(B)} * {doc_len}::float8 / (
                          SELECT tokens_indexed::float8 / rows_indexed::float8
                          FROM lexical_stats))))"""


#: Scores are summed in an array indexed by doc when the docs' range is at most this many times
#: the query's postings: allocating and scanning it then costs less than sorting the postings
#: (np.unique); the two cost the same at ~100x (measured, 1k-100k postings, 100k-10M docs).
#: Docs only grow (every insert, even one that updates, draws from the sequence), so the
#: range can outgrow the catalog after many syncs.
DENSE_SPREAD = 64


def bm25_scores(
    terms: Sequence[str],
    lists: dict[str, PostingList],
    df: dict[str, int],
    rows: int,
    avgdl: float,
    weights: Sequence[float],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Every doc holding a query term, and its BM25 score: the SQL statements' operations in
    their order (field sum in column order, terms summed in query order), so the same floats."""
    present = [t for t in terms if t in lists and lists[t].size]
    if not present:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    top_doc = max(lists[t].top for t in present)
    postings = sum(lists[t].size for t in present)
    dense = top_doc < DENSE_MAX and top_doc <= DENSE_SPREAD * postings + 65_536
    if dense:
        acc = np.zeros(top_doc + 1)
        seen = np.zeros(top_doc + 1, dtype=bool)
    else:
        universe, inverse = np.unique(
            np.concatenate([lists[t].docs for t in present]), return_inverse=True
        )
        acc = np.zeros(universe.shape[0])
        offsets = np.cumsum([0] + [lists[t].size for t in present])
    k1_plus_1 = K1 + 1.0
    norm = 1.0 - B
    for i, term in enumerate(present):
        plist = lists[term]
        tf = plist.tf.astype(np.float64)
        f = float(weights[0]) * tf[:, 0]
        for c in range(1, tf.shape[1]):
            f = f + float(weights[c]) * tf[:, c]
        length = (B * plist.doc_len.astype(np.float64)) / avgdl
        v = idf(df[term], rows) * ((f * k1_plus_1) / (f + K1 * (norm + length)))
        if dense:
            acc[plist.docs] += v
            seen[plist.docs] = True
        else:
            acc[inverse[offsets[i] : offsets[i + 1]]] += v
    if dense:
        docs = np.flatnonzero(seen).astype(np.int64)
        return docs, acc[docs]
    return universe.astype(np.int64), acc
