"""The Store protocol and the URL-scheme registry that opens a backend (the only place that
branches on backend names).

A store holds tools, their lexical fields and their vectors, and answers the two retrieval legs
(``lexical`` and ``nearest``) with filters applied inside the backend. Scoring beyond each leg
(fusion, thresholds) lives in :mod:`toolscout.search`, so every backend ranks the same way.

:class:`Store` itself holds identity, whole-index runs (bind, reset, staging, writer lock), tool
writes, meta rows, and the retrieval legs with the index state (:class:`SearchLegs`). The rest
is small roles it hands out whole, so a service asks for the role it uses: ``store.tools``,
``store.skills``, ``store.enrichments`` and ``store.feedback``, drawn in :mod:`.roles`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError
from toolscout.models import Filters, Scored, Tool
from toolscout.store.roles import EnrichStore, FeedbackStore, SkillStore, ToolReads

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
class IndexState:
    """What a search reads of the index once and hands to every stage: the data version every
    cache keys on (None: the store cannot tell) and the number of tools."""

    version: Hashable | None
    tools: int


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


class SearchLegs(Protocol):
    """The retrieval legs and what a search reads of the index once (its state); filters are
    applied inside the backend."""

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
        state: IndexState | None = None,
    ) -> list[Scored]:
        """BM25 over the analysed fields (OR of tokens), best first; scores > 0. ``state``:
        what the search read of the index (:meth:`state`); a leg that follows the rows in
        memory takes its version as the freshness it must reach instead of reading it again
        (None: the leg reads it)."""
        ...

    def nearest(
        self, vector: NDArray[np.float32], *, limit: int, filters: Filters | None = None
    ) -> list[Scored]:
        """Exact cosine nearest neighbours, best first; scores in -1..1."""
        ...

    def nearest_many(
        self,
        vectors: NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        state: IndexState | None = None,
    ) -> list[list[Scored]]:
        """``nearest`` for each row of ``vectors`` (one query's clauses), filters applied once.
        ``state``: as for :meth:`lexical` (its tool count may also spare a count)."""
        ...

    def count(self, filters: Filters | None = None, *, at: Hashable | None = None) -> int:
        """Tools matching ``filters``. ``at``: the data version the caller already read
        (:meth:`state`); a count remembered for that version is used without asking again."""
        ...

    def state(self) -> IndexState:
        """The data version and the tool count, read together (one round trip on a server).
        The version changes whenever anything in the index changes (a write from any
        process); every cache of index data keys on it (results, counts, stage 1's skill
        index, the legs' copies), and one place per store moves it: its write transaction.

        Raises: StoreError."""
        ...


class Store(SearchLegs, Protocol):
    """Persistence plus the two retrieval legs. Every write is one transaction. The roles
    beside it are handed out whole (:mod:`toolscout.store.roles`)."""

    url: str
    #: True when two reads can run at the same time to advantage (separate connections doing
    #: their work in a server); the searcher then runs its two legs concurrently.
    parallel_reads: bool

    @property
    def tools(self) -> ToolReads:
        """Tool rows by id, page, hash or column."""
        ...

    @property
    def skills(self) -> SkillStore:
        """Skills, assignments, classification state and suggestions."""
        ...

    @property
    def enrichments(self) -> EnrichStore:
        """The enrichment cache."""
        ...

    @property
    def feedback(self) -> FeedbackStore:
        """The log of observed calls."""
        ...

    def bind(self, identity: IndexIdentity) -> None:
        """Record the identity on a new index, or check it on an existing one.

        Raises: ConfigError on a mismatch (message says how to rebuild)."""
        ...

    def identity(self) -> IndexIdentity | None: ...

    def reset(self) -> None:
        """Drop every tool, its assignments and the recorded identity (``index --rebuild``);
        skills stay, without their vectors. Raises: StoreError."""
        ...

    def bulk(self) -> AbstractContextManager[None]:
        """A context for writing many tools at once: a store may defer index upkeep to its
        end (PostgreSQL rebuilds its HNSW graph once); others do nothing.

        Raises: StoreError."""
        ...

    def upsert(self, entries: Sequence[IndexEntry]) -> None:
        """Insert or replace tools with their fields and vectors, atomically. Raises: StoreError."""
        ...

    def staging(self) -> str:
        """The URL of a new, empty index beside this one (leftovers of a killed rebuild are
        removed first), for ``index --rebuild`` to build in.

        Raises: StoreError."""
        ...

    def replace_with(self, staging: str) -> None:
        """Make the index built at ``staging`` this index, atomically: every reader sees the
        old index or the new one, and a crash before the end leaves the old one. ``staging``
        is gone afterwards.

        Raises: StoreError."""
        ...

    def writer_lock(self) -> AbstractContextManager[None]:
        """Held for one whole write run (read hashes, embed, write, classify), so concurrent
        runs on one index take turns: the second sees the first's work and reports it as
        unchanged instead of claiming it too. Released when its process dies. Re-entrant.

        Raises: StoreError."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete tools by id; returns how many existed. Raises: StoreError."""
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
