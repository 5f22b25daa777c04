"""What the fault suite's tests share: the seed, the writer pool and the scene they work on.

``TOOLSCOUT_FAULT_SEED`` picks other kill points (the seed in use is printed on failure);
``TOOLSCOUT_FAULT_KILLS`` sets how many kills a run makes (at least 20).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.fault_integrity import Snapshot

SEED = int(os.environ.get("TOOLSCOUT_FAULT_SEED", "1515"))
KILLS = max(20, int(os.environ.get("TOOLSCOUT_FAULT_KILLS", "20")))
CATALOG_SIZE = 400  # two embedding chunks of 256: kills land inside and between chunks
WRITERS = Path(__file__).with_name("fault_writers.py")


class WriterPool:
    """The ``fault_writers.py`` process: one request line in, one result line out."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITERS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready = self._line()
        assert ready.get("ready"), ready

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"writer pool ended (exit {self.proc.wait(timeout=30)})")
        result: dict[str, Any] = json.loads(line)
        return result

    def run(self, *writers: dict[str, Any]) -> list[dict[str, Any]]:
        """Run the writers at the same time; their results in the same order."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"writers": list(writers)}) + "\n")
        self.proc.stdin.flush()
        results: list[dict[str, Any]] = self._line()["results"]
        for result in results:
            assert "error" not in result, result["error"]
        return results

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass(frozen=True)
class Scene:
    """An index of catalog version 1 (``base``) with version 2 in the catalog files."""

    base: Path
    catalogs: list[Path]
    v1: dict[str, str]
    v2: dict[str, str]
    before: Snapshot

    def copy(self, to: Path) -> Path:
        shutil.copyfile(self.base, to)
        return to

    def request(
        self, op: str, db: Path, options: str, kill_at: int | None = None
    ) -> dict[str, Any]:
        """A writer-pool request: ``op`` on ``db`` from this scene's catalogs, opened with the
        store URL ``options`` (an index prunes), killed at statement ``kill_at`` if given."""
        request: dict[str, Any] = {
            "op": op,
            "db": str(db),
            "catalogs": [str(c) for c in self.catalogs],
            "options": options,
        }
        if op == "index":
            request["prune"] = True
        if kill_at is not None:
            request["kill_at"] = kill_at
        return request
