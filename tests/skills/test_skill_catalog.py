"""The governed skill catalog: CRUD, validation, soft delete, import/export, starter catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import SkillError, SkillExists, SkillNotFound
from toolscout.models import Skill
from toolscout.skills.catalog import SKILL_ID, starter_skills


def test_starter_catalog_has_25_to_40_valid_distinct_skills() -> None:
    skills = starter_skills()
    assert 25 <= len(skills) <= 40
    assert len({s.id for s in skills}) == len(skills)
    for skill in skills:
        assert SKILL_ID.match(skill.id)
        assert skill.description and skill.keywords and skill.examples


def test_a_new_index_gets_the_starter_catalog_once(engine: Engine) -> None:
    listed = engine.skills.list()
    assert {m.skill.id for m in listed} == {s.id for s in starter_skills()}
    assert all(m.score == 0.0 and m.tool_count == 0 for m in listed)
    for match in listed:
        engine.skills.deactivate(match.skill.id)
    assert engine.skill_service.seed() is False
    assert len(engine.skills.list(include_inactive=False)) == 0


def test_create_get_update_keeps_created_and_moves_updated(engine: Engine) -> None:
    created = engine.skills.create(
        Skill("pet_care", "Pet care", "Feeding and grooming pets.", keywords=("dog", "cat"))
    )
    assert created.created_at and created.created_at == created.updated_at
    assert engine.skills.get("pet_care") == created
    updated = engine.skills.update("pet_care", description="Vets, feeding, grooming.")
    assert updated.description == "Vets, feeding, grooming."
    assert updated.keywords == ("dog", "cat")
    assert updated.created_at == created.created_at
    assert engine.skills.get("pet_care").description == "Vets, feeding, grooming."


@pytest.mark.parametrize("bad", ["Email", "1email", "e-mail", "", "email skills", "uncategorized"])
def test_invalid_skill_ids_are_rejected_naming_the_field(engine: Engine, bad: str) -> None:
    with pytest.raises(SkillError, match="id"):
        engine.skills.create(Skill(bad, "Some name"))


def test_duplicate_and_missing_skills_raise_typed_errors(engine: Engine) -> None:
    with pytest.raises(SkillExists):
        engine.skills.create(Skill("email", "Email again"))
    with pytest.raises(SkillNotFound):
        engine.skills.get("no_such_skill")
    with pytest.raises(SkillNotFound):
        engine.skills.update("no_such_skill", name="x")
    with pytest.raises(SkillError, match="colour"):
        engine.skills.update("email", colour="red")
    with pytest.raises(SkillError, match="name"):
        engine.skills.update("email", name="")


def test_list_reports_tool_counts(skills_engine: Engine) -> None:
    counts = {m.skill.id: m.tool_count for m in skills_engine.skills.list()}
    assert counts["email"] >= 4
    assert counts["code_hosting"] >= 3
    assert counts["sports"] == 0


def test_deactivate_keeps_assignments(skills_engine: Engine) -> None:
    before = skills_engine.store.skills.assignments(["gmail::send_email"])
    skills_engine.skills.deactivate("email")
    assert skills_engine.store.skills.assignments(["gmail::send_email"]) == before
    listed = {m.skill.id: m for m in skills_engine.skills.list()}
    assert listed["email"].skill.is_active is False
    assert listed["email"].tool_count >= 4
    assert "email" not in {m.skill.id for m in skills_engine.skills.list(include_inactive=False)}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_export_then_import_round_trips(
    engine: Engine, tmp_path: Path, settings: Settings, suffix: str
) -> None:
    engine.skills.create(Skill("pet_care", "Pet care", "Pets.", examples=("book_vet",)))
    engine.skills.deactivate("sports")
    path = tmp_path / f"skills{suffix}"
    assert engine.skills.export_file(path) == len(engine.skills.list())
    other = Engine.open(
        Settings(db=str(tmp_path / "other.db"), cache_dir=settings.cache_dir, skills_starter=False)
    )
    try:
        assert other.skills.import_file(path) == len(engine.skills.list())
        mine = {m.skill.id: m.skill for m in engine.skills.list()}
        theirs = {m.skill.id: m.skill for m in other.skills.list()}
        assert set(mine) == set(theirs)
        assert theirs["pet_care"].examples == ("book_vet",)
        assert theirs["sports"].is_active is False
    finally:
        other.close()


def test_import_updates_existing_skills_and_creates_new_ones(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "skills.yaml"
    data = {
        "skills": [
            {"id": "email", "name": "Electronic mail", "description": "Mail."},
            {"id": "pet_care", "name": "Pet care"},
        ]
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert engine.skills.import_file(path) == 2
    assert engine.skills.get("email").name == "Electronic mail"
    assert engine.skills.get("pet_care").name == "Pet care"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"skills": [{"id": "ok_one", "name": "Ok"}, {"id": "Bad Id", "name": "x"}]}, r"\[1\]"),
        ({"skills": [{"id": "ok_one", "name": "Ok"}, {"id": "ok_one", "name": "x"}]}, "duplicate"),
        ({"skills": [{"id": "ok_one"}]}, "name"),
        ({"skills": [{"id": "ok_one", "name": "Ok", "colour": "red"}]}, "colour"),
        ({"nothing": []}, "list"),
    ],
)
def test_a_bad_import_file_names_the_problem_and_writes_nothing(
    engine: Engine, tmp_path: Path, payload: object, message: str
) -> None:
    path = tmp_path / "skills.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    before = engine.skills.list()
    with pytest.raises(SkillError, match=message):
        engine.skills.import_file(path)
    assert engine.skills.list() == before


def test_import_of_unparsable_or_missing_files_raises_skill_error(
    engine: Engine, tmp_path: Path
) -> None:
    broken = tmp_path / "skills.yaml"
    broken.write_text("skills: [ {id: x", encoding="utf-8")
    with pytest.raises(SkillError, match="not valid yaml"):
        engine.skills.import_file(broken)
    with pytest.raises(SkillError, match="cannot read"):
        engine.skills.import_file(tmp_path / "absent.json")
