"""The human-governed skill catalog: create, read, update, list, soft-delete, import, export.

Skill files (YAML or JSON, chosen by suffix) hold ``{"skills": [{id, name, description,
keywords, examples, parent, is_active}, ...]}`` (a bare list is accepted too) so a catalog can
live in version control. Validation happens at this edge with pydantic; the core gets
:class:`~toolscout.models.Skill` dataclasses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolscout.errors import SkillError
from toolscout.models import Skill, SkillMatch
from toolscout.store.roles import SkillStore
from toolscout.store.sql.rows import now_iso

SKILL_ID = re.compile(r"^[a-z][a-z0-9_]*$")
#: Primary skill of a tool no skill fits with confidence >= 0.5 (not a catalog entry).
UNCATEGORIZED = "uncategorized"
STARTER = "starter.yaml"
_EDITABLE = ("name", "description", "keywords", "examples", "parent", "is_active")


class SkillSpec(BaseModel):
    """One skill as written in a catalog file or sent by an edge."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=4000)
    keywords: list[str] = Field(default_factory=list, max_length=100)
    examples: list[str] = Field(default_factory=list, max_length=100)
    parent: str | None = None
    is_active: bool = True

    @field_validator("id", "parent")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_skill_id(value)
            except SkillError as exc:  # pydantic reports ValueErrors with their location
                raise ValueError(str(exc).removeprefix("id: ")) from None
        return value

    def to_skill(self) -> Skill:
        return Skill(
            id=self.id,
            name=self.name.strip(),
            description=self.description.strip(),
            keywords=tuple(k.strip() for k in self.keywords if k.strip()),
            examples=tuple(e.strip() for e in self.examples if e.strip()),
            parent=self.parent,
            is_active=self.is_active,
        )


def check_skill_id(skill_id: str) -> str:
    """Raises: SkillError when ``skill_id`` does not match ``^[a-z][a-z0-9_]*$`` or is reserved."""
    if not isinstance(skill_id, str) or not SKILL_ID.match(skill_id) or len(skill_id) > 64:
        raise SkillError(
            f"id: {skill_id!r} is not a valid skill id; use lowercase letters, digits and "
            f"underscores, starting with a letter (^[a-z][a-z0-9_]*$, at most 64 characters)"
        )
    if skill_id == UNCATEGORIZED:
        raise SkillError(f"id: {UNCATEGORIZED!r} is reserved for tools no skill fits")
    return skill_id


def _validation_message(exc: ValidationError, where: str) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    return f"{where}: {loc}: {first['msg']}"


def parse_skills(data: Any, where: str = "skills") -> list[Skill]:
    """Validate catalog data (``{"skills": [...]}`` or a list) into skills.

    Raises:
        SkillError: naming the entry and field that is wrong, or a duplicate id.
    """
    items = data.get("skills") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise SkillError(f"{where}: expected a list of skills or a mapping with a 'skills' list")
    out: list[Skill] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        try:
            skill = SkillSpec.model_validate(item).to_skill()
        except ValidationError as exc:
            raise SkillError(_validation_message(exc, f"{where}[{i}]")) from None
        if skill.id in seen:
            raise SkillError(f"{where}[{i}]: id: duplicate skill id {skill.id!r}")
        seen.add(skill.id)
        out.append(skill)
    return out


