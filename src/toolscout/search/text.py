"""Text analysis shared by every lexical index: identifier splitting, stemming, stopwords, CJK.

The same :func:`analyze` runs on tool text at index time and on queries at search time, so a
store only ever sees plain lower-case ASCII/CJK tokens. That makes FTS query syntax impossible to
inject: every token is quoted and contains only letters and digits.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

#: Bump when tokenisation changes: stores record it and refuse to mix versions.
ANALYZER_VERSION = "a3"

_STEMMER = Stemmer.Stemmer("english")

# English function words plus words every tool description uses without meaning anything.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves also may might must shall
    let lets please want wants need needs like would im ive youre dont doesnt cant wont hi hello
    thanks thank e g eg ie etc us s t
    """.split()
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def split_identifier(word: str) -> list[str]:
    """Split ``getUserID`` / ``get_user_id`` / ``get-user-id`` into lower-case parts."""
    parts: list[str] = []
    for run in re.split(r"[^A-Za-z0-9]+", word):
        if not run:
            continue
        for piece in _CAMEL.split(run):
            if piece:
                parts.append(piece.lower())
    return parts


def _cjk_tokens(run: str) -> list[str]:
    # Chinese/Japanese have no spaces: index single characters and overlapping bigrams.
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


@lru_cache(maxsize=262144)
def _run_tokens(run: str, keep_stopwords: bool) -> tuple[str, ...]:
    """The tokens of one letter-or-digit run. Cached: tool texts repeat their words, and
    splitting and stemming each occurrence was most of an index build's analysis time."""
    if _CJK.match(run):
        return tuple(_cjk_tokens(run))
    return tuple(
        _stem(part)
        for part in split_identifier(run)
        if (keep_stopwords or part not in STOPWORDS) and len(part) <= 40
    )


def analyze(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Turn text into index tokens: split identifiers, drop stopwords, stem, CJK bigrams."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)  # ASCII is already in NFKC form
    tokens: list[str] = []
    for run in _ALNUM_RUN.findall(text):
        tokens.extend(_run_tokens(run, keep_stopwords))
    return tokens


def identifier_key(name: str) -> str:
    """A spelling-independent key for a tool name: ``Create-Issue`` == ``create_issue``."""
    return "".join(split_identifier(unicodedata.normalize("NFKC", name)))


def name_tokens(name: str) -> list[str]:
    """Tokens for a tool's name: its analysed parts plus one joined token for exact-name matches."""
    tokens = analyze(name, keep_stopwords=True)
    key = identifier_key(name)
    if key and len(split_identifier(name)) > 1 and len(key) <= 60:
        tokens.append("x" + key)
    return tokens


def query_tokens(query: str) -> list[str]:
    """Distinct analysed tokens of a query plus the joined exact-name token, first-seen order."""
    seen: dict[str, None] = {}
    for tok in analyze(query):
        seen.setdefault(tok, None)
    key = identifier_key(query)
    if key and " " not in query.strip() and len(split_identifier(query)) > 1 and len(key) <= 60:
        seen.setdefault("x" + key, None)
    return list(seen)


def split_sentences(text: str) -> list[str]:
    """Split a long request into its clauses (sentences and question parts)."""
    parts = re.split(r"(?<=[.!?。！？;；])\s+|\n+", text.strip())
    return [p.strip() for p in parts if len(p.strip()) > 3]
