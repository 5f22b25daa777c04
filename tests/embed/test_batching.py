"""Concurrent query embeddings batched into one model call, over the real packaged model."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from toolscout.embed.base import Vectors, open_embedder
from toolscout.embed.batching import QueryBatcher
from toolscout.errors import EmbedError

QUERIES = [
    "send an email to the team",
    "create a calendar event tomorrow",
    "convert 100 euros to yen",
    "what's the weather in Berlin",
    "open a pull request",
    "roll a six-sided die",
    "read the contents of a file",
    "file a bug in the repo",
]


class _Gate:
    """A real model behind a gate: the first call blocks until released, so the calls that
    arrive meanwhile must queue (deterministic batching, no sleeps)."""

    def __init__(self) -> None:
        self.inner = open_embedder("local:minilm-l6-int8", threads=1)
        self.name, self.dim = self.inner.name, self.inner.dim
        self.entered = threading.Event()
        self.release = threading.Event()
        self.sizes: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        self.sizes.append(len(texts))
        if len(self.sizes) == 1:
            self.entered.set()
            assert self.release.wait(30)
        if any(t == "fail" for t in texts):
            raise EmbedError("model failed")
        return self.inner.embed_query(texts)


def _run_all(batcher: QueryBatcher, gate: _Gate, texts: list[list[str]]) -> list[object]:
    out: list[object] = [None] * len(texts)

    def call(i: int) -> None:
        try:
            out[i] = batcher.embed_query(texts[i])
        except EmbedError as exc:
            out[i] = exc

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert gate.entered.wait(30)
    rest = [threading.Thread(target=call, args=(i,)) for i in range(1, len(texts))]
    for t in rest:
        t.start()
    # Wait until every later caller is queued behind the running first batch.
    for _ in range(3000):
        with batcher._cond:
            if len(batcher._pending) == len(rest):
                break
        threading.Event().wait(0.01)
    gate.release.set()
    for t in [first, *rest]:
        t.join(30)
    return out


def test_callers_arriving_together_share_one_model_call_and_get_their_own_rows() -> None:
    gate = _Gate()
    batcher = QueryBatcher(gate, max_texts=32)
    texts = [[q] for q in QUERIES[:5]] + [QUERIES[5:8]]
    out = _run_all(batcher, gate, texts)
    assert gate.sizes == [1, 7]  # the first alone, then everyone who queued, in one call
    for got, want in zip(out, texts, strict=True):
        assert isinstance(got, np.ndarray) and got.shape == (len(want), 384)
        assert np.allclose(got, gate.inner.embed_query(want), atol=1e-4)
    assert batcher.stats() == {"calls": 6, "batches": 2}


def test_a_batch_never_exceeds_max_texts() -> None:
    gate = _Gate()
    batcher = QueryBatcher(gate, max_texts=3)
    out = _run_all(batcher, gate, [[q] for q in QUERIES])
    assert gate.sizes[0] == 1 and max(gate.sizes) == 3 and sum(gate.sizes) == len(QUERIES)
    assert all(isinstance(o, np.ndarray) for o in out)


def test_a_failed_batch_fails_only_its_callers() -> None:
    gate = _Gate()
    batcher = QueryBatcher(gate, max_texts=2)
    out = _run_all(batcher, gate, [[QUERIES[0]], ["fail"], [QUERIES[1]], [QUERIES[2]]])
    assert gate.sizes == [1, 2, 1]
    assert isinstance(out[0], np.ndarray)
    assert isinstance(out[1], EmbedError) and isinstance(out[2], EmbedError)
    assert isinstance(out[3], np.ndarray)
    assert batcher.embed_query([QUERIES[3]]).shape == (1, 384)  # the batcher still works


def test_empty_input_is_an_empty_matrix() -> None:
    batcher = QueryBatcher(open_embedder("local:minilm-l6-int8", threads=1))
    assert batcher.embed_query([]).shape == (0, 384)
    assert batcher.stats() == {"calls": 0, "batches": 0}