def read_skill_file(path: Path) -> list[Skill]:
    """Read a YAML (.yaml/.yml) or JSON catalog file.

    Raises:
        SkillError: unreadable file, bad syntax or invalid entries.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillError(f"{path}: cannot read skill file: {exc}") from exc
    try:
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise SkillError(f"{path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}") from exc
    return parse_skills(data, str(path))


def starter_skills() -> list[Skill]:
    """The packaged starter catalog (written by this project)."""
    path = Path(str(resources.files("toolscout.skills").joinpath(STARTER)))
    return read_skill_file(path)


class SkillCatalog:
    """CRUD over the store's skills. ``on_change`` runs after every write with the skill ids
    whose text or state changed (the engine refreshes skill vectors there)."""

    def __init__(self, skills: SkillStore, on_change: Callable[[list[str]], None] | None = None):
        self.skills = skills
        self._on_change = on_change or (lambda ids: None)

    def create(self, skill: Skill) -> Skill:
        """Add a skill; timestamps are set here.

        Raises:
            SkillError: invalid id or empty name. SkillExists: the id is taken.
        """
        check_skill_id(skill.id)
        if skill.parent is not None:
            check_skill_id(skill.parent)
        if not skill.name.strip():
            raise SkillError("name: must not be empty")
        stamp = now_iso()
        stored = replace(skill, created_at=stamp, updated_at=stamp)
        self.skills.insert_skill(stored)
        self._on_change([stored.id])
        return stored

    def get(self, skill_id: str) -> Skill:
        """Raises: SkillNotFound."""
        return self.skills.get_skill(skill_id)

    def update(self, skill_id: str, **changes: Any) -> Skill:
        """Change some of name, description, keywords, examples, parent, is_active.

        Raises:
            SkillNotFound. SkillError: an unknown or invalid field.
        """
        unknown = sorted(set(changes) - set(_EDITABLE))
        if unknown:
            raise SkillError(f"{unknown[0]}: not an editable skill field; use one of {_EDITABLE}")
        current = self.skills.get_skill(skill_id)
        merged = {**current.to_dict(), **changes}
        merged.pop("created_at"), merged.pop("updated_at")
        try:
            spec = SkillSpec.model_validate(merged).to_skill()
        except ValidationError as exc:
            raise SkillError(_validation_message(exc, skill_id)) from None
        updated = replace(spec, created_at=current.created_at, updated_at=now_iso())
        self.skills.update_skill(updated)
        self._on_change([skill_id])
        return updated

    def list(self, *, include_inactive: bool = True) -> list[SkillMatch]:
        """Skills with their tool counts (score 0), ordered by id."""
        counts = self.skills.skill_tool_counts()
        return [
            SkillMatch(s, 0.0, counts.get(s.id, 0))
            for s in self.skills.list_skills(include_inactive=include_inactive)
        ]

    def deactivate(self, skill_id: str) -> Skill:
        """Soft delete: assignments stay, search leaves the skill out. Raises: SkillNotFound."""
        return self.update(skill_id, is_active=False)

    def reactivate(self, skill_id: str) -> Skill:
        """Raises: SkillNotFound."""
        return self.update(skill_id, is_active=True)

    def upsert_many(self, skills: Iterable[Skill]) -> int:
        """Create new skills and update existing ones (timestamps kept/set). Returns the count."""
        count = 0
        changed: list[str] = []
        stamp = now_iso()
        existing = {s.id: s for s in self.skills.list_skills()}
        for skill in skills:
            old = existing.get(skill.id)
            if old is None:
                self.skills.insert_skill(replace(skill, created_at=stamp, updated_at=stamp))
            elif _content(old) != _content(skill):
                self.skills.update_skill(
                    replace(skill, created_at=old.created_at, updated_at=stamp)
                )
            else:
                count += 1
                continue
            changed.append(skill.id)
            count += 1
        if changed:
            self._on_change(changed)
        return count

    def import_file(self, path: str | Path) -> int:
        """Import a YAML/JSON catalog: new ids are created, existing ones updated. The whole
        file is validated before anything is written.

        Raises:
            SkillError: unreadable or invalid file (naming the entry and field).
        """
        return self.upsert_many(read_skill_file(Path(path)))

    def export_file(self, path: str | Path) -> int:
        """Write every skill (active or not) as YAML or JSON by suffix; returns the count.

        Raises:
            SkillError: the file cannot be written.
        """
        target = Path(path)
        skills = [
            {k: v for k, v in s.to_dict().items() if k not in ("created_at", "updated_at")}
            for s in self.skills.list_skills()
        ]
        payload = {"skills": skills}
        if target.suffix in (".yaml", ".yml"):
            text = yaml.safe_dump(payload, sort_keys=False, allow_unicode=True, width=100)
        else:
            text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise SkillError(f"{target}: cannot write skill file: {exc}") from exc
        return len(skills)


def _content(skill: Skill) -> tuple[Any, ...]:
    return (
        skill.name,
        skill.description,
        skill.keywords,
        skill.examples,
        skill.parent,
        skill.is_active,
    )
