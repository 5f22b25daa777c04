"""The Store protocol and the URL-scheme registry that opens a backend.

A store holds tools, their lexical fields and their vectors, and answers the two retrieval legs
(``lexical`` and ``nearest``) with filters applied inside the backend. Scoring beyond each leg
(fusion, thresholds) lives in :mod:`toolscout.search`, so every backend ranks the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError
from toolscout.models import Filters, Scored, Tool

#: Lexical fields every store indexes, in column order. Enrichment fills the middle ones.
LEXICAL_FIELDS: tuple[str, ...] = (
    "name",
    "actions",
    "enhanced",
    "keywords",
    "use_cases",
    "domain",
    "description",
    "params",
)


@dataclass(frozen=True)
class IndexIdentity:
    """What defines an index's contents: vectors from other models or tokens from another
    analyzer cannot be mixed into it."""

    embedder: str
    dim: int
    analyzer: str


@dataclass(frozen=True)
class IndexEntry:
    """A tool as written to a store: its analysed lexical fields and its vector.

    ``text_hash`` covers the text that produced the fields and vector (tool + enrichment), so a
    store can tell an enrichment-only change from an unchanged tool.
    """

    tool: Tool
    fields: Mapping[str, str]
    vector: NDArray[np.float32]
    text_hash: str


class Store(Protocol):
    """Persistence plus the two retrieval legs. Every write is one transaction."""

    url: str

    def bind(self, identity: IndexIdentity) -> None:
        """Record the identity on a new index, or check it on an existing one.

        Raises: ConfigError on a mismatch (message says how to rebuild)."""
        ...

    def identity(self) -> IndexIdentity | None: ...

    def upsert(self, entries: Sequence[IndexEntry]) -> None:
        """Insert or replace tools with their fields and vectors, atomically. Raises: StoreError."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete tools by id; returns how many existed. Raises: StoreError."""
        ...

    def get(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound."""
        ...

    def get_many(self, ids: Sequence[str]) -> dict[str, Tool]: ...

    def hashes(self, filters: Filters | None = None) -> dict[str, tuple[str, str]]:
        """``{id: (content_hash, text_hash)}`` of the tools matching ``filters``."""
        ...

    def list_tools(
        self, filters: Filters | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[Tool]: ...

    def count(self, filters: Filters | None = None) -> int: ...

    def counts_by(self, column: str) -> dict[str, int]:
        """Tool counts grouped by ``server``, ``source`` or ``item_type``."""
        ...

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
    ) -> list[Scored]:
        """BM25 over the analysed fields (OR of tokens), best first; scores > 0."""
        ...

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Exact cosine nearest neighbours, best first; scores in -1..1."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def close(self) -> None: ...


StoreFactory = Callable[[str], Store]
_REGISTRY: dict[str, StoreFactory] = {}


def register(scheme: str, factory: StoreFactory) -> None:
    """Make ``open_store`` route URLs with ``scheme`` to ``factory``."""
    _REGISTRY[scheme] = factory


def _sqlite(url: str) -> Store:
    from toolscout.store.sqlite import SQLiteStore

    return SQLiteStore(url)


def _postgres(url: str) -> Store:
    from toolscout.store.postgres import PostgresStore

    return PostgresStore(url)


register("sqlite", _sqlite)
register("postgresql", _postgres)
register("postgres", _postgres)


def normalise_url(url_or_path: str) -> str:
    """Accept a bare file path as shorthand for ``sqlite:///<absolute path>``."""
    if "://" in url_or_path:
        return url_or_path
    return "sqlite:///" + str(Path(url_or_path).expanduser().resolve())


def open_store(url_or_path: str) -> Store:
    """Open the store a URL names (``sqlite:///x.db``, ``postgresql://...``) or a file path.

    Raises:
        ConfigError: unknown scheme.
        StoreError: the backend cannot be opened.
    """
    url = normalise_url(url_or_path)
    scheme = url.split("://", 1)[0].split("+", 1)[0]
    factory = _REGISTRY.get(scheme)
    if factory is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ConfigError(f"db: unknown store scheme {scheme!r} in {url!r}; use one of {known}")
    return factory(url)
