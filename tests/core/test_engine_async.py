"""Engine as a context manager, and its async edges (the sync calls in a worker thread)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import anyio
import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import QueryError, StoreError
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchRequest

CATALOG = [
    {"name": "get_forecast", "server": "weather", "description": "Weather forecast for a city."},
    {"name": "send_message", "server": "slack", "description": "Post a message to a channel."},
]


def _indexed(settings: Settings, tmp_path: Path) -> Engine:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(CATALOG), encoding="utf-8")
    engine = Engine.open(settings)
    engine.index([CatalogFile(path).read()])
    return engine


def test_with_block_closes_the_engine(settings: Settings, tmp_path: Path) -> None:
    with _indexed(settings, tmp_path) as engine:
        assert engine.search("rain tomorrow", limit=1).hits[0].tool.id == "weather::get_forecast"
    with pytest.raises(StoreError):
        engine.store.count()


def test_asearch_answers_as_search_without_blocking_the_event_loop(
    settings: Settings, tmp_path: Path
) -> None:
    with _indexed(settings, tmp_path) as engine:
        expected = [h.tool.id for h in engine.search("post to the team", limit=2).hits]

        async def main() -> tuple[list[str], int]:
            ticks = 0
            done = anyio.Event()

            async def tick() -> None:
                nonlocal ticks
                while not done.is_set():
                    ticks += 1
                    await anyio.sleep(0)

            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)
                result = await engine.asearch("post to the team", limit=2, mode="vector")
                done.set()
            return [h.tool.id for h in result.hits], ticks

        vector_ids, ticks = anyio.run(main)
        assert ticks > 1  # the loop kept running while the search ran in a thread
        assert vector_ids[0] == expected[0] == "slack::send_message"


def test_async_errors_are_the_sync_ones_and_afind_answers(
    settings: Settings, tmp_path: Path
) -> None:
    with _indexed(settings, tmp_path) as engine:
        with pytest.raises(QueryError):
            anyio.run(lambda: engine.asearch("x", limit=99))
        found = anyio.run(engine.afind, SearchRequest(query="weather in Oslo"))
        assert found.tools and found.tools[0].tool.id == "weather::get_forecast"


def test_index_progress_moves_while_a_chunk_embeds(settings: Settings) -> None:
    from importlib import resources

    starter = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
    seen: list[tuple[int, int]] = []
    with Engine.open(settings) as engine:
        report = engine.index(
            [CatalogFile(starter).read()], progress=lambda d, t: seen.append((d, t))
        )
    total = report.added
    assert total > 100 and seen[-1] == (total, total)
    steps = [done for done, _ in seen]
    assert steps == sorted(steps) and max(b - a for a, b in itertools.pairwise(steps)) <= 64
