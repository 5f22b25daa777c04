"""SkillService: the skills half of the engine - catalog, classifiers and suggestions.

The engine builds one and holds it. The starter catalog is loaded into an index at one
explicit point, :meth:`SkillService.seed`, which the engine calls when it opens a store (never
inside a read); meta key ``skills_seeded`` records that it ran, so deactivating or replacing
every skill later does not bring the starter back. Every write here moves the store's data
version, which is how stage 1's skill index (and every other cache) in this and other
processes notices.

For an embedding model the packaged skill constants were not fitted for, :meth:`refit` fits
them on the catalog (``skills/catalogfit.py``) at the end of an index or classify run when the
stored fit is missing or stale, and keeps the result in the store's meta.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from toolscout.embed.base import Embedder
from toolscout.enrich.llm import LLM
from toolscout.models import ClassifyProgress, ClassifyReport
from toolscout.search.skillfit import SkillFit, resolve_skill_fit
from toolscout.skills.catalog import SkillCatalog, starter_skills
from toolscout.skills.catalogfit import fit_catalog, fit_due, store_fit
from toolscout.skills.centroid import recompute_centroids, refresh_profiles
from toolscout.skills.classify import (
    Classifier,
    OfflineClassifier,
    WrittenClassifier,
    run_batch,
    select_tools,
)
from toolscout.skills.llm_classifier import LLMClassifier
from toolscout.skills.suggestions import SuggestionQueue
from toolscout.store.base import Store

log = logging.getLogger("toolscout.skills")


class SkillService:
    """Owns the catalog, the classifier (LLM with offline fallback, or offline) and the
    suggestion queue of one engine."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        llm: LLM | None = None,
        starter: bool = True,
        concurrency: int = 4,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.starter = starter
        self.concurrency = concurrency
        self.catalog = SkillCatalog(store.skills, on_change=self._catalog_changed)
        #: Constants given by the caller (a benchmark comparing fits); None: resolved for the
        #: model from the packaged file or the store (``resolve_skill_fit``).
        self.pinned: SkillFit | None = None
        self.offline = OfflineClassifier(store.skills, embedder, resolve_skill_fit(store, embedder))
        self.classifier: Classifier = (
            LLMClassifier(llm, self.offline, store.skills) if llm is not None else self.offline
        )
        self.suggestions = SuggestionQueue(store.skills, self.catalog, self._reclassify)

    def seed(self) -> bool:
        """Load the starter catalog into an index that never had skills (nothing when the
        starter is off or the index was seeded before). Returns whether it loaded it.

        Raises: StoreError, EmbedError."""
        if not self.starter or self.store.get_meta("skills_seeded") is not None:
            return False
        seeded = not self.store.skills.list_skills()
        if seeded:
            self.catalog.upsert_many(starter_skills())
        self.store.set_meta("skills_seeded", "starter" if seeded else "existing")
        return seeded

    def _catalog_changed(self, skill_ids: list[str]) -> None:
        refresh_profiles(self.store.skills, self.embedder)

    def _reclassify(self, tool_ids: Sequence[str]) -> ClassifyReport:
        return self.classify_tools(tool_ids, force=True)

    def classify_tools(
        self,
        tool_ids: Sequence[str] | None,
        *,
        force: bool = False,
        concurrency: int | None = None,
        progress: Callable[[ClassifyProgress], None] | None = None,
    ) -> ClassifyReport:
        """Classify the given tools (None: the whole index); unless ``force``, only those never
        classified, failed, or changed since. Raises: StoreError, EmbedError."""
        ids = select_tools(self.store, everything=force, ids=tool_ids)
        if not ids:
            return ClassifyReport(0, 0, 0, [])
        self.offline.fit = self.pinned or resolve_skill_fit(self.store, self.embedder)
        return run_batch(
            self.store,
            self.classifier,
            ids,
            concurrency=concurrency or self.concurrency,
            progress=progress,
            on_proposal=lambda tool_id, p: self.suggestions.propose(tool_id, p),
            keep_floor=self.offline.fit.keep_floor,
        )

    @contextmanager
    def classifying(self) -> Iterator[WrittenClassifier]:
        """A hook that classifies the tools an index run writes, chunk by chunk, as they are
        written (``IndexWriter.write``'s ``written``); pass its ``changed`` skills to
        :meth:`after_index`, which recomputes their centroids once."""
        self.offline.fit = self.pinned or resolve_skill_fit(self.store, self.embedder)
        hook = WrittenClassifier(
            self.store,
            self.classifier,
            concurrency=self.concurrency,
            keep_floor=self.offline.fit.keep_floor,
            on_proposal=lambda tool_id, p: self.suggestions.propose(tool_id, p),
        )
        try:
            yield hook
        finally:
            hook.close()

    def skills_of(self, tool_ids: Sequence[str]) -> set[str]:
        """Skills the given tools belong to (read before deleting them). Raises: StoreError."""
        return {
            a.skill_id for rows in self.store.skills.assignments(tool_ids).values() for a in rows
        }

    def after_index(self, removed_skills: set[str]) -> None:
        """Classify any tool a run wrote but never classified (the :meth:`classifying` hook
        classifies what a run writes; a kill between writing a chunk and classifying it leaves
        tools never classified, or classified as another version: the repair is part of every
        run by design), then recompute the centroids of ``removed_skills`` (skills that lost
        tools, or whose members a :meth:`classifying` hook changed).

        Raises: StoreError, EmbedError."""
        state = self.store.skills.classification_state()
        # Failed ones of the same version wait for `skills classify`: retrying them on every
        # sync would call an LLM again each time.
        unclassified = {
            tool_id
            for tool_id, (content, _) in self.store.tools.hashes().items()
            if state.get(tool_id, ("", ""))[0] != content
        }
        todo = sorted(unclassified)
        if todo:
            self.classify_tools(todo)
        if removed_skills:
            recompute_centroids(self.store, removed_skills)
        self.refit()

    def refit(self, *, force: bool = False) -> SkillFit | None:
        """Fit the skill constants on the catalog when this index needs it (``fit_due``: the
        model is not the packaged fit's and the stored fit is missing or stale) or ``force``;
        with the offline classifier, every tool is classified again with the new classifier
        first. The fit is stored (one meta row) and served from the next search on. Returns it
        (None: nothing was due, given constants are pinned, or too few tools hold a skill).

        Raises: StoreError, EmbedError."""
        if self.pinned is not None or not (force or fit_due(self.store, self.embedder)):
            return None
        reclassify = self._classify_with if self.classifier is self.offline else None
        fit = fit_catalog(self.store, self.embedder, reclassify)
        if fit is None:
            return None
        store_fit(self.store, fit)
        log.info("skill scores %s", fit.status(self.embedder))
        return fit

    def _classify_with(self, fit: SkillFit) -> None:
        self.pinned = fit
        try:
            self.classify_tools(None, force=True)
        finally:
            self.pinned = None
