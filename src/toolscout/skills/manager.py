"""SkillManager: the skills half of the engine - catalog, classifiers, suggestions, search.

One object per engine, built on first use so engines that never touch skills pay nothing.
The starter catalog is loaded into an index the first time it has no skills (meta key
``skills_seeded`` records that, so deactivating or replacing every skill later does not bring
the starter back). Every write that changes what stage 1 sees bumps the ``skills_version`` meta
key, which is how searchers in this and other processes notice.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from toolscout.embed.base import Embedder
from toolscout.enrich.llm import LLM
from toolscout.models import ClassifyProgress, ClassifyReport
from toolscout.search.hierarchical import HierarchicalSearcher
from toolscout.search.hybrid import HybridSearcher
from toolscout.skills.catalog import SkillCatalog, starter_skills
from toolscout.skills.centroid import recompute_centroids, refresh_profiles
from toolscout.skills.classify import Classifier, OfflineClassifier, run_batch, select_tools
from toolscout.skills.llm_classifier import LLMClassifier
from toolscout.skills.suggestions import SuggestionQueue
from toolscout.store.base import Store

log = logging.getLogger("toolscout.skills")


class SkillManager:
    """Owns the catalog, the classifier (LLM with offline fallback, or offline), the
    suggestion queue and the hierarchical searcher of one engine."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        searcher: HybridSearcher,
        *,
        llm: LLM | None = None,
        starter: bool = True,
        concurrency: int = 4,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.concurrency = concurrency
        self.catalog = SkillCatalog(store, on_change=self._catalog_changed)
        self.offline = OfflineClassifier(store, embedder)
        self.classifier: Classifier = (
            LLMClassifier(llm, self.offline, store) if llm is not None else self.offline
        )
        self.suggestions = SuggestionQueue(store, self.catalog, self._reclassify)
        self.hierarchical = HierarchicalSearcher(store, searcher)
        if starter:
            self.seed()

    def seed(self) -> bool:
        """Load the starter catalog into an index that never had skills. Raises: StoreError."""
        if self.store.get_meta("skills_seeded") is not None:
            return False
        seeded = not self.store.list_skills()
        if seeded:
            self.catalog.upsert_many(starter_skills())
        self.store.set_meta("skills_seeded", "starter" if seeded else "existing")
        return seeded

    def bump(self) -> None:
        """Tell every searcher of this index that skills or memberships changed."""
        self.store.set_meta("skills_version", uuid.uuid4().hex)

    def _catalog_changed(self, skill_ids: list[str]) -> None:
        refresh_profiles(self.store, self.embedder)
        self.bump()

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
        report = run_batch(
            self.store,
            self.classifier,
            ids,
            concurrency=concurrency or self.concurrency,
            progress=progress,
            on_proposal=lambda tool_id, p: self.suggestions.propose(tool_id, p),
        )
        self.bump()
        return report

    def forget(self, skill_ids: set[str]) -> None:
        """Recompute centroids after tools left these skills (deleted tools)."""
        if skill_ids:
            recompute_centroids(self.store, skill_ids)
            self.bump()
