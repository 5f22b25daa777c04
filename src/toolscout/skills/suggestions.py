"""The suggestion queue: skills a classifier proposed, waiting for a person's decision.

Approving creates the skill and re-classifies the tool that prompted it; rejecting keeps the
suggestion with its reason, so the same proposal is not queued again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from toolscout.errors import SkillError, SkillNotFound, SuggestionNotFound
from toolscout.models import Skill, Suggestion
from toolscout.skills.catalog import SkillCatalog, check_skill_id
from toolscout.skills.classify import ProposedSkill
from toolscout.store.roles import SkillStore
from toolscout.store.sql.rows import now_iso

PENDING, APPROVED, REJECTED = "pending", "approved", "rejected"


class SuggestionQueue:
    """Pending / approve / reject over the store's ``skill_suggestions``.

    ``reclassify`` is called with the source tool's id after an approval.
    """

    def __init__(
        self,
        skills: SkillStore,
        catalog: SkillCatalog,
        reclassify: Callable[[Sequence[str]], object],
    ) -> None:
        self.skills = skills
        self.catalog = catalog
        self._reclassify = reclassify

    def pending(self) -> list[Suggestion]:
        """Pending suggestions, oldest first."""
        return self.skills.list_suggestions(PENDING)

    def all(self) -> list[Suggestion]:
        """Every suggestion whatever its status, oldest first."""
        return self.skills.list_suggestions(None)

    def propose(self, tool_id: str, proposal: ProposedSkill) -> Suggestion | None:
        """Queue ``proposal`` unless the skill exists or the same id was already suggested.

        Returns the queued suggestion, or None when it was not queued.
        """
        try:
            check_skill_id(proposal.id)
        except SkillError:
            return None
        try:
            self.skills.get_skill(proposal.id)
            return None
        except SkillNotFound:
            pass
        if any(s.skill_id == proposal.id for s in self.skills.list_suggestions(None)):
            return None
        draft = Suggestion(
            id=0,
            skill_id=proposal.id,
            name=proposal.name or proposal.id,
            description=proposal.description,
            source_tool_id=tool_id,
            status=PENDING,
            reason=None,
            created_at=now_iso(),
            keywords=proposal.keywords,
        )
        new_id = self.skills.add_suggestion(draft)
        return self._get(new_id)

    def _get(self, suggestion_id: int) -> Suggestion:
        found = self.skills.get_suggestion(suggestion_id)
        if found is None:
            raise SuggestionNotFound(suggestion_id)
        return found

    def _pending(self, suggestion_id: int) -> Suggestion:
        found = self._get(suggestion_id)
        if found.status != PENDING:
            raise SkillError(
                f"suggestion: {suggestion_id} is already {found.status}; only pending ones "
                f"can be decided"
            )
        return found

    def approve(self, suggestion_id: int) -> Skill:
        """Create the proposed skill and re-classify the source tool.

        Raises:
            SkillError: unknown or already decided suggestion. SkillExists: the id was
            created meanwhile (reject the suggestion instead).
        """
        found = self._pending(suggestion_id)
        skill = self.catalog.create(
            Skill(
                id=found.skill_id,
                name=found.name,
                description=found.description,
                keywords=found.keywords,
            )
        )
        self.skills.set_suggestion_status(suggestion_id, APPROVED, None)
        self._reclassify([found.source_tool_id])
        return skill

    def reject(self, suggestion_id: int, reason: str) -> Suggestion:
        """Reject with a reason (kept with the suggestion).

        Raises:
            SkillError: empty reason, unknown or already decided suggestion.
        """
        if not reason or not reason.strip():
            raise SkillError("reason: say why the suggestion is rejected")
        self._pending(suggestion_id)
        self.skills.set_suggestion_status(suggestion_id, REJECTED, reason.strip())
        return self._get(suggestion_id)
