"""One search pass: the request's vectors are made only when a stage reads them, and the index
state is read once, by the search, never again by a stage or a leg."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from toolscout.config import Settings
from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors
from toolscout.engine import Engine
from toolscout.models import Loaded, Scored, SearchMode, SearchRequest, Strategy, Tool


class QueryCounter(EmbedderWrapper):
    """The real embedder, counting the query embeddings a search asks for."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.queries = 0

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        self.queries += 1
        return self.inner.embed_query(texts)


TOOLS = Loaded(
    "tests",
    [
        Tool("mail.send_email", "send_email", "Send an email to a recipient", server="mail"),
        Tool("weather.get_weather", "get_weather", "Get the weather forecast", server="weather"),
        Tool("files.read_file", "read_file", "Read a file from the local disk", server="files"),
    ],
)


@pytest.mark.parametrize(
    ("strategy", "mode", "embeddings"),
    [
        (Strategy.DIRECT, SearchMode.BM25, 0),
        (Strategy.DIRECT, SearchMode.HYBRID, 1),
        (Strategy.DIRECT, SearchMode.VECTOR, 1),
        (Strategy.HIERARCHICAL, SearchMode.BM25, 1),  # stage 1 matches skills by vector
    ],
)
def test_a_search_embeds_the_request_only_when_a_stage_reads_it(
    engine: Engine, strategy: Strategy, mode: SearchMode, embeddings: int
) -> None:
    engine.index([TOOLS])
    counter = QueryCounter(engine.searcher.embedder)
    engine.searcher.embedder = counter
    found = engine.find(SearchRequest("send an email", strategy=strategy, mode=mode, limit=2))
    assert [h.tool.name for h in found.tools][:1] == ["send_email"]
    assert counter.queries == embeddings


class ThreadRecorder(EmbedderWrapper):
    """The real embedder, recording the thread each query embedding ran on."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.threads: list[str] = []

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        self.threads.append(threading.current_thread().name)
        return self.inner.embed_query(texts)


def test_the_lexical_leg_beside_the_embedding_changes_only_the_thread_it_runs_on(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.index([TOOLS])
    recorder = ThreadRecorder(engine.searcher.embedder)
    engine.searcher.embedder = recorder
    lexical_threads: list[str] = []
    store_lexical = engine.store.lexical

    def lexical(*args: Any, **kwargs: Any) -> list[Scored]:
        lexical_threads.append(threading.current_thread().name)
        return store_lexical(*args, **kwargs)

    monkeypatch.setattr(engine.store, "lexical", lexical)
    request = SearchRequest("send an email with the weather forecast", limit=3)
    beside = engine.find(request)
    engine.searcher.config = replace(engine.searcher.config, parallel_legs=False)
    after = engine.find(request)  # the configuration is part of the result cache's key
    ranked = [(h.tool.id, h.score) for h in beside.tools]
    assert ranked == [(h.tool.id, h.score) for h in after.tools] and ranked
    caller = threading.current_thread().name
    # The embedding and the vector leg stay on the caller; the lexical leg ran on a leg thread.
    assert recorder.threads == [caller, caller]
    assert lexical_threads[0].startswith("toolscout-leg")
    assert lexical_threads[1] == caller
    assert beside.metadata["query_embedding_time_ms"] > 0
    assert after.metadata["query_embedding_time_ms"] > 0


@pytest.mark.parametrize("strategy", list(Strategy))
def test_a_search_reads_the_data_version_once_with_the_posting_index_and_hnsw_legs_on(
    tmp_path: Path, vector_cache: Path, strategy: Strategy
) -> None:
    url = f"sqlite:///{tmp_path / 'index.db'}?lex_min_tools=0&ann_min_tools=0"
    with Engine.open(Settings(db=url, cache_dir=str(vector_cache))) as engine:
        engine.index([TOOLS])
        statements: list[str] = []
        engine.store.database.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        for query in ("send an email", "read a file from disk", "weather in paris"):
            statements.clear()
            found = engine.find(SearchRequest(query, strategy=strategy, limit=2))
            assert found.tools
            # The search's own state read; neither leg reads the version again.
            assert [s for s in statements if "data_version" in s] == ["PRAGMA data_version"]
        # Both legs that follow the rows in memory answered those searches.
        assert engine.store.lex.describe()["leg"] == "postings"  # type: ignore[attr-defined]
        assert engine.store.ann.describe()["leg"] == "ann"  # type: ignore[attr-defined]
