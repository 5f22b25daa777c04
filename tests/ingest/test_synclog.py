"""The sync log: each source's last sync, problems and failures, kept in the index."""

from __future__ import annotations

import json
from pathlib import Path

from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.ingest.pyfile import ToolDirectory
from toolscout.store.synclog import read_log
from toolscout.sync.sync import catalog_source, sync

TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city."},
    {"name": "send_mail", "description": "Send an email message."},
    {"description": "an entry without a name"},
]


def test_a_sync_records_each_source_its_skipped_entries_and_failures(
    engine: Engine, tmp_path: Path
) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    missing = ToolDirectory(tmp_path / "no-such-dir")
    source = CatalogFile(catalog, source=catalog_source(catalog))
    sync(engine, [source, missing])

    log = read_log(engine.store)
    good = log[catalog_source(catalog)]
    assert good.synced_at is not None and good.added == 2 and good.error is None
    assert good.problem_count == 1 and "name" in good.problems[0]
    failed = log[missing.name]
    assert failed.error and failed.synced_at is None
    assert engine.inventory().sync == log
    assert engine.inventory().sources[catalog_source(catalog)] == 2


def test_a_failed_listing_keeps_the_time_of_the_last_good_sync(
    engine: Engine, tmp_path: Path
) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps({"tools": TOOLS[:2]}), encoding="utf-8")
    source = CatalogFile(catalog, source=catalog_source(catalog))
    sync(engine, [source])
    first = read_log(engine.store)[source.name]
    catalog.write_text("{broken", encoding="utf-8")
    sync(engine, [source])
    after = read_log(engine.store)[source.name]
    assert after.error is not None and after.synced_at == first.synced_at
    assert engine.store.count() == 2  # a failed listing is not an empty listing
