"""Quality floor on real data: the default hybrid search on toolbench_stable.

Measured 75.3 nDCG@10 / 88.0 hit@3 (docs/BENCHMARKS.md); the floor leaves a safe margin for
platform noise while still failing if fusion or text analysis regresses to the peers' level
(bm25s 67.8, plain RRF 67.7).
"""

from collections.abc import Callable
from pathlib import Path

import pytest

from toolscout.engine import Engine
from toolscout.eval.run import evaluate, index_dataset


@pytest.mark.slow
def test_default_search_stays_above_the_toolbench_floor(
    engine: Engine, shared_bench: Callable[[str], Path]
) -> None:
    set_dir = shared_bench("toolbench_stable")
    index_dataset(engine, set_dir)
    report = evaluate(engine, set_dir)
    assert report.queries == 765
    assert report.overall["ndcg@10"] >= 0.71
    assert report.overall["hit@3"] >= 0.84
