"""Where the shared benchmark data is: ``SHARED_BENCH_DIR`` when set, else ``shared/bench``
beside the checkout (its usual place). The data is evaluation-only and not in the repository."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_BENCH = Path(
    os.environ.get("SHARED_BENCH_DIR") or Path(__file__).resolve().parents[3] / "shared" / "bench"
)
HINT = "shared benchmark data lives in shared/bench beside the checkout, or set SHARED_BENCH_DIR"


def shared_set(name: str) -> Path:
    """A dataset folder of the shared data; skips (with the reason) only outside CI when it is
    absent, and fails in CI."""
    import pytest

    path = SHARED_BENCH / name
    if not path.is_dir():
        if os.environ.get("CI"):
            raise RuntimeError(f"{path} is missing in CI; {HINT}")
        pytest.skip(f"{path} not present; {HINT}")
    return path
