"""One search pass: the request's vectors are made only when a stage reads them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors
from toolscout.engine import Engine
from toolscout.models import Loaded, SearchMode, SearchRequest, Strategy, Tool


class QueryCounter(EmbedderWrapper):
    """The real embedder, counting the query embeddings a search asks for."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.queries = 0

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        self.queries += 1
        return self.inner.embed_query(texts)


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
    engine.index(
        [
            Loaded(
                "tests",
                [
                    Tool(
                        "mail.send_email",
                        "send_email",
                        "Send an email message to a recipient",
                        server="mail",
                    ),
                    Tool(
                        "weather.get_weather",
                        "get_weather",
                        "Get the weather forecast for a city",
                        server="weather",
                    ),
                ],
            )
        ]
    )
    counter = QueryCounter(engine.searcher.embedder)
    engine.searcher.embedder = counter
    found = engine.find(SearchRequest("send an email", strategy=strategy, mode=mode, limit=2))
    assert [h.tool.name for h in found.tools][:1] == ["send_email"]
    assert counter.queries == embeddings
