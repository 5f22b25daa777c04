"""A request whose tool was taken out of a small catalog is ``no_match``; with its tool, not.

The construction the request model learns from (bench/fit/answerable.py): the same request is
answerable over a catalog that holds its tool and unanswerable once that tool and its
near-copies are gone (here: every tool of its server). Real model, real index, 40-odd tools of
the built-in catalog.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchRequest
from toolscout.search.config import SearchConfig
from toolscout.search.hybrid import HybridSearcher

STARTER = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
SERVERS = ("github", "slack", "gmail", "google-calendar", "time", "filesystem", "jira")
#: Requests of tests/data/single_intent and the server of their gold tool.
REQUESTS = {
    "get rid of the old build folder": "filesystem",
    "what issues are still open on the backend repo": "github",
}


def _engine(folder: Path, without: str | None) -> Engine:
    tools = [
        t
        for t in json.loads(STARTER.read_text(encoding="utf-8"))
        if t["server"] in SERVERS and t["server"] != without
    ]
    path = folder / "catalog.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    engine = Engine.open(Settings(db=str(folder / "index.db"), cache_dir=str(folder / "cache")))
    engine.index([CatalogFile(path, source="small").read()])
    return engine


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str | None, Engine]]:
    engines = {
        name: _engine(tmp_path_factory.mktemp(name or "whole"), name)
        for name in (None, *REQUESTS.values())
    }
    yield engines
    for engine in engines.values():
        engine.close()


@pytest.mark.parametrize("query", list(REQUESTS))
def test_a_request_is_no_match_once_its_tools_are_taken_out(
    catalogs: dict[str | None, Engine], query: str
) -> None:
    whole, without = catalogs[None], catalogs[REQUESTS[query]]
    served = whole.find(SearchRequest(query))
    assert not served.no_match
    assert served.tools[0].tool.server == REQUESTS[query]
    left_out = without.find(SearchRequest(query))
    assert left_out.no_match
    assert left_out.metadata["answerable"] < served.metadata["answerable"]


@pytest.mark.parametrize("query", list(REQUESTS))
def test_the_learned_ranker_leaves_no_match_as_it_was(
    catalogs: dict[str | None, Engine], query: str
) -> None:
    """``no_match`` reads the legs before any re-ordering, so it is the same with the learned
    ranker on or off."""
    for engine in catalogs.values():
        plain = HybridSearcher(engine.store, engine.embedder, SearchConfig(learned_ranker=False))
        ranked = HybridSearcher(engine.store, engine.embedder, SearchConfig(learned_ranker=True))
        off, on = plain.search(query, limit=5), ranked.search(query, limit=5)
        assert on[0].answerable == pytest.approx(off[0].answerable)
        assert plain.no_match(off) == ranked.no_match(on)
        plain.close()
        ranked.close()
