"""Cold indexing: tools per second and peak memory of a full ``Engine.index`` of fresh tools.

    python bench/cold_index.py [--size 10000] [--paths before sessions after] [--rounds 1]

Each run is a fresh process (its peak RSS is its own) that indexes ``--size`` tools of the
scale catalog (bench/catalogs.py: the real tools, then renamed variants, so every text is new)
into an empty index with an empty vector cache, through the public API with the default
settings: the packaged model, offline enrichment, skills classification. Paths:

* ``after`` — the shipped path: with two or more embedding threads, a per-call graph's documents
  are shared among one single-threaded session per thread, run side by side (embed/onnx.py);
  the chunks embed on a thread of their own while the caller writes the previous chunk and
  classifies its skills (indexing.py ``AHEAD``);
* ``sessions`` — the side-by-side sessions, but each chunk embedded, then written, one after
  the other, and the skills classified after every write (the path before the pipeline);
* ``before`` — as ``sessions``, with one session of two intra-op threads embedding every text
  in turn (the path before the side-by-side sessions).

Besides tools/s, wall and CPU seconds and peak RSS, each run reports the CPU seconds (user +
sys of the threads doing it) of each stage, each stage's own: ``plan`` (enrichment, embedding
texts, hashes), ``write`` (each chunk's lexical analysis and upsert), ``skills``
(classification and centroids) and ``embed`` (the rest of the process's CPU: the model, on
whichever threads run it). The ``before`` and ``sessions`` paths are today's code with the
pipeline switched off and the skills classified after the writes, as they were.

Rounds alternate the paths (``before, sessions, after, before...``) so a change in the
machine's load falls on all of them. Printed: one JSON line per run, then the median tools/s
of each path and the ratios of ``after`` to the others.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalogs import build_catalog
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.entries import parse_entry
from toolscout.models import Loaded
from toolscout.skills.classify import WrittenClassifier
from toolscout.skills.service import SkillService

PATHS = ("before", "sessions", "after")


class StageClock:
    """CPU seconds of the calling threads inside wrapped functions, by stage, each stage's
    own: a stage entered inside another is taken off the outer one (thread-safe)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        inner = getattr(owner, name)
        clock = self

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack: list[str] = clock._local.__dict__.setdefault("stack", [])
            stack.append(stage)
            start = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                stack.pop()
                with clock._lock:
                    clock.cpu[stage] = clock.cpu.get(stage, 0.0) + spent
                    if stack:
                        clock.cpu[stack[-1]] = clock.cpu.get(stack[-1], 0.0) - spent

        setattr(owner, name, timed)


class _AfterWrites:
    """A ``written`` hook that classifies nothing: the run's repair then classifies every
    written tool after the writes, reading it back from the store (the path before the
    pipeline)."""

    def __init__(self) -> None:
        self.changed: set[str] = set()

    def __call__(self, entries: object) -> None:
        return None


@contextlib.contextmanager
def classified_after_writes(self: SkillService) -> Iterator[_AfterWrites]:
    yield _AfterWrites()


def stages(measured: dict[str, float], process: float) -> dict[str, float]:
    """The stages' CPU seconds; ``embed`` is the rest of the process's (the model's threads,
    onnxruntime's own pool threads included, which no wrapper sees)."""
    out = {k: round(measured.get(k, 0.0), 1) for k in ("plan", "write", "skills")}
    out["embed"] = round(process - sum(measured.values()), 1)
    return out


def one_run(path: str, size: int) -> dict[str, object]:
    """Index ``size`` fresh tools in this process along ``path``; its figures."""
    import toolscout.embed.onnx as onnx
    import toolscout.indexing as indexing
    import toolscout.indexruns as indexruns

    if path == "before":
        onnx.PARALLEL_MIN = sys.maxsize
    if path in ("before", "sessions"):
        indexing.AHEAD = 0
        SkillService.classifying = classified_after_writes  # type: ignore[assignment]
    clock = StageClock()
    clock.wrap(indexruns, "plan_index", "plan")
    clock.wrap(SkillService, "after_index", "skills")
    clock.wrap(WrittenClassifier, "__call__", "skills")
    clock.wrap(indexing.IndexWriter, "_store", "write")
    tools = []
    for raw in build_catalog(size):
        raw.pop("variant_of", None)
        tools.append(parse_entry(raw, source="bench"))
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(Settings(db=str(Path(tmp) / "cold.db"), cache_dir=tmp))
        clock.cpu.clear()  # opening embeds the starter skills
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        report = engine.index([Loaded(source="bench", tools=tools)])
        took = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        engine.close()
    return {
        "path": path,
        "tools": size,
        "embedded": report.embedded,
        "seconds": round(took, 1),
        "cpu_seconds": round(cpu, 1),
        "stage_cpu_seconds": stages(clock.cpu, cpu),
        "tools_per_s": round(size / took, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--one", choices=PATHS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args.size)), flush=True)
        return 0
    runs: dict[str, list[dict[str, object]]] = {p: [] for p in args.paths}
    for _ in range(args.rounds):
        for path in args.paths:
            done = subprocess.run(
                [sys.executable, __file__, "--one", path, "--size", str(args.size)],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(done.stdout.strip().splitlines()[-1])
            runs[path].append(row)
            print(json.dumps(row), flush=True)
    rates = {
        p: statistics.median(float(str(r["tools_per_s"])) for r in rs) for p, rs in runs.items()
    }
    print(json.dumps({"median_tools_per_s": rates}))
    for base in ("before", "sessions"):
        if "after" in rates and base in rates:
            print(f"after / {base}: {rates['after'] / rates[base]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
