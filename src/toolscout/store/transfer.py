"""Copy a whole index from one store to another (``toolscout migrate``), vectors and all.

Tools, vectors, skills (with their vectors), assignments, classification state, suggestions,
the enrichment cache, the feedback log and the skill bookkeeping in ``meta`` are copied as
they are. Lexical
fields are the exception: the SQLite store's FTS5 table is contentless, so no store can hand
its analysed fields back. They are re-derived by ``derive`` (the engine's own indexing path,
with the enrichment cache copied first) and each tool's re-derived text hash is compared with
the one the source recorded; the report counts the tools whose text came out different (an
index built by another toolscout version or enricher setting: `toolscout index` refreshes them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from toolscout.errors import StoreError
from toolscout.models import Tool
from toolscout.store.base import IndexEntry, Store
from toolscout.store.roles import Classified

#: ``derive(tools) -> {tool id: (analysed fields, text hash)}``
Derive = Callable[[Sequence[Tool]], Mapping[str, tuple[Mapping[str, str], str]]]
Progress = Callable[[int, int], None]

#: meta keys the skill layer keeps (the identity and schema version are the target's own).
COPIED_META = ("skills_seeded",)
BATCH = 500
#: Past any retention limit: every row of a feedback log.
ALL_FEEDBACK = 1_000_000_000


@dataclass
class TransferReport:
    """What a copy did."""

    tools: int = 0
    text_differs: int = 0
    skills: int = 0
    assignments: int = 0
    suggestions: int = 0
    enrichments: int = 0
    feedback: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _copy_enrichments(source: Store, target: Store, tools: Sequence[Tool]) -> int:
    groups = {x for t in tools for x in (t.server, t.category) if x}
    copied = 0
    kinds = {(enricher, kind) for enricher, kind, *_ in source.enrichments.enrichment_summary()}
    for enricher, kind in sorted(kinds):
        keys = sorted({t.id for t in tools} if kind == "tool" else groups)
        for start in range(0, len(keys), BATCH):
            rows = source.enrichments.get_enrichments(kind, keys[start : start + BATCH], enricher)
            target.enrichments.put_enrichments(list(rows.values()))
            copied += len(rows)
    return copied


def _copy_tools(
    source: Store,
    target: Store,
    tools: Sequence[Tool],
    derive: Derive,
    report: TransferReport,
    progress: Progress | None,
) -> None:
    recorded = source.tools.hashes()
    derived = derive(tools)
    for start in range(0, len(tools), BATCH):
        chunk = tools[start : start + BATCH]
        vectors = source.vectors([t.id for t in chunk])
        entries = []
        for tool in chunk:
            if tool.id not in vectors:
                raise StoreError(f"migrate: tool {tool.id!r} has no vector in the source index")
            fields, text_hash = derived[tool.id]
            if recorded.get(tool.id, ("", ""))[1] != text_hash:
                report.text_differs += 1
            entries.append(IndexEntry(tool, fields, vectors[tool.id], text_hash))
        target.upsert(entries)
        report.tools += len(entries)
        if progress:
            progress(report.tools, len(tools))


def _copy_skills(source: Store, target: Store, ids: Sequence[str], report: TransferReport) -> None:
    existing = {s.id for s in target.skills.list_skills()}
    for skill in source.skills.list_skills():
        if skill.id in existing:
            target.skills.update_skill(skill)
        else:
            target.skills.insert_skill(skill)
        report.skills += 1
    target.skills.set_skill_vectors(dict(source.skills.skill_vectors()))
    for skill_id, (text_hash, vector) in source.skills.skill_profiles().items():
        target.skills.set_skill_profile(skill_id, vector, text_hash)
    state = source.skills.classification_state()
    assigned = source.skills.assignments(ids)
    classified = sorted(set(assigned) | {t for t, (_, status) in state.items() if status == "done"})
    done = [
        Classified(tid, state.get(tid, ("", ""))[0], "migrated", tuple(assigned.get(tid, ())))
        for tid in classified
    ]
    for start in range(0, len(done), BATCH):
        target.skills.replace_assignments(done[start : start + BATCH])
    report.assignments = sum(len(c.assignments) for c in done)
    for tool_id, (content_hash, status) in state.items():
        if status != "done" and tool_id not in assigned:
            # The reason is not part of the protocol's reads; the retry will say it again.
            target.skills.mark_classify_failed(
                tool_id, content_hash, "failed before toolscout migrate"
            )
    for suggestion in source.skills.list_suggestions(None):
        target.skills.add_suggestion(suggestion)
        report.suggestions += 1


def copy_feedback(source: Store, target: Store) -> int:
    """Append ``source``'s feedback log to ``target``'s, oldest first, vectors and all (rows
    embedded by another model are embedded again when the memory loads them).

    Raises: StoreError."""
    rows = list(reversed(source.feedback.list_feedback(limit=ALL_FEEDBACK, vectors=True)))
    if rows:
        target.feedback.add_feedback(rows, keep=ALL_FEEDBACK)
    return len(rows)


def copy_index(
    source: Store, target: Store, derive: Derive, *, progress: Progress | None = None
) -> TransferReport:
    """Copy ``source`` into ``target`` (bound to the source's identity first).

    Raises:
        StoreError: the source has no index, or a read/write fails.
        ConfigError: the target already holds an index of another identity.
    """
    identity = source.identity()
    if identity is None:
        raise StoreError(f"migrate: {source.url} holds no index (nothing was ever indexed)")
    target.bind(identity)
    report = TransferReport()
    ids = sorted(source.tools.hashes())
    tools: list[Tool] = []
    for start in range(0, len(ids), BATCH):
        got = source.tools.get_many(ids[start : start + BATCH])
        tools.extend(got[i] for i in ids[start : start + BATCH] if i in got)
    report.enrichments = _copy_enrichments(source, target, tools)
    # A store that can defer index upkeep for a bulk load (PostgreSQL's HNSW) gets to.
    with target.bulk():
        _copy_tools(source, target, tools, derive, report, progress)
    _copy_skills(source, target, ids, report)
    report.feedback = copy_feedback(source, target)
    for key in COPIED_META:
        value = source.get_meta(key)
        if value is not None:
            target.set_meta(key, value)
    return report
