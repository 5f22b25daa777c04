"""Where the benchmarks' shared evaluation data is: ``SHARED_BENCH_DIR`` when set, else
``shared/bench`` beside the checkout (its usual place). The data is for evaluation only and is
not in the repository (see each set's SOURCE.md there)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_BENCH = Path(
    os.environ.get("SHARED_BENCH_DIR") or Path(__file__).resolve().parents[2] / "shared" / "bench"
)
