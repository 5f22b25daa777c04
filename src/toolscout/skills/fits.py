"""SkillFits: which skill constants the engine serves, and their refit on the catalog.

The constants (classifier, stage-1 skill scores, coverage) are read by two parts: the skill
service's offline classifier and the search's stage 1. This object keeps them in step: a refit
on the catalog (``skills/catalogfit.py``), a status line for ``toolscout info``, and pinning a
given fit in both (benches compare fits this way).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolscout.search.skillfit import SkillFit
from toolscout.search.skillstage import SkillStage
from toolscout.skills.service import SkillService
from toolscout.store.base import Store


@dataclass(frozen=True)
class SkillFits:
    store: Store
    service: SkillService
    stage1: SkillStage

    @property
    def status(self) -> str:
        """``"fitted"`` (the packaged skill constants, fitted for this model), ``"fitted for
        this model on N pseudo-requests"`` (fitted on this catalog), or why they are
        approximate.

        Raises: StoreError."""
        self.stage1.index(self.store.state().version)
        return self.stage1.fit_status

    def refit(self, *, force: bool = False) -> str:
        """Fit the skill constants on this catalog when the model needs it (or ``force``: even
        for the model the packaged constants were fitted for; they stay in use for it) and
        return :attr:`status`.

        Raises:
            StoreError, EmbedError.
        """
        self.service.refit(force=force)
        return self.status

    def use(self, fit: SkillFit | None) -> None:
        """Serve ``fit``'s constants (classifier and stage 1) instead of the resolved ones (None:
        the resolved ones again); re-classify to apply its classifier.

        Raises: StoreError (None: resolving reads the store)."""
        self.service.pinned = fit
        self.stage1.serve(fit)
        self.service.offline.fit = self.stage1.fit
