"""Terms as SQLite's FTS5 makes them, for the PostgreSQL store's postings: the same tokens from
the same text, so both stores count the same term frequencies (a contract test tokenises every
character of the analyser's ranges with SQLite and compares)."""

from __future__ import annotations

from toolscout.store.base import LEXICAL_FIELDS
from toolscout.store.fts5 import document_terms, fts5_tokens, query_terms

__all__ = ["COPY_POSTINGS", "TF_COLUMNS", "document_terms", "fts5_tokens", "query_terms"]

#: One smallint column per lexical field, in LEXICAL_FIELDS order (schema migration 5).
TF_COLUMNS: tuple[str, ...] = tuple(f"tf{i + 1}" for i in range(len(LEXICAL_FIELDS)))
assert len(TF_COLUMNS) == 8, "the postings table has eight tf columns: add a migration"
#: The COPY statement that writes postings (term, doc, doc_len, tf per field).
COPY_POSTINGS = f"COPY postings (term, doc, doc_len, {', '.join(TF_COLUMNS)}) FROM STDIN"
