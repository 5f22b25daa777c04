"""SQLite FTS5's ``bm25()`` recomputed in PostgreSQL, so both stores rank lexical hits the same.

Why not ``tsvector``/``ts_rank``: ``ts_rank`` is not BM25, and ``setweight`` has four weight
classes for our eight fields, so no choice of weights makes PostgreSQL's ranking match the
embedded store's. Instead every tool's analysed fields are kept as rows of ``tool_terms``
(term, tool, token count, term frequency per field) and one SQL statement evaluates FTS5's
formula over them, operation by operation in the same order as ``fts5_aux.c``:

    idf_i  = ln((N - n_i + 0.5) / (n_i + 0.5)), or 1e-6 when that is <= 0
    f_i    = sum over fields c of w_c * tf_{i,c}
    score  = sum_i idf_i * ((f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl)))

with k1 = 1.2, b = 0.75, D the tool's token count, n_i the tools containing term i. The btree
on ``(term, tool_id)`` finds the candidates, which is what a GIN index on a ``tsvector`` would do.

One quirk is reproduced on purpose: the SQLite store's FTS5 table is ``contentless_delete=1``,
and for such tables FTS5 never decrements its row and token totals, so ``N`` and ``avgdl``
count every row ever inserted (an update is a delete plus an insert; ``reset`` keeps them).
``lexical_stats`` keeps the same running totals. Multi-token phrases are the one deviation:
a query token that FTS5 would split into several tokens (never the analyser's output) is
matched here as separate terms, not as a phrase.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from toolscout.store.base import LEXICAL_FIELDS

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


def bm25_sql(weights: Sequence[float], filter_sql: str | None) -> str:
    """The scoring statement. Parameters: the query terms (text[]), the filter's parameters
    when ``filter_sql`` is given (a condition on tools ``t``), the limit.

    Weights are inlined as float8 literals (they are floats, checked by the caller); the
    field sum runs in column order like FTS5's per-instance accumulation.
    """
    f_expr = " + ".join(f"{float(w)!r}::float8 * h.tf[{i + 1}]" for i, w in enumerate(weights))
    where = ""
    if filter_sql:
        where = f"WHERE hits.tool_id IN (SELECT t.id FROM tools t WHERE {filter_sql})"
    return f"""
        WITH q AS (
            SELECT term, ord FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)
        ),
        hits AS MATERIALIZED (
            SELECT q.ord, h.tool_id, h.doc_len, ({f_expr}) AS f
            FROM q JOIN tool_terms h ON h.term = q.term
        ),
        idf AS (
            SELECT d.ord,
                   CASE WHEN x.v <= 0 THEN 1e-6::float8 ELSE x.v END AS idf
            FROM (SELECT ord, count(*) AS n FROM hits GROUP BY ord) d
            CROSS JOIN LATERAL (
                SELECT ln((((SELECT rows_indexed FROM lexical_stats) - d.n)::float8 + 0.5::float8)
                          / (d.n::float8 + 0.5::float8)) AS v
            ) x
        ),
        s AS (
            SELECT hits.tool_id,
                   sum(idf.idf * ((hits.f * (1.2::float8 + 1.0::float8))
                       / (hits.f + 1.2::float8 * (1::float8 - 0.75::float8
                          + 0.75::float8 * hits.doc_len::float8 / (
                              SELECT tokens_indexed::float8 / rows_indexed::float8
                              FROM lexical_stats))))
                       ORDER BY hits.ord) AS score
            FROM hits JOIN idf ON idf.ord = hits.ord
            {where}
            GROUP BY hits.tool_id
        )
        SELECT s.tool_id, s.score FROM s
        ORDER BY s.score DESC, s.tool_id
        LIMIT %s
    """
