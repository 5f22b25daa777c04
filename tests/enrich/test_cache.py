"""Change detection: enrichments are reused on unchanged input, remade on a changed description
or schema, and remade when older than the maximum age (real SQLite file, offline enricher)."""

from __future__ import annotations

import dataclasses

from support.enrich_catalog import tracker_tools
from toolscout.enrich.cache import EnrichmentCache, EnrichReport
from toolscout.enrich.offline import OfflineEnricher
from toolscout.enrich.pipeline import EnrichmentPipeline
from toolscout.models import Tool
from toolscout.store.sqlite import SQLiteStore

DAY = 86400.0


class Clock:
    """A settable clock: ages are tested by moving time, never by waiting."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _pipeline(store: SQLiteStore, clock: Clock, max_age_days: float = 7.0) -> EnrichmentPipeline:
    return EnrichmentPipeline(store, OfflineEnricher(), max_age_days=max_age_days, clock=clock)


def test_unchanged_input_is_served_from_the_cache(store: SQLiteStore) -> None:
    tools = tracker_tools()
    pipeline = _pipeline(store, Clock())
    first = pipeline.fields(tools)
    assert pipeline.last_report.tools_made == len(tools)
    assert pipeline.last_report.profiles_made == 2
    second = pipeline.fields(tools)
    report = pipeline.last_report
    assert (report.tools_cached, report.tools_made) == (len(tools), 0)
    assert (report.profiles_cached, report.profiles_made) == (2, 0)
    assert second == first


def test_cache_survives_reopening_the_index(store: SQLiteStore, tmp_path: object) -> None:
    tools = tracker_tools()
    _pipeline(store, Clock()).fields(tools)
    reopened = SQLiteStore(store.url)
    try:
        pipeline = _pipeline(reopened, Clock())
        pipeline.fields(tools)
        assert pipeline.last_report.tools_made == 0
    finally:
        reopened.close()


def test_changed_description_remakes_that_tool(store: SQLiteStore) -> None:
    tools = tracker_tools()
    pipeline = _pipeline(store, Clock())
    pipeline.fields(tools)
    changed = dataclasses.replace(tools[4], description="Post a chat message to a room.")
    pipeline.fields([*tools[:4], changed, tools[5]])
    report = pipeline.last_report
    # The chat server's tool list changed, so its profile was remade; the tracker's was not.
    assert (report.profiles_made, report.profiles_cached) == (1, 1)
    assert report.tools_made >= 1
    assert report.tools_cached >= 4


def test_changed_schema_remakes_that_tool(store: SQLiteStore) -> None:
    tools = tracker_tools()
    cache = EnrichmentCache(store.enrichments, OfflineEnricher(), clock=Clock())
    before = cache.tool_hash(tools[0], None)
    new_schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    changed = dataclasses.replace(tools[0], input_schema=new_schema)
    assert cache.tool_hash(changed, None) != before
    report = EnrichReport()
    cache.tools([tools[0]], {}, report)
    cache.tools([changed], {}, report)
    assert (report.tools_made, report.tools_cached) == (2, 0)
    cache.tools([changed], {}, report)
    assert report.tools_cached == 1


def test_entries_older_than_the_maximum_age_are_remade(store: SQLiteStore) -> None:
    tools = tracker_tools()
    clock = Clock()
    pipeline = _pipeline(store, clock, max_age_days=7)
    pipeline.fields(tools)
    clock.now += 6 * DAY
    pipeline.fields(tools)
    assert pipeline.last_report.tools_made == 0
    clock.now += 2 * DAY  # 8 days after they were made
    pipeline.fields(tools)
    assert pipeline.last_report.tools_made == len(tools)
    assert pipeline.last_report.profiles_made == 2


def test_force_remakes_everything(store: SQLiteStore) -> None:
    tools = tracker_tools()
    pipeline = _pipeline(store, Clock())
    pipeline.fields(tools)
    pipeline.fields(tools, force=True)
    assert pipeline.last_report.tools_made == len(tools)


def test_another_enricher_version_does_not_reuse_rows(store: SQLiteStore) -> None:
    from toolscout.enrich.offline import OfflineOptions

    tools: list[Tool] = tracker_tools()
    _pipeline(store, Clock()).fields(tools)
    other = EnrichmentPipeline(store, OfflineEnricher(OfflineOptions(sentence=True)))
    other.fields(tools)
    assert other.last_report.tools_made == len(tools)
