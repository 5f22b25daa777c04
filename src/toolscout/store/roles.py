"""The roles a store hands out whole, each asked for by the service that uses it, and the
records they read and write:

* ``store.tools`` (:class:`ToolReads`): tool rows by id, page, hash or column;
* ``store.skills`` (:class:`SkillStore`): skills, assignments, classification state, suggestions
  (a tool's outcome arrives as :class:`Classified`);
* ``store.enrichments`` (:class:`EnrichStore`): the enrichment cache (:class:`EnrichmentRecord`);
* ``store.feedback`` (:class:`FeedbackStore`): the log of observed calls (:class:`FeedbackRecord`).

The index as a whole (identity, writes, the retrieval legs) is :class:`~toolscout.store.base.Store`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.models import JSON, Filters, Skill, SkillAssignment, Suggestion, Tool


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

    def names(self, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """``{id: (name, server)}``: the narrow read the learned ranker makes of its
        candidates (unknown ids are left out)."""
        ...

    def name_page(self, after: str, limit: int) -> list[tuple[str, str, str | None]]:
        """``(id, name, server)`` of up to ``limit`` tools in the store's id order, ids past
        ``after`` (``""``: from the first): the learned ranker's whole-catalog read of its
        candidates' names (search/nametable.py), a page at a time."""
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
