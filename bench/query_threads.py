"""Query embedding: wall and CPU time of one request's embedding by session threading.

    PYTHONPATH=src python bench/query_threads.py [--queries 500] [--rounds 2]

The packaged model's query graph (``local:tool-minilm-l6``) embeds ``--queries`` distinct short
requests one at a time, in a fresh process per setting, settings alternating over ``--rounds``:

* ``spin`` — two intra-op threads whose idle threads spin (onnxruntime's default);
* ``sleep`` — two intra-op threads whose idle threads sleep (what toolscout ships, embed/onnx.py);
* ``one-thread`` — one intra-op thread.

Printed: a JSON line per run (ms per query, wall and process CPU), then the median of each
setting. Read it from a quiet machine only: a loaded one changes what spinning costs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

SETTINGS = ("spin", "sleep", "one-thread")
REQUESTS = (
    "send an email to a colleague about the quarterly report",
    "create a github issue",
    "get the weather in paris tomorrow",
    "query a postgres database for the users table",
)


def run_one(setting: str, queries: int) -> dict[str, Any]:
    """Embed in this process with ``setting`` (the child's side)."""
    import onnxruntime as ort

    from toolscout.embed import onnx

    def session(graph: Any, threads: int) -> Any:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1 if setting == "one-thread" else threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        spin = "1" if setting == "spin" else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
        return ort.InferenceSession(
            str(graph), sess_options=opts, providers=["CPUExecutionProvider"]
        )

    onnx.session = session  # the sessions the loader makes from here on
    from toolscout.embed.base import open_embedder

    embedder = open_embedder(threads=2)
    for text in REQUESTS:
        embedder.embed_query([text + " (warm-up)"])
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(queries):
        embedder.embed_query([f"{REQUESTS[i % len(REQUESTS)]} {i}"])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "setting": setting,
        "wall_ms": round(wall / queries * 1000, 3),
        "cpu_ms": round(cpu / queries * 1000, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=SETTINGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.queries)))
        return 0
    runs: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        for setting in SETTINGS:
            cmd = [sys.executable, __file__, "--child", setting, "--queries", str(args.queries)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), flush=True)
    summary = {
        s: {
            key: statistics.median(r[key] for r in runs if r["setting"] == s)
            for key in ("wall_ms", "cpu_ms")
        }
        for s in SETTINGS
    }
    print(json.dumps({"median": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
