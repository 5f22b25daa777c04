"""Terms as SQLite's FTS5 makes them, for the PostgreSQL store's postings: the same tokens from
the same text, so both stores count the same term frequencies (a contract test tokenises every
character of the analyser's ranges with SQLite and compares)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from toolscout.store.base import LEXICAL_FIELDS

#: One smallint column per lexical field, in LEXICAL_FIELDS order (schema migration 5).
TF_COLUMNS: tuple[str, ...] = tuple(f"tf{i + 1}" for i in range(len(LEXICAL_FIELDS)))
assert len(TF_COLUMNS) == 8, "the postings table has eight tf columns: add a migration"
#: The COPY statement that writes postings (term, doc, doc_len, tf per field).
COPY_POSTINGS = f"COPY postings (term, doc, doc_len, {', '.join(TF_COLUMNS)}) FROM STDIN"

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
