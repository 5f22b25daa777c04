"""The Store protocol, its role protocols, and the URL-scheme registry that opens a backend
(the only place that branches on backend names).

A store holds tools, their lexical fields and their vectors, and answers the two retrieval legs
(``lexical`` and ``nearest``) with filters applied inside the backend. Scoring beyond each leg
(fusion, thresholds) lives in :mod:`toolscout.search`, so every backend ranks the same way.

The protocol is small roles, each handed out whole, so a service asks for the role it uses:

* :class:`Store` itself: identity, whole-index runs (bind, reset, staging, writer lock), tool
  writes, meta rows, and the retrieval legs with the index state (:class:`SearchLegs`);
* ``store.tools`` (:class:`ToolReads`): tool rows by id, page, hash or column;
* ``store.skills`` (:class:`SkillStore`): skills, assignments, classification state, suggestions;
* ``store.enrichments`` (:class:`EnrichStore`): the enrichment cache;
* ``store.feedback`` (:class:`FeedbackStore`): the log of observed calls.
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
from toolscout.models import JSON, Filters, Scored, Skill, SkillAssignment, Suggestion, Tool

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


@dataclass(frozen=True)
class Classified:
    """A tool's classification outcome, written with ``SkillStore.replace_assignments``:
    its skills (1-3, one primary) and the content hash it was classified at."""

    tool_id: str
    content_hash: str
    classifier: str
    assignments: tuple[SkillAssignment, ...]


class ToolReads(Protocol):
    """Tool rows (table ``tools``) read by id, page, hash or column; every method raises
    StoreError when the backend fails."""

    def get(self, tool_id: str) -> Tool:
        """Raises: ToolNotFound."""
        ...

    def get_many(self, ids: Sequence[str]) -> dict[str, Tool]: ...

    def get_light(self, ids: Sequence[str]) -> dict[str, Tool]:
        """Tools without their schemas (``input_schema``/``output_schema`` None): the cheap
        load for ranked results; ``schemas`` loads the rest only when asked."""
        ...

    def light_rows(self, ids: Sequence[str]) -> dict[str, tuple[Tool, int]]:
        """``get_light`` plus each tool's integer row key in the store (its ``db_id``)."""
        ...

    def schemas(self, ids: Sequence[str]) -> dict[str, JSON | None]:
        """Input schemas by tool id; a schema that cannot be decoded maps to None."""
        ...

    def hashes(self, filters: Filters | None = None) -> dict[str, tuple[str, str]]:
        """``{id: (content_hash, text_hash)}`` of the tools matching ``filters``."""
        ...

    def list_tools(
        self, filters: Filters | None = None, *, offset: int = 0, limit: int = 100
    ) -> list[Tool]: ...

    def counts_by(self, column: str) -> dict[str, int]:
        """Tool counts grouped by ``server``, ``source``, ``item_type`` or ``category``."""
        ...

    def ids_where(self, column: str, value: str) -> list[str]:
        """Ids of the tools whose ``server``, ``source``, ``item_type`` or ``category`` is
        ``value``, in id order."""
        ...


