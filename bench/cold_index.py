"""Cold indexing: tools per second and peak memory of a full ``Engine.index`` of fresh tools.

    python bench/cold_index.py [--size 10000] [--paths before after] [--rounds 1]

Each run is a fresh process (its peak RSS is its own) that indexes ``--size`` tools of the
scale catalog (bench/catalogs.py: the real tools, then renamed variants, so every text is new)
into an empty index with an empty vector cache, through the public API with the default
settings: the packaged model, offline enrichment, skills classification. Paths:

* ``after`` — the shipped path: with two or more embedding threads, a per-call graph's documents
  are shared among one single-threaded session per thread, run side by side (embed/onnx.py);
* ``before`` — the same process with that sharing switched off: one session with two intra-op
  threads embeds every text in turn (the path before the sharing).

Rounds alternate the paths (``before, after, before, after...``) so a change in the machine's
load falls on both. Printed: one JSON line per run, then the median tools/s of each path and
their ratio.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalogs import build_catalog
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.entries import parse_entry
from toolscout.models import Loaded

PATHS = ("before", "after")


def one_run(path: str, size: int) -> dict[str, object]:
    """Index ``size`` fresh tools in this process along ``path``; its figures."""
    if path == "before":
        import toolscout.embed.onnx as onnx

        onnx.PARALLEL_MIN = sys.maxsize
    tools = []
    for raw in build_catalog(size):
        raw.pop("variant_of", None)
        tools.append(parse_entry(raw, source="bench"))
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(Settings(db=str(Path(tmp) / "cold.db"), cache_dir=tmp))
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
    if len(rates) == 2:
        print(f"after / before: {rates['after'] / rates['before']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
