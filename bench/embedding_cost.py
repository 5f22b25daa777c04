"""Embedding cost: tool texts per second by batch order, and a query's embedding by batch size.

    python bench/embedding_cost.py documents --size 2000   # sorted vs unsorted batches
    python bench/embedding_cost.py queries [--rounds 5]    # exact alone / batched, int8 graph

``documents`` embeds the descriptions of ``--size`` real tools of the scale catalog
(bench/catalogs.py), each made unique so nothing is cached, with the packaged model: once as
``Embedder.embed`` does (texts sorted by length into batches) and once in catalog order, 32
texts a call (the path before sorting). ``queries`` embeds the project's paraphrase dev set
(3-12 words) with one model thread: the exact (packaged) graph one query per call and in
batches of 4-32 (what overlapping searches share), and the int8 query graph one query per
call; rounds interleave the variants so load on a shared machine hits each alike. Both print
one JSON line. A full index's throughput and peak memory: bench/cold_index.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalogs import build_catalog
from toolscout.engine import prepare
from toolscout.eval.run import load_queries
from toolscout.ingest.entries import parse_entry

ROOT = Path(__file__).resolve().parents[1]
#: The scale catalog's real tools (its variants come after them).
REAL_TOOLS = 7093


def documents(size: int) -> dict[str, object]:
    """Tools/s of the real model on fresh texts (no cache), sorted vs unsorted batches."""
    from toolscout.embed import open_embedder

    embedder = open_embedder()
    real = [raw for raw in build_catalog(REAL_TOOLS) if raw.get("variant_of") is None]
    tools = [parse_entry(raw, source="bench") for raw in real[:size]]
    texts = [prepare(t).text + f" #{random.random()}" for t in tools]  # defeat any caching
    t0 = time.perf_counter()
    embedder.embed(texts)
    sorted_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for start in range(0, len(texts), 32):
        embedder._run(texts[start : start + 32], embedder._session)  # type: ignore[attr-defined]
    unsorted_s = time.perf_counter() - t0
    out = {
        "tools": len(texts),
        "threads": os.environ.get("TOOLSCOUT_EMBED_THREADS", "2"),
        "sorted_tools_per_s": round(len(texts) / sorted_s, 1),
        "unsorted_tools_per_s": round(len(texts) / unsorted_s, 1),
        "median_text_chars": statistics.median(len(t) for t in texts),
    }
    print(json.dumps(out), flush=True)
    return out


def queries(rounds: int) -> None:
    """Query embedding cost per query, one model thread: the exact (packaged) graph one query
    per call vs batches, and the default int8 query graph (one query per call)."""
    from toolscout.embed.local import load_local

    exact = load_local("minilm-l6-int8", threads=1, query_encoder="exact")
    fast = load_local("minilm-l6-int8", threads=1, query_encoder="int8")
    short = [q.text for q in load_queries(ROOT / "tests/data/livemcp_paraphrase/queries.jsonl")]
    sizes = (1, 4, 8, 16, 32)
    for q in short[:32]:
        exact.embed_query([q])
        fast.embed_query([q])
    per_query: dict[str, list[float]] = {f"exact_b{b}": [] for b in sizes}
    per_query["int8"] = []
    for _ in range(rounds):
        for b in sizes:
            t0 = time.perf_counter()
            for start in range(0, len(short), b):
                exact.embed_query(short[start : start + b])
            per_query[f"exact_b{b}"].append((time.perf_counter() - t0) * 1000 / len(short))
        t0 = time.perf_counter()
        fast.embed_query(short)
        per_query["int8"].append((time.perf_counter() - t0) * 1000 / len(short))
    medians = {k: round(statistics.median(v), 3) for k, v in per_query.items()}
    base = medians["exact_b1"]
    speedup = {k: round(base / v, 2) for k, v in medians.items()}
    print(
        json.dumps(
            {
                "queries": len(short),
                "ms_per_query_median": medians,
                "speedup_vs_exact_alone": speedup,
            }
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("documents", help="tool texts per second, sorted vs unsorted batches")
    d.add_argument("--size", type=int, default=2000, help=f"at most {REAL_TOOLS}")
    q = sub.add_parser("queries", help="one query's embedding: exact alone, batched, int8")
    q.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.cmd == "documents":
        documents(min(args.size, REAL_TOOLS))
    else:
        queries(args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
