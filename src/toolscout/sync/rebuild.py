"""``index --rebuild``: build a new index beside the current one, then swap it in at the end.

The current index stays untouched and searchable until the new one is complete: a catalog that
does not load, a model that cannot be opened, a failed write or a kill at any point leaves it
as it was. What the new index cannot re-derive from the catalogs is carried over first: the
skill catalog (without vectors, which belong to the old model's space), pending and decided
skill suggestions, the skill bookkeeping, the enrichment cache (LLM answers are costly) and
the feedback log (what agents called after which request).
The whole run holds the index's writer lock, so a sync cannot write into the old index only
to be lost at the swap. Servers keep their loaded model: restart them after a rebuild.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from toolscout.config import Settings
from toolscout.engine import Engine, Progress
from toolscout.errors import IngestError
from toolscout.models import IndexReport, Loaded
from toolscout.store.base import Store, open_store

#: meta keys of the skill layer a rebuild keeps.
SKILL_META = ("skills_seeded",)
BATCH = 500


def _carry_over(old: Store, new: Store, loads: Sequence[Loaded]) -> None:
    seeded = {s.id for s in new.skills.list_skills()}  # a new index may start with the starter ones
    for skill in old.skills.list_skills():
        if skill.id in seeded:
            new.skills.update_skill(skill)
        else:
            new.skills.insert_skill(skill)
    for suggestion in old.skills.list_suggestions(None):
        new.skills.add_suggestion(suggestion)
    for key in SKILL_META:
        value = old.get_meta(key)
        if value is not None:
            new.set_meta(key, value)
    tools = [t for loaded in loads for t in loaded.tools]
    groups = sorted({x for t in tools for x in (t.server, t.category) if x})
    ids = sorted({t.id for t in tools})
    for enricher, kind in sorted({(e, k) for e, k, *_ in old.enrichments.enrichment_summary()}):
        keys = ids if kind == "tool" else groups
        for start in range(0, len(keys), BATCH):
            rows = old.enrichments.get_enrichments(kind, keys[start : start + BATCH], enricher)
            new.enrichments.put_enrichments(list(rows.values()))


def rebuild_index(
    settings: Settings,
    loads: Sequence[Loaded],
    *,
    progress: Progress | None = None,
    open_engine: Callable[[str], Engine] | None = None,
) -> IndexReport:
    """Index ``loads`` into a new index and make it the one ``settings.db`` names.

    ``open_engine(url)`` opens the engine that builds the new index (default: ``Engine.open``
    with ``settings`` pointed at it), e.g. to reuse an embedder already loaded.

    Raises:
        IngestError: ``loads`` hold no tool at all (nothing changed).
        ConfigError, EmbedError: the configured model cannot be opened (nothing changed).
        StoreError: a read or write failed (the old index is kept).
    """
    if not any(loaded.tools for loaded in loads):
        raise IngestError(
            "index --rebuild: the catalogs hold no usable tool; the index was left as it was"
        )
    current = open_store(settings.db)
    try:
        with current.writer_lock():
            staging = current.staging()
            if open_engine is None:
                overrides: dict[str, Any] = {"db": staging}
                engine = Engine.open(settings.model_copy(update=overrides))
            else:
                engine = open_engine(staging)
            try:
                _carry_over(current, engine.store, loads)
                engine.feedback.carry_over(current)
                report = engine.index(loads, progress=progress)
            finally:
                engine.close()
            current.replace_with(staging)
    finally:
        current.close()
    return report
