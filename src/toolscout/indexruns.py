"""IndexRuns: the runs that change which tools an index holds, each under the writer lock.

An index run plans (:func:`~toolscout.indexing.plan_index`), writes through the
:class:`~toolscout.indexing.IndexWriter` while the skill service classifies each chunk as it is
written, deletes what a pruned source no longer lists, and then lets the skill service repair
and refresh the skills the run touched. A delete run removes tools and refreshes the skills
they belonged to. The engine holds one and hands its ``index`` and ``delete`` calls to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from toolscout.enrich.service import EnrichmentService
from toolscout.indexing import IndexWriter, Progress, plan_index
from toolscout.models import IndexReport, Loaded
from toolscout.skills.service import SkillService
from toolscout.store.base import Store


class IndexRuns:
    """Index and delete runs over one store, its writer and the services a write touches."""

    def __init__(
        self,
        store: Store,
        writer: IndexWriter,
        skills: SkillService,
        enrichment: EnrichmentService,
    ) -> None:
        self.store = store
        self.writer = writer
        self.skills = skills
        self.enrichment = enrichment

    def index(
        self, loads: Iterable[Loaded], *, prune: bool, progress: Progress | None
    ) -> IndexReport:
        """Add new tools, update changed ones, skip unchanged ones (no embedding for those).

        With ``prune``, tools of each loaded source that the source no longer lists are deleted,
        except those an entry that could not be read may stand for (:func:`keep_unreadable`).
        Concurrent runs on one index take turns (``Store.writer_lock``), so each reports only
        what it changed.

        Raises:
            StoreError, EmbedError. Nothing already indexed is lost on error: each chunk of
            writes is one transaction, and the next run finishes what a killed one started.
        """
        loads = list(loads)
        with self.store.writer_lock():
            return self._index(loads, prune, progress)

    def _index(
        self, loads: Sequence[Loaded], prune: bool, progress: Progress | None
    ) -> IndexReport:
        plan = plan_index(
            self.store, loads, prune=prune, enrichment=self.enrichment.enrichment_fields
        )
        # Each chunk is classified as soon as it is written, beside the next chunk's embedding.
        with self.skills.classifying() as classified:
            self.writer.write(plan.todo, plan.report, progress, classified)
        lost: set[str] = set()  # skills whose tools were deleted: their centroids change
        if plan.dropped:
            gone = sorted(plan.dropped)  # read before the writes; the writes only touch ``tools``
            lost = self.skills.skills_of(gone)
            plan.report.deleted = self.store.delete(gone)
        self.skills.after_index(lost | classified.changed)
        return plan.report

    def delete(self, ids: Sequence[str]) -> int:
        """Delete ``ids`` and refresh the skills they belonged to; returns how many were
        removed.

        Raises: StoreError."""
        with self.store.writer_lock():
            lost = self.skills.skills_of(ids)
            removed = self.store.delete(ids)
            self.skills.after_index(lost)
        return removed
