"""The index run's pipeline: chunks embed on a thread of their own while the caller writes and
classifies the previous one, with the same rows, the same skills and the same failure rules as
one chunk after the other."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import toolscout.indexing as indexing
from toolscout.config import Settings
from toolscout.embed.base import Embedder, EmbedderWrapper, Vectors
from toolscout.engine import Engine
from toolscout.errors import EmbedError, StoreError
from toolscout.models import Loaded, SearchMode, Tool

CHUNK = 8
TOOLS = 40  # five chunks


def _tools(n: int = TOOLS) -> list[Tool]:
    topics = ["weather", "calendar", "invoices", "git", "email", "maps", "music", "files"]
    return [
        Tool(
            id=f"p:{i:03d}",
            name=f"tool_{i:03d}",
            description=f"Handles {topics[i % len(topics)]} task number {i} for project {i * 7}",
            server=f"server{i % 3}",
            source="p",
        )
        for i in range(n)
    ]


class FailingAt(EmbedderWrapper):
    """The real model, except that its ``call``-th document call (from 1) fails: with
    ``EmbedError``, or by handing back vectors of the wrong width (the store then refuses that
    chunk's write)."""

    def __init__(self, inner: Embedder, call: int, how: str) -> None:
        super().__init__(inner)
        self.call, self.how, self.calls = call, how, 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        rows = self.inner.embed(texts)
        if self.calls != self.call:
            return rows
        if self.how == "raise":
            raise EmbedError("injected: the model failed on this chunk")
        return np.zeros((len(texts), rows.shape[1] + 1), dtype=np.float32)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexing, "EMBED_CHUNK", CHUNK)
    monkeypatch.setattr(indexing, "PROGRESS_STEP", CHUNK)


Snapshot = dict[str, tuple[bytes, str, tuple[tuple[str, float, bool], ...]]]


def _snapshot(engine: Engine) -> tuple[Snapshot, list[tuple[str, float]]]:
    """Each tool's vector bytes, text hash and skill assignments; and a lexical search's ids
    and scores (the analysed fields the writes stored)."""
    ids = sorted(t.id for t in engine.store.tools.list_tools())
    vectors = engine.store.vectors(ids)
    hashes = engine.store.tools.hashes()
    assigned = engine.store.skills.assignments(ids)
    rows = {
        i: (
            vectors[i].tobytes(),
            hashes[i][1],
            tuple((a.skill_id, a.confidence, a.is_primary) for a in assigned.get(i, [])),
        )
        for i in ids
    }
    found = engine.search("calendar task for project", mode=SearchMode.BM25, limit=10)
    return rows, [(h.tool.id, h.score) for h in found.hits]


def _embedding_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "toolscout-index-embed"]


@pytest.mark.usefixtures("small_chunks")
def test_a_pipelined_run_writes_what_one_chunk_after_the_other_writes(
    engine: Engine, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int, float]] = []
    before = sys.getswitchinterval()
    report = engine.index(
        [Loaded(source="p", tools=_tools())],
        progress=lambda d, t: seen.append((d, t, sys.getswitchinterval())),
    )
    assert report.added == report.embedded == TOOLS
    assert seen[0][:2] == (0, TOOLS) and seen[-1][:2] == (TOOLS, TOOLS)
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)
    # Quick hand-offs of the interpreter while the writes run beside the embedding, and the
    # process's own interval again afterwards.
    assert {i for _, _, i in seen[1:]} == {indexing.HANDOFF_S}
    assert sys.getswitchinterval() == before
    piped = _snapshot(engine)
    assert len(piped[1]) == 10
    state = engine.store.skills.classification_state()
    assert all(state[i][1] == "done" for i in piped[0])  # every tool classified in its chunk

    monkeypatch.setattr(indexing, "AHEAD", 0)
    serial = Engine.open(Settings(db=str(tmp_path / "serial.db"), cache_dir=settings.cache_dir))
    try:
        serial.index([Loaded(source="p", tools=_tools())])
        assert _snapshot(serial) == piped
    finally:
        serial.close()
    assert not _embedding_threads()


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize(("how", "error"), [("raise", EmbedError), ("wrong_width", StoreError)])
@pytest.mark.parametrize("ahead", [0, 1])
def test_a_failed_chunk_writes_nothing_of_itself_or_later_and_stops_the_embedding(
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    error: type[Exception],
    ahead: int,
) -> None:
    monkeypatch.setattr(indexing, "AHEAD", ahead)
    failing = FailingAt(engine.embedder, call=3, how=how)
    engine.embedder = failing
    with pytest.raises(error):
        engine.index([Loaded(source="p", tools=_tools())])
    # The first two chunks committed; the third (the failed one) and the rest did not.
    assert len(engine.store.tools.list_tools()) == 2 * CHUNK
    assert not _embedding_threads()
    # The embedding stopped soon after the failure: at most the chunk in hand was embedded.
    assert failing.calls <= 4
    # The next run finishes the job, and the written tools are classified.
    engine.embedder = failing.inner
    report = engine.index([Loaded(source="p", tools=_tools())])
    assert report.added == TOOLS - 2 * CHUNK
    state = engine.store.skills.classification_state()
    assert all(state[t.id][1] == "done" for t in _tools())


@pytest.mark.usefixtures("small_chunks")
def test_a_failing_classification_stops_the_run_after_its_chunk_committed(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolscout.skills.classify as classify

    calls = {"n": 0}
    real = classify.Classification.run

    def failing_run(self: classify.Classification, *args: object, **kw: object) -> set[str]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise StoreError("injected: the assignments could not be written")
        return real(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(classify.Classification, "run", failing_run)
    with pytest.raises(StoreError, match="injected"):
        engine.index([Loaded(source="p", tools=_tools())])
    assert len(engine.store.tools.list_tools()) == 2 * CHUNK
    assert not _embedding_threads()
    monkeypatch.setattr(classify.Classification, "run", real)
    engine.index([Loaded(source="p", tools=_tools())])  # the repair classifies the second chunk
    state = engine.store.skills.classification_state()
    assert all(state[t.id][1] == "done" for t in _tools())


def test_a_repeated_text_is_embedded_once_with_the_same_bytes(engine: Engine) -> None:
    from toolscout.embed.local import load_local

    model = load_local("tool-minilm-l6")
    texts = ["send an email", "book a meeting room", "send an email"] * 8
    embedded: list[str] = []
    real = model._embed

    def counting(chunk: Sequence[str], session: object, batch: int) -> Vectors:
        embedded.extend(chunk)
        return real(chunk, session, batch)

    model._embed = counting  # type: ignore[method-assign,assignment]
    try:
        rows = model.embed(texts)
    finally:
        del model._embed
    assert sorted(embedded) == ["book a meeting room", "send an email"]
    alone = {t: model.embed([t])[0].tobytes() for t in set(texts)}
    assert [r.tobytes() for r in rows] == [alone[t] for t in texts]
