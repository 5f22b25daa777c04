"""SQLite FTS5's tokenizer and ``bm25()`` recomputed outside SQLite, for the stores that
score BM25 themselves (the PostgreSQL postings, the embedded store's in-memory lexical leg).
Both evaluate FTS5's formula (``fts5_aux.c``) with the same float operations in the same order::

    idf_i  = ln((N - n_i + 0.5) / (n_i + 0.5)), or IDF_FLOOR when that is <= 0
    f_i    = sum over fields c of w_c * tf_{i,c}            (in column order)
    score  = sum_i idf_i * ((f_i * (K1 + 1)) / (f_i + K1 * (1 - B + B * D / avgdl)))

and make the same tokens of the same text (a contract test tokenises every character of the
analyser's ranges with SQLite and compares).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence

from toolscout.store.base import LEXICAL_FIELDS

#: BM25's k1: no term contributes more than ``idf * (K1 + 1)`` to a score, whatever its
#: frequency and the document's length (FTS5's formula, with non-negative field weights).
K1 = 1.2
#: BM25's length normalisation.
B = 0.75
#: FTS5's IDF for terms in more than half the documents.
IDF_FLOOR = 1e-6


def idf(df: int, rows: int) -> float:
    """FTS5's IDF of a term in ``df`` of ``rows`` documents."""
    v = math.log((rows - df + 0.5) / (df + 0.5))
    return v if v > 0 else IDF_FLOOR


# Characters of the analyser's CJK ranges that FTS5's unicode61 tokenizer treats as separators
# (found by tokenising every character of those ranges with SQLite; a contract test re-checks).
_SEPARATORS = "\u3099\u309a\u309b\u309c\u30a0\u30fb"
_SIMPLE = re.compile(r"[a-z0-9 ]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _fold(ch: str) -> str:
    """unicode61's case folding and diacritic removal for one token character."""
    if ch.isascii():
        return ch.lower()
    if _CJK.match(ch):
        return ch
    base = "".join(c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) != "Mn")
    return (base or ch).lower()


def _is_token_char(ch: str) -> bool:
    if ch in _SEPARATORS:
        return False
    if _CJK.match(ch):
        return True
    category = unicodedata.category(ch)
    return category[0] in "LN" or category == "Co"


def fts5_tokens(text: str) -> list[str]:
    """Tokens FTS5's ``unicode61 remove_diacritics 2`` tokenizer makes of ``text``."""
    if _SIMPLE.fullmatch(text):
        return text.split()  # the analyser's usual output: nothing else to do
    tokens: list[str] = []
    current: list[str] = []
    for ch in text:
        if _is_token_char(ch):
            current.append(_fold(ch))
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return tokens


def query_terms(tokens: Sequence[str]) -> list[str]:
    """Terms of an OR query, one per FTS5 phrase and in order (duplicates count twice in
    FTS5's bm25, so they are kept). Empty phrases match nothing and are dropped."""
    terms: list[str] = []
    for token in tokens:
        terms.extend(fts5_tokens(token.replace('"', "")))
    return terms


def document_terms(fields: Mapping[str, str]) -> tuple[int, dict[str, list[int]]]:
    """A tool's token count and ``{term: [tf per LEXICAL_FIELDS column]}``."""
    width = len(LEXICAL_FIELDS)
    freqs: dict[str, list[int]] = {}
    total = 0
    for col, name in enumerate(LEXICAL_FIELDS):
        for term in fts5_tokens(fields.get(name, "")):
            total += 1
            row = freqs.get(term)
            if row is None:
                row = freqs[term] = [0] * width
            row[col] += 1
    return total, freqs
