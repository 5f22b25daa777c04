"""Bulk indexing throughput of the embedded store, without the embedding model: tools written
per second through ``store.upsert`` and the HNSW shard's build from the written rows.

    PYTHONPATH=src python bench/bulk_write.py --size 50000 [--chunk 2000] [--keep DIR]

The bench/catalogs.py catalog of ``--size`` tools, each with a vector drawn near one of 7,093
random centres (one per real tool, as bench/latency.py perturbs a base tool's vector: sigma
0.02 per dimension, renormalised), so no model runs and the figures are the store's own.
Stages, each timed in wall and CPU seconds: ``parse`` (the catalog's entries checked into
tools), ``prepare`` (each tool's analysed fields and hashes, ``toolscout.engine.prepare``),
``write`` (``store.upsert`` in chunks of ``--chunk``, one transaction each) and ``shard`` (the
product's child process that builds the HNSW shard from every row, ``python -m
toolscout.store.sqlite.ann.build``; its CPU is the child's). It uses only interfaces older
versions have too, so pointing ``PYTHONPATH`` at another checkout's ``src`` measures that
version on the same catalog. CPU seconds are the figures to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalogs import build_catalog
from toolscout.engine import prepare
from toolscout.ingest.entries import parse_entry
from toolscout.store.base import IndexEntry, IndexIdentity
from toolscout.store.sqlite.ann.shard import GraphParams
from toolscout.store.sqlite.store import SQLiteStore

DIM = 384


def _timed(stage: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = stage()
    return out, {
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }


def _vectors(raw: list[dict[str, Any]]) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(0)
    real = [r["id"] for r in raw if "variant_of" not in r]
    centres = rng.normal(size=(len(real), DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    position = {tool_id: i for i, tool_id in enumerate(real)}
    rows = np.array([position[str(r.get("variant_of", r["id"]))] for r in raw])
    out = centres[rows] + rng.normal(0, 0.02, (len(raw), DIM)).astype(np.float32)
    out[: len(real)] = centres  # the real tools sit on their centres
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def _shard(db: Path) -> dict[str, float]:
    """The product's shard build, in its own child process, as the store starts it."""
    g = GraphParams()
    target = Path(str(db) + ".vectors")
    args = [str(db), str(target), DIM, g.m, g.ef_construct, g.ef, g.full_scan_kb, g.indexing_kb]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    cmd = [sys.executable, "-m", "toolscout.store.sqlite.ann.build", *map(str, args)]
    subprocess.run(cmd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(cpu, 2)}


def bulk_bench(size: int, chunk: int, folder: Path) -> dict[str, Any]:
    raw = build_catalog(size)
    vectors = _vectors(raw)
    for item in raw:
        item.pop("variant_of", None)
    stages: dict[str, dict[str, float]] = {}
    tools, stages["parse"] = _timed(lambda: [parse_entry(r, source="bench") for r in raw])
    prepared, stages["prepare"] = _timed(lambda: [prepare(t) for t in tools])
    entries = [
        IndexEntry(t, p.fields, v, p.text_hash)
        for t, p, v in zip(tools, prepared, vectors, strict=True)
    ]
    db = folder / "bulk.db"
    store = SQLiteStore(str(db))
    store.bind(IndexIdentity(embedder="bench-random", dim=DIM, analyzer="bench"))

    def write() -> None:
        for start in range(0, len(entries), chunk):
            store.upsert(entries[start : start + chunk])

    _, stages["write"] = _timed(write)
    tools_written = store.count()
    store.close()
    stages["shard"] = _shard(db)
    rates = {
        f"{name}_tools_per_cpu_s": round(size / max(s["cpu_s"], 1e-9)) for name, s in stages.items()
    }
    return {"tools": tools_written, "chunk": chunk, **stages, **rates}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--chunk", type=int, default=2000, help="tools per store.upsert")
    parser.add_argument("--keep", type=Path, help="write the index here (default: a temp folder)")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        row = bulk_bench(args.size, args.chunk, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            row = bulk_bench(args.size, args.chunk, Path(tmp))
    print(json.dumps({args.size: row}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
