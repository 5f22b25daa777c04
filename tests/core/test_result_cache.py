"""Finished searches are reused until the index changes, on a real SQLite file and model."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import anyio.from_thread

from toolscout.api.gate import SearchGate
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchRequest, Strategy

TOOLS = [
    {"name": "send_email", "server": "mail", "description": "Send an email message."},
    {"name": "get_forecast", "server": "weather", "description": "Weather forecast for a city."},
    {"name": "create_issue", "server": "github", "description": "Open an issue in a repo."},
]
NEW = {"name": "draft_email", "server": "mail", "description": "Write an email draft to send."}


def _write(path: Path, tools: list[dict[str, str]]) -> Path:
    path.write_text(json.dumps(tools), encoding="utf-8")
    return path


def test_a_repeated_search_is_answered_from_the_cache(engine: Engine, tmp_path: Path) -> None:
    engine.index([CatalogFile(_write(tmp_path / "c.json", TOOLS)).read()])
    first = engine.search("send an email", limit=3)
    again = engine.search("send an email", limit=3)
    assert [h.tool.id for h in again.hits] == [h.tool.id for h in first.hits]
    assert again.metadata.get("cached") is True and "cached" not in first.metadata
    assert engine.result_cache_stats() == {"hits": 1, "misses": 1, "entries": 1}
    # Other options are another search.
    assert "cached" not in engine.search("send an email", limit=2).metadata


def test_hierarchical_results_are_cached_by_the_whole_request(
    engine: Engine, tmp_path: Path
) -> None:
    engine.index([CatalogFile(_write(tmp_path / "c.json", TOOLS)).read()])
    req = SearchRequest(query="weather in Paris", strategy=Strategy.DIRECT)
    first = engine.find(req)
    again = engine.find(req)
    assert again.metadata["cached"] is True and "cached" not in first.metadata
    assert [t.tool.id for t in again.tools] == [t.tool.id for t in first.tools]
    # Padding whitespace is stripped by validation: the same request.
    assert engine.find(SearchRequest(query="  weather in Paris ", strategy=Strategy.DIRECT))
    assert (
        "cached"
        not in engine.find(SearchRequest("weather in Paris", strategy=Strategy.HYBRID)).metadata
    )


def test_any_write_drops_cached_results(engine: Engine, tmp_path: Path) -> None:
    catalog = _write(tmp_path / "c.json", TOOLS)
    engine.index([CatalogFile(catalog).read()])
    before = {h.tool.name for h in engine.search("write an email draft", limit=5).hits}
    assert "draft_email" not in before
    engine.index([CatalogFile(_write(catalog, [*TOOLS, NEW])).read()])
    after = engine.search("write an email draft", limit=5)
    assert "cached" not in after.metadata
    assert after.hits[0].tool.name == "draft_email"


def test_a_write_from_another_connection_drops_cached_results(
    settings: Settings, tmp_path: Path
) -> None:
    reader, writer = Engine.open(settings), Engine.open(settings)
    try:
        catalog = _write(tmp_path / "c.json", TOOLS)
        writer.index([CatalogFile(catalog).read()])
        names = [h.tool.name for h in reader.search("write an email draft", limit=5).hits]
        assert "draft_email" not in names
        assert "cached" in reader.search("write an email draft", limit=5).metadata
        writer.index([CatalogFile(_write(catalog, [*TOOLS, NEW])).read()])
        fresh = reader.search("write an email draft", limit=5)
        assert "cached" not in fresh.metadata
        assert fresh.hits[0].tool.name == "draft_email"
    finally:
        reader.close()
        writer.close()


def test_the_cache_can_be_turned_off(tmp_path: Path, vector_cache: Path) -> None:
    s = Settings(db=str(tmp_path / "i.db"), cache_dir=str(vector_cache), result_cache_size=0)
    eng = Engine.open(s)
    try:
        eng.index([CatalogFile(_write(tmp_path / "c.json", TOOLS)).read()])
        eng.search("send an email")
        assert "cached" not in eng.search("send an email").metadata
        assert eng.result_cache_stats() is None
    finally:
        eng.close()


def test_a_lookup_answers_only_from_the_cache_and_counts_one_miss_per_search(
    engine: Engine, tmp_path: Path
) -> None:
    catalog = _write(tmp_path / "c.json", TOOLS)
    engine.index([CatalogFile(catalog).read()])
    req = SearchRequest(query="open a bug report", strategy=Strategy.DIRECT)
    looked = engine.lookup(req)
    assert looked.cached is None
    assert engine.result_cache_stats() == {"hits": 0, "misses": 1, "entries": 0}
    found = engine.answer(looked)  # the search the lookup prepared: no second lookup
    assert engine.result_cache_stats() == {"hits": 0, "misses": 1, "entries": 1}
    cached = engine.lookup(req).cached
    assert cached is not None and cached.metadata["cached"] is True
    assert [t.tool.id for t in cached.tools] == [t.tool.id for t in found.tools]
    engine.index([CatalogFile(_write(catalog, [*TOOLS, NEW])).read()])
    assert engine.lookup(req).cached is None  # a write drops it here too


def test_the_gate_answers_a_repeat_while_every_slot_is_busy(engine: Engine, tmp_path: Path) -> None:
    engine.index([CatalogFile(_write(tmp_path / "c.json", TOOLS)).read()])
    gate = SearchGate(engine, slots=1)
    req = SearchRequest("open a bug report", strategy=Strategy.DIRECT)

    async def main() -> tuple[list[str], list[str], bool]:
        first = await gate.find(req)
        held = anyio.Event()
        release = anyio.Event()

        def busy() -> None:  # occupies the only slot until released
            anyio.from_thread.run_sync(held.set)
            anyio.from_thread.run(release.wait)

        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.run, busy)
            with anyio.fail_after(60):
                await held.wait()
                again = await gate.find(req)  # no slot is free: only the cache can answer
            release.set()
        return (
            [h.tool.id for h in first.tools],
            [h.tool.id for h in again.tools],
            bool(again.metadata.get("cached")),
        )

    first, again, cached = anyio.run(main)
    assert first and again == first and cached
