"""The Store contract: one suite, run on a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.typing import NDArray

from support.backends import entry, unit
from toolscout.errors import ConfigError, SkillExists, SkillNotFound, StoreError, ToolNotFound
from toolscout.models import Filters, ItemType, Skill, SkillAssignment, Suggestion
from toolscout.store.base import IndexEntry, IndexIdentity, Store
from toolscout.store.roles import Classified, EnrichmentRecord, FeedbackRecord

WEIGHTS = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)


def catalog() -> list[IndexEntry]:
    return [
        entry("files::read_file", "read file content disk", unit(1, 0.1)),
        entry("files::write_file", "write file content disk", unit(0.9, 0.4)),
        entry("files::list_dir", "list directory entri", unit(0.5, 0.8)),
        entry("git::commit", "commit chang repositori", unit(0, 1), server="git"),
        entry("git::log", "show commit histori", unit(0.1, 0.9, 0.2), server="git"),
        entry("web::fetch", "fetch web page url", unit(0, 0, 1), server="web"),
        entry(
            "web::summary",
            "summar web page",
            unit(0, 0.2, 1),
            server="web",
            item_type=ItemType.PROMPT,
        ),
    ]


@pytest.fixture
def filled(store: Store) -> Store:
    store.upsert(catalog())
    return store


def test_upserted_tool_reads_back_equal(filled: Store) -> None:
    original = catalog()[0].tool
    assert filled.tools.get(original.id) == original
    assert filled.tools.get(original.id).content_hash == original.content_hash
    assert filled.tools.get_many(["files::read_file", "nope"]) == {original.id: original}
    assert filled.count() == 7


def test_light_reads_keep_every_field_but_the_schemas_and_the_full_content_hash(
    filled: Store,
) -> None:
    originals = {e.tool.id: e.tool for e in catalog()}
    light = filled.tools.get_light(list(originals))
    rows = filled.tools.light_rows([*originals, "nope"])
    assert set(light) == set(rows) == set(originals)
    for tool_id, original in originals.items():
        assert original.input_schema is not None
        expected = replace(original, input_schema=None, output_schema=None)
        for tool in (light[tool_id], rows[tool_id][0]):
            assert tool == expected
            assert repr(tool) == repr(expected).replace(
                expected.content_hash, original.content_hash
            )
            # The stored hash covers the schemas the light read leaves out.
            assert tool.content_hash == original.content_hash != expected.content_hash
            assert type(tool.item_type) is ItemType
    assert len({key for _, key in rows.values()}) == len(originals)


def test_names_reads_each_tools_name_and_server_and_leaves_out_unknown_ids(
    filled: Store,
) -> None:
    originals = {e.tool.id: e.tool for e in catalog()}
    names = filled.tools.names([*originals, "nope"])
    assert names == {tid: (t.name, t.server) for tid, t in originals.items()}
    assert filled.tools.names([]) == {}
    lone = entry("lone", "a tool of no server", unit(0, 1, 1))
    filled.upsert([replace(lone, tool=replace(lone.tool, server=None))])
    assert filled.tools.names(["lone"]) == {"lone": ("lone", None)}


def test_upsert_replaces_an_existing_tool(filled: Store) -> None:
    filled.upsert([entry("files::read_file", "download remot blob", unit(0, 0, 0, 1))])
    assert filled.count() == 7
    assert filled.tools.get("files::read_file").description == "download remot blob"
    assert [h.id for h in filled.lexical(["blob"], limit=5)] == ["files::read_file"]
    assert filled.lexical(["disk"], limit=5)[0].id == "files::write_file"
    assert filled.nearest(unit(0, 0, 0, 1), limit=1)[0].id == "files::read_file"
    assert filled.tools.hashes()["files::read_file"][1] == "h-download remot blob"


def test_delete_reports_how_many_existed_and_forgets_them(filled: Store) -> None:
    assert filled.delete(["git::commit", "git::log", "git::log", "missing"]) == 2
    assert filled.count() == 5
    assert filled.lexical(["commit"], limit=5) == []
    assert all(h.id.startswith(("files", "web")) for h in filled.nearest(unit(0, 1), limit=10))
    assert filled.delete([]) == 0


def test_get_of_an_unknown_id_raises_tool_not_found(filled: Store) -> None:
    with pytest.raises(ToolNotFound) as info:
        filled.tools.get("files::nope")
    assert info.value.tool_id == "files::nope"


def test_hashes_list_and_counts_follow_filters(filled: Store) -> None:
    git = Filters(servers=("git",))
    assert set(filled.tools.hashes(git)) == {"git::commit", "git::log"}
    assert [t.id for t in filled.tools.list_tools(offset=1, limit=2)] == [
        "files::read_file",
        "files::write_file",
    ]
    assert filled.count(Filters(item_types=(ItemType.PROMPT,))) == 1
    assert filled.count(Filters(sources=("src-web",))) == 2
    assert filled.count(Filters(servers=())) == 0
    assert filled.tools.counts_by("server") == {"files": 3, "git": 2, "web": 2}
    with pytest.raises(ValueError):
        filled.tools.counts_by("description")
    git_ids = filled.tools.ids_where("server", "git")
    assert len(git_ids) == 2 and git_ids == sorted(git_ids)
    assert all(i.startswith("git::") for i in git_ids)
    assert filled.tools.ids_where("server", "nowhere") == []
    with pytest.raises(ValueError):
        filled.tools.ids_where("description", "x")


def test_lexical_ranks_by_weighted_bm25_best_first(filled: Store) -> None:
    hits = filled.lexical(["file", "disk"], limit=10, weights=WEIGHTS)
    assert [h.id for h in hits] == ["files::read_file", "files::write_file"]
    assert hits[0].score > 0 and hits[0].score >= hits[1].score


def test_lexical_breaks_equal_scores_by_id(store: Store) -> None:
    store.upsert([entry("b::twin", "same word", unit(1)), entry("a::twin", "same word", unit(1))])
    hits = store.lexical(["word"], limit=5)
    assert [h.id for h in hits] == ["a::twin", "b::twin"]
    assert hits[0].score == hits[1].score > 0


def test_lexical_ties_wider_than_the_page_are_ordered_by_id(store: Store) -> None:
    # 60 tools with one score: more ties than any fetch margin, inserted in reverse id order.
    twins = [entry(f"s{i:02d}::twin", "same word", unit(1), server=f"s{i:02d}") for i in range(60)]
    store.upsert([*twins[::-1], entry("z::better", "word word", unit(1))])
    hits = store.lexical(["word"], limit=10)
    assert [h.id for h in hits] == ["z::better"] + [f"s{i:02d}::twin" for i in range(9)]
    filtered = store.lexical(["word"], limit=5, filters=Filters(servers=("s07", "s03", "s41")))
    assert [h.id for h in filtered] == ["s03::twin", "s07::twin", "s41::twin"]


def test_lexical_treats_fts_special_characters_as_plain_words(filled: Store) -> None:
    for token in ['"', "NEAR", "AND", "OR", "NOT", "file*", '"file"', "(file)", "^file", "-x", ""]:
        hits = filled.lexical([token, "commit"], limit=10)
        assert {h.id for h in hits} >= {"git::commit", "git::log"}
    # Case folds as FTS5's unicode61 tokenizer does; duplicates count twice, as in FTS5.
    assert filled.lexical(["FILE"], limit=10) == filled.lexical(["file"], limit=10)
    once = filled.lexical(["file"], limit=10)
    twice = filled.lexical(["file", "file"], limit=10)
    assert [h.id for h in twice] == [h.id for h in once]
    assert twice[0].score == pytest.approx(2 * once[0].score)


def test_legs_apply_every_filter(filled: Store) -> None:
    cases = [
        (Filters(servers=("web",)), {"web::fetch", "web::summary"}),
        (Filters(sources=("src-git",)), {"git::commit", "git::log"}),
        (Filters(item_types=(ItemType.PROMPT,)), {"web::summary"}),
        (Filters(tool_ids=("files::list_dir", "git::log")), {"files::list_dir", "git::log"}),
        (Filters(servers=()), set()),
    ]
    for filters, allowed in cases:
        lexical = {
            h.id
            for h in filled.lexical(
                ["page", "commit", "directori", "entri"], limit=10, filters=filters
            )
        }
        nearest = {h.id for h in filled.nearest(unit(1, 1, 1), limit=10, filters=filters)}
        assert lexical <= allowed and nearest == allowed


def test_skill_filter_uses_assignments(filled: Store) -> None:
    filled.skills.insert_skill(Skill(id="vcs", name="Version control"))
    filled.skills.replace_assignments(
        [Classified("git::log", "c", "test", (SkillAssignment("git::log", "vcs", 0.9, True),))]
    )
    only = Filters(skill_ids=("vcs",))
    assert [h.id for h in filled.nearest(unit(0, 1), limit=10, filters=only)] == ["git::log"]
    assert [h.id for h in filled.lexical(["commit"], limit=10, filters=only)] == ["git::log"]


def test_nearest_ranks_by_cosine_and_breaks_ties_by_id(store: Store) -> None:
    same = unit(0, 0, 0, 0, 1)
    store.upsert(
        [entry("b::twin", "x", same), entry("a::twin", "y", same), entry("c::far", "z", unit(1))]
    )
    hits = store.nearest(same, limit=3)
    assert [h.id for h in hits] == ["a::twin", "b::twin", "c::far"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[2].score == pytest.approx(0.0, abs=1e-5)
    assert store.nearest(same, limit=0) == []


def test_nearest_many_answers_each_row_like_nearest(filled: Store) -> None:
    rows = np.stack([unit(1, 0.1), unit(0, 0, 1), unit(0, 1)])
    for filters in (None, Filters(servers=("git", "web"))):
        many = filled.nearest_many(rows, limit=3, filters=filters)
        assert many == [filled.nearest(r, limit=3, filters=filters) for r in rows]
        assert all(len(run) == 3 for run in many)
    assert filled.nearest_many(rows, limit=0) == [[], [], []]


def test_vectors_come_back_as_stored(filled: Store) -> None:
    got = filled.vectors(["web::fetch", "nope"])
    assert list(got) == ["web::fetch"]
    np.testing.assert_array_equal(got["web::fetch"], unit(0, 0, 1))


def test_bind_refuses_another_identity_and_says_how_to_rebuild(filled: Store) -> None:
    filled.bind(IndexIdentity("test-embedder", 8, "a2"))
    with pytest.raises(ConfigError, match="--rebuild"):
        filled.bind(IndexIdentity("other-model", 16, "a2"))


def test_a_failing_write_leaves_nothing_behind(filled: Store) -> None:
    good = entry("new::tool", "brand new", unit(1))
    bad = entry("new::broken", "broken", np.ones(3, dtype=np.float32))
    with pytest.raises(StoreError):
        filled.upsert([good, bad])
    assert filled.count() == 7
    assert filled.lexical(["brand"], limit=5) == []


def test_reset_forgets_tools_and_identity(filled: Store) -> None:
    filled.reset()
    assert filled.identity() is None
    assert filled.count() == 0
    with pytest.raises(StoreError, match="bind"):
        filled.upsert(catalog())
    filled.bind(IndexIdentity("test-embedder", 8, "a2"))
    filled.upsert(catalog()[:2])
    assert filled.count() == 2


def test_meta_round_trips(store: Store) -> None:
    assert store.get_meta("k") is None
    store.set_meta("k", "v1")
    store.set_meta("k", "v2")
    assert store.get_meta("k") == "v2"


def test_skills_are_stored_and_typed_errors_name_them(store: Store) -> None:
    skill = Skill(id="files", name="Files", keywords=("disk",), created_at="t", updated_at="t")
    store.skills.insert_skill(skill)
    with pytest.raises(SkillExists):
        store.skills.insert_skill(skill)
    with pytest.raises(SkillNotFound):
        store.skills.get_skill("nope")
    store.skills.update_skill(Skill(id="files", name="File system", is_active=False))
    assert store.skills.get_skill("files").name == "File system"
    assert store.skills.list_skills(include_inactive=False) == []
    store.skills.set_skill_vectors({"files": unit(1)})
    np.testing.assert_array_equal(store.skills.skill_vectors()["files"], unit(1))
    store.skills.set_skill_profile("files", unit(0, 1), "ph")
    assert store.skills.skill_profiles()["files"][0] == "ph"


def test_assignments_and_suggestions_round_trip(filled: Store) -> None:
    for skill_id in ("files", "io"):
        filled.skills.insert_skill(Skill(id=skill_id, name=skill_id))
    changed = filled.skills.replace_assignments(
        [
            Classified(
                "files::read_file",
                "c1",
                "offline",
                (
                    SkillAssignment("files::read_file", "files", 0.9, True),
                    SkillAssignment("files::read_file", "io", 0.4),
                ),
            )
        ]
    )
    assert changed == {"files", "io"}
    assert [
        a.skill_id for a in filled.skills.assignments(["files::read_file"])["files::read_file"]
    ] == [
        "files",
        "io",
    ]
    members = filled.skills.skill_members(["io"])
    assert list(members) == ["io"]
    [(tool_id, confidence)] = members["io"]
    assert tool_id == "files::read_file" and confidence == pytest.approx(0.4)
    filled.skills.mark_classify_failed("files::list_dir", "c2", "boom")
    assert filled.skills.classification_state()["files::list_dir"] == ("c2", "failed")
    assert filled.delete(["files::read_file"]) == 1
    assert filled.skills.assignments(["files::read_file"]) == {}
    sid = filled.skills.add_suggestion(
        Suggestion(0, "net", "Net", "d", "web::fetch", "pending", None, "")
    )
    filled.skills.set_suggestion_status(sid, "rejected", "dup")
    got = filled.skills.get_suggestion(sid)
    assert got is not None and got.status == "rejected" and got.reason == "dup"
    assert filled.skills.list_suggestions() == []


def test_enrichment_cache_round_trips(store: Store) -> None:
    rec = EnrichmentRecord("tool", "a::b", "llm-v1", "ih", "{}", "ok", "", 12.5, 30)
    store.enrichments.put_enrichments(
        [rec, EnrichmentRecord("tool", "a::c", "llm-v1", "ih", "", "failed", "x", 1.0, 0)]
    )
    store.enrichments.put_enrichments(
        [EnrichmentRecord("tool", "a::b", "llm-v1", "ih2", "{}", "ok", "", 13.0, 31)]
    )
    got = store.enrichments.get_enrichments("tool", ["a::b", "zz"], "llm-v1")
    assert list(got) == ["a::b"] and got["a::b"].input_hash == "ih2"
    assert store.enrichments.enrichment_summary() == [
        ("llm-v1", "tool", "failed", 1, 0),
        ("llm-v1", "tool", "ok", 1, 31),
    ]
    assert store.enrichments.delete_enrichments("tool", ["a::b", "a::c"]) == 2


def feedback(
    tool_id: str, outcome: str, at: float, vector: NDArray[np.float32] | None = None
) -> FeedbackRecord:
    return FeedbackRecord(
        0, at, f"request for {tool_id}", tool_id, outcome, ("a::b", tool_id), "api", "m", vector
    )


def test_feedback_log_appends_reads_newest_first_and_keeps_the_newest(store: Store) -> None:
    version = store.state().version
    ids = store.feedback.add_feedback(
        [feedback("a::b", "success", 1.0, unit(1, 0)), feedback("a::c", "error", 2.0)], keep=10
    )
    assert ids == sorted(ids) and len(set(ids)) == 2
    assert store.state().version != version  # cached results see new feedback
    rows = store.feedback.list_feedback(vectors=True)
    assert [r.tool_id for r in rows] == ["a::c", "a::b"]
    first = rows[1]
    assert (first.id, first.created_at, first.query, first.outcome) == (
        ids[0], 1.0, "request for a::b", "success",
    )  # fmt: skip
    assert (first.shown, first.source, first.embedder) == (("a::b", "a::b"), "api", "m")
    assert rows[1].vector is not None and np.allclose(rows[1].vector, unit(1, 0))
    assert rows[0].vector is None
    assert store.feedback.list_feedback()[1].vector is None  # vectors only when asked
    assert [r.tool_id for r in store.feedback.list_feedback(tool_id="a::b")] == ["a::b"]
    assert store.feedback.feedback_summary() == {
        "rows": 2, "success": 1, "error": 1, "tools": 2, "last_id": ids[1],
    }  # fmt: skip
    store.feedback.add_feedback([feedback("a::d", "success", 3.0)], keep=2)
    assert [r.tool_id for r in store.feedback.list_feedback()] == ["a::d", "a::c"]


def test_feedback_clears_per_tool_and_whole(store: Store) -> None:
    store.feedback.add_feedback(
        [feedback(t, "success", 1.0) for t in ("a::b", "a::b", "a::c")], keep=10
    )
    assert store.feedback.clear_feedback("a::b") == 2
    assert [r.tool_id for r in store.feedback.list_feedback()] == ["a::c"]
    assert store.feedback.clear_feedback() == 1
    assert store.feedback.feedback_summary()["rows"] == 0
