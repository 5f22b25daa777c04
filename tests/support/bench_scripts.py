"""Runs the benchmark scripts of bench/ as a user would: a subprocess of this interpreter, with
a bounded wait (fixtures live in tests/bench/conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
#: The longest a script may run here (tiny sizes take a few seconds to a minute on two
#: shared cores); past it, the script and everything it started are killed and the test fails.
SCRIPT_TIMEOUT = 240.0


@dataclass(frozen=True)
class Finished:
    """What a finished script printed."""

    stdout: str
    stderr: str


@dataclass(frozen=True)
class Scripts:
    """Starts bench scripts with ``env`` in the folder ``cwd``."""

    env: dict[str, str]
    cwd: Path

    def run(self, script: str, *args: str, timeout: float = SCRIPT_TIMEOUT) -> Finished:
        """Run ``bench/<script> args``; fails the test (showing the script's output) when it
        exits non-zero or runs past ``timeout`` seconds."""
        return self.command([sys.executable, str(BENCH / script), *args], timeout=timeout)

    def command(self, cmd: list[str], *, timeout: float = SCRIPT_TIMEOUT) -> Finished:
        """Run ``cmd`` in a process group of its own, so servers it started die with it when
        it is killed on a timeout."""
        with subprocess.Popen(
            cmd, env=self.env, cwd=self.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        ) as proc:  # fmt: skip
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate(timeout=30)
                pytest.fail(f"{cmd[1:]} ran past {timeout} s\n{out[-3000:]}\n{err[-3000:]}")
        if proc.returncode != 0:
            pytest.fail(f"{cmd[1:]} exited {proc.returncode}\n{out[-3000:]}\n{err[-5000:]}")
        return Finished(out, err)
