"""The embedded store's lexical leg at scale: FTS5's bm25() over an in-memory posting index."""

from toolscout.store.sqlite.lex.index import PostingIndex
from toolscout.store.sqlite.lex.leg import DEFAULT_MIN_TOOLS, LexicalLeg

__all__ = ["DEFAULT_MIN_TOOLS", "LexicalLeg", "PostingIndex"]
