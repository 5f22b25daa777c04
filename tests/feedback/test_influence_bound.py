"""Feedback's influence is bounded: a thousand rows promoting one tool for requests of another
catalog leave the rankings of requests they do not resemble exactly as they were."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np
import pytest

from toolscout.engine import Engine
from toolscout.models import SearchMode
from toolscout.store.roles import FeedbackRecord

ROOT = Path(__file__).resolve().parents[2]
PROMOTED = "weather::get_forecast"


def _lines(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.slow
def test_a_thousand_rows_move_only_the_requests_they_resemble(engine: Engine) -> None:
    train = [r["query"] for r in _lines(ROOT / "data/natural/metatool/queries.jsonl")]
    flood = random.Random(0).sample(train, 1000)
    vectors = engine.embedder.embed_query(flood)
    engine.store.feedback.add_feedback(
        [
            FeedbackRecord(
                0, time.time(), q, PROMOTED, "success", (), "api", engine.embedder.name, v
            )
            for q, v in zip(flood, vectors, strict=True)
        ],
        keep=10_000,
    )
    requests = [r for r in _lines(ROOT / "tests/data/single_intent/queries.jsonl")][1::2]
    texts = [r["query"] for r in requests]
    memory = engine.feedback.memory
    assert memory is not None
    ranked = engine.searcher.ranking(SearchMode.HYBRID)[0] == "learned"
    threshold = (memory.params.for_ranked() if ranked else memory.params).threshold
    resemble = (np.asarray(engine.embedder.embed_query(texts)) @ vectors.T).max(axis=1) >= threshold

    def top3() -> list[list[str]]:
        return [[h.tool.id for h in engine.search(t, limit=3).tools] for t in texts]

    after = top3()
    engine.searcher.boost = None
    before = top3()
    unlike = [i for i in range(len(texts)) if not resemble[i]]
    assert len(unlike) > len(texts) // 2
    assert all(after[i] == before[i] for i in unlike)
    hits = [
        sum(1 for i, r in enumerate(requests) if r["gold"][0] in found[i])
        for found in (before, after)
    ]
    assert abs(hits[1] - hits[0]) <= 0.01 * len(requests) + 1
