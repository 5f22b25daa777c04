"""What was learned from use, on a run the learned ranker scored: its probabilities and the
fusion's scores are never compared, and the memory reads its own threshold and boost there."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolscout.engine import Engine
from toolscout.feedback.memory import MemoryParams, RequestMemory, Snapshot
from toolscout.models import SearchMode

REQUEST = "open a PR from feature/search into main"
RIGHT = "github::create_pull_request"
#: Fewer candidates than the starter catalog's fused run holds, so the run has a tail that the
#: ranker does not score.
HEAD = 5


def test_a_boost_lifts_only_boosted_tools_past_the_ranked_candidates(engine: Engine) -> None:
    searcher = engine.searcher
    assert searcher.ranking(SearchMode.HYBRID)[0] == "learned"
    searcher.config = replace(searcher.config, candidates=HEAD)
    legs, _ = searcher.legs(REQUEST)
    assert len(legs.fused) > HEAD + 3
    ranked = {h.id for h in legs.fused[:HEAD]}
    for _ in range(3):
        engine.feedback.record(REQUEST, RIGHT, "success")
    found = [h.tool.id for h in engine.search(REQUEST, limit=HEAD + 3).tools]
    # Ahead of the ranker's candidates: only the tool the recorded calls promoted.
    head = found[: HEAD + 1]
    assert RIGHT in head
    assert set(head) <= ranked | {RIGHT}


def _snapshot(cosine: float) -> tuple[Snapshot, np.ndarray]:
    """One recorded success and a request vector at ``cosine`` to it."""
    recorded = np.zeros(4, dtype=np.float32)
    recorded[0] = 1.0
    request = np.array([cosine, np.sqrt(1.0 - cosine**2), 0.0, 0.0], dtype=np.float32)
    snap = Snapshot(
        "k",
        recorded[None, :],
        ("a::tool",),
        np.zeros(1, dtype=np.intp),
        np.ones(1, dtype=np.float32),
    )
    return snap, request


def test_a_ranked_run_reads_its_own_threshold(engine: Engine) -> None:
    memory = engine.feedback.memory
    assert isinstance(memory, RequestMemory)
    params = MemoryParams()
    assert params.threshold < 0.55 < params.for_ranked().threshold
    snap, request = _snapshot(0.55)
    assert memory.gains(snap, request, params) == {
        "a::tool": memory.gains(snap, request)["a::tool"]
    }
    assert memory.gains(snap, request, params.for_ranked()) == {}
    snap, request = _snapshot(0.9)
    assert memory.gains(snap, request, params.for_ranked())["a::tool"] > 0.0