class SkillStore(Protocol):
    """Skills, tool-skill assignments, classification state and the suggestion queue.

    Tables: ``skills``, ``tool_skills``, ``tool_classification``, ``skill_suggestions``.
    Deleting a tool (``Store.delete``/``reset``) also deletes its assignments and state.
    Vectors are float32 rows of the index dimension, stored as raw bytes.
    """

    def insert_skill(self, skill: Skill) -> None:
        """Raises: SkillExists."""
        ...

    def update_skill(self, skill: Skill) -> None:
        """Replace every field of an existing skill. Raises: SkillNotFound."""
        ...

    def get_skill(self, skill_id: str) -> Skill:
        """Raises: SkillNotFound."""
        ...

    def list_skills(self, *, include_inactive: bool = True) -> list[Skill]:
        """Skills ordered by id."""
        ...

    def skill_tool_counts(self) -> dict[str, int]:
        """``{skill_id: number of tools assigned}`` (skills with no tools are absent)."""
        ...

    def set_skill_vectors(self, vectors: Mapping[str, NDArray[np.float32] | None]) -> None:
        """Store (or clear, with None) the membership centroid of each skill."""
        ...

    def skill_vectors(self) -> dict[str, NDArray[np.float32]]:
        """Membership centroids of every skill that has one."""
        ...

    def set_skill_profile(self, skill_id: str, vector: NDArray[np.float32], text_hash: str) -> None:
        """Store the embedding of a skill's own text (description, keywords, examples)."""
        ...

    def skill_profiles(self) -> dict[str, tuple[str, NDArray[np.float32]]]:
        """``{skill_id: (text_hash, vector)}`` for skills whose profile was embedded."""
        ...

    def replace_assignments(self, results: Sequence[Classified]) -> set[str]:
        """Replace each tool's assignments and record it as classified at its content hash,
        in one transaction; returns the skill ids whose membership changed."""
        ...

    def mark_classify_failed(self, tool_id: str, content_hash: str, error: str) -> None:
        """Record a failed classification (retried by the next batch run)."""
        ...

    def classification_state(self) -> dict[str, tuple[str, str]]:
        """``{tool_id: (content_hash, status)}``; status is ``done`` or ``failed``."""
        ...

    def assignments(self, tool_ids: Sequence[str]) -> dict[str, list[SkillAssignment]]:
        """Each tool's assignments, most confident first (tools without any are absent)."""
        ...

    def skill_members(self, skill_ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
        """``{skill_id: [(tool_id, confidence), ...]}`` for the given skills."""
        ...

    def add_suggestion(self, suggestion: Suggestion) -> int:
        """Queue a proposed skill (``id`` is ignored); returns the new id."""
        ...

    def get_suggestion(self, suggestion_id: int) -> Suggestion | None: ...

    def list_suggestions(self, status: str | None = "pending") -> list[Suggestion]:
        """Suggestions with that status (all when None), oldest first."""
        ...

    def set_suggestion_status(self, suggestion_id: int, status: str, reason: str | None) -> None:
        """Raises: SkillError when there is no such suggestion."""
        ...


@dataclass(frozen=True)
class EnrichmentRecord:
    """One cached enrichment row, written and read by ``toolscout.enrich.cache``.

    ``kind`` is ``tool`` (``key`` = tool id) or ``profile`` (``key`` = server or category);
    ``enricher`` names the enricher and its version; ``input_hash`` is the hash of what the
    enrichment was made from; ``payload`` is its JSON (empty when ``status`` is ``failed``);
    ``created_at`` is seconds since the epoch; ``tokens`` counts LLM tokens spent on it.
    """

    kind: str
    key: str
    enricher: str
    input_hash: str
    payload: str
    status: str
    error: str
    created_at: float
    tokens: int


class EnrichStore(Protocol):
    """The enrichment cache (table ``enrichments``, primary key kind + key + enricher).

    Plain reads and upserts: freshness rules live in ``toolscout.enrich.cache``.
    """

    def get_enrichments(
        self, kind: str, keys: Sequence[str], enricher: str
    ) -> dict[str, EnrichmentRecord]:
        """Rows of ``kind`` made by ``enricher`` for ``keys`` (absent keys are left out).

        Raises: StoreError."""
        ...

    def put_enrichments(self, records: Sequence[EnrichmentRecord]) -> None:
        """Insert or replace rows by (kind, key, enricher), in one transaction.

        Raises: StoreError."""
        ...

    def delete_enrichments(self, kind: str, keys: Sequence[str]) -> int:
        """Delete rows of ``kind`` for ``keys`` (every enricher); returns how many.

        Raises: StoreError."""
        ...

    def enrichment_summary(self) -> list[tuple[str, str, str, int, int]]:
        """``(enricher, kind, status, rows, tokens)`` per group, ordered by the first three.

        Raises: StoreError."""
        ...


@dataclass(frozen=True)
class FeedbackRecord:
    """One observed call (``toolscout.feedback``): after ``query`` was searched and ``shown``
    listed, ``tool_id`` was called and ended in ``outcome`` (``success`` or ``error``).

    ``id`` is assigned by the store (0 before it is written); ``created_at`` is seconds since
    the epoch; ``source`` says who recorded it (``gateway``, ``api``); ``vector`` is the
    request's embedding by ``embedder`` (None when the request is unknown or not embedded).
    """

    id: int
    created_at: float
    query: str
    tool_id: str
    outcome: str
    shown: tuple[str, ...]
    source: str
    embedder: str
    vector: NDArray[np.float32] | None = None


class FeedbackStore(Protocol):
    """The feedback log (table ``feedback``): what agents called after which request.

    Rows belong to the index they are stored with; deleting a tool keeps its rows (they are
    history, and a tool that comes back gets its history back). Every write moves the data
    version, so cached results see new feedback at once.
    """

    def add_feedback(self, records: Sequence[FeedbackRecord], *, keep: int) -> list[int]:
        """Append ``records`` and delete the oldest rows beyond the newest ``keep``, in one
        transaction; returns the new ids. Raises: StoreError."""
        ...

    def list_feedback(
        self, *, tool_id: str | None = None, limit: int = 100, vectors: bool = False
    ) -> list[FeedbackRecord]:
        """Rows newest first (with their vectors when ``vectors``). Raises: StoreError."""
        ...

    def clear_feedback(self, tool_id: str | None = None) -> int:
        """Delete every row (of ``tool_id`` only, when given); returns how many.

        Raises: StoreError."""
        ...

    def feedback_summary(self) -> dict[str, int]:
        """``rows``, ``success``, ``error``, ``tools`` (distinct tools called) and ``last_id``
        (0 when empty). Raises: StoreError."""
        ...


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
    beside it are handed out whole (see the module docstring)."""

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
