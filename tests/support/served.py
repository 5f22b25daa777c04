"""Real server processes for tests: ``toolscout serve`` / ``toolscout mcp`` started on a test
index, with the constants the API tests share."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from toolscout.api.gate import SearchGate

ADMIN = "admin-key-for-tests"
#: The client address TestClient requests appear to come from, when a test needs one.
LOOPBACK = ("127.0.0.1", 50000)

RUNNING = re.compile(r"Uvicorn running on (http://\S+:\d+)")
TOOLSCOUT = str(Path(sys.executable).with_name("toolscout"))


def server_env(db: Path, cache: Path, **extra: str) -> dict[str, str]:
    """The environment of a served subprocess: this venv, the test index and cache only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCOUT_")}
    env.update(TOOLSCOUT_DB=str(db), TOOLSCOUT_CACHE_DIR=str(cache), TOOLSCOUT_EMBED_THREADS="1")
    env.update(extra)
    return env


class Launched:
    """A real server process started by a test; ``url`` is read from its startup line."""

    def __init__(self, args: list[str], env: dict[str, str], timeout: float = 90.0) -> None:
        self.proc = subprocess.Popen(
            [TOOLSCOUT, *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        found: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(found,), daemon=True)
        self._reader.start()
        try:
            self.url = found.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"server did not start in {timeout}s: {''.join(self.log)}") from None

    def _read(self, found: queue.Queue[str]) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            match = RUNNING.search(line)
            if match:
                found.put(match.group(1))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        # The reader ends at the pipe's EOF once the process is gone; then the pipe is closed.
        self._reader.join(timeout=20)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def occupied(
    gate: SearchGate, held: threading.Event, release: threading.Event
) -> Callable[[], Coroutine[Any, Any, None]]:
    """A task that takes one of ``gate``'s slots and keeps it until ``release`` is set (30 s at
    most); ``held`` is set once it has the slot."""

    def hold() -> bool:
        held.set()
        return release.wait(30)

    async def occupy() -> None:
        await gate.run(hold)

    return occupy
