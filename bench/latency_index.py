"""The scale index bench/latency.py times (and bench/search_stages.py, bench/ann_recall.py
reuse): its catalog from bench/catalogs.py, real tools embedded and variants written with their
base tool's perturbed vector; the legs a search uses switched by hand; the HNSW shard built and
the posting index loaded before any timing; its sizes on disk; the request pools.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import numpy as np

from catalogs import build_catalog
from shared_data import SHARED_BENCH
from toolscout.engine import Engine, prepare
from toolscout.eval.run import load_queries
from toolscout.ingest.entries import parse_entry
from toolscout.store.base import IndexEntry

ROOT = Path(__file__).resolve().parents[1]
SHARED = SHARED_BENCH

#: Variants written per ``store.upsert`` (one transaction each).
CHUNK = 5000


def build_index(engine: Engine, size: int) -> None:
    """Real tools through Engine.index; variants written with their base's perturbed vector.

    The raw catalog is parsed a chunk at a time (1M parsed tools would hold several GB) and the
    base tools' vectors are read once, then kept: a benchmark shortcut, as the vectors are."""
    from toolscout.models import Loaded

    raw = build_catalog(size)
    real = [parse_entry(r, source="bench") for r in raw if "variant_of" not in r]
    engine.index([Loaded(source="bench", tools=real)])
    variants = [r for r in raw if "variant_of" in r]
    del raw
    bases = engine.store.vectors(sorted({str(r["variant_of"]) for r in variants}))
    rng = np.random.default_rng(0)
    for start in range(0, len(variants), CHUNK):
        entries = []
        for item in variants[start : start + CHUNK]:
            base = str(item.pop("variant_of"))
            tool = parse_entry(item, source="bench")
            vec = bases[base] + rng.normal(0, 0.02, engine.embedder.dim)
            vec = (vec / np.linalg.norm(vec)).astype(np.float32)
            p = prepare(tool)
            entries.append(IndexEntry(tool, p.fields, vec, p.text_hash))
        engine.store.upsert(entries)
        variants[start : start + CHUNK] = [{}] * len(entries)  # let the parsed chunk go


def request_pools() -> tuple[list[str], list[str]]:
    short = [q.text for q in load_queries(ROOT / "tests/data/livemcp_paraphrase/queries.jsonl")]
    long = [q.text[:1000] for q in load_queries(SHARED / "toolbench_stable/queries.jsonl")]
    return short, long


#: The vector legs compared: the exact mirror (the previous path) and the HNSW shard.
LEGS = ("exact", "ann")
#: The lexical legs compared: FTS5 (the previous path) and the in-memory posting index.
LEXICALS = ("fts5", "postings")


def use_legs(engine: Engine, leg: str, lexical: str = "fts5") -> None:
    engine.store.ann.enabled = leg == "ann"  # type: ignore[attr-defined]
    engine.store.lex.enabled = lexical == "postings"  # type: ignore[attr-defined]


def load_postings(engine: Engine) -> dict[str, object]:
    """Load the posting index of the written catalog (what a serving process does first)."""
    lex = engine.store.lex  # type: ignore[attr-defined]
    weights = tuple(engine.searcher.config.field_weights)
    t0 = time.perf_counter()
    lex.current(weights)  # large: loaded on a thread of its own
    lex.wait_loaded(None)
    assert lex.current(weights) is not None, "the posting index was not loaded"
    return {"load_s": round(time.perf_counter() - t0, 2), **lex.describe()}


def disk_mb(path: Path) -> float:
    """Space allocated on disk (the shard's preallocated files are sparse)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    files += [Path(str(path) + x) for x in ("-wal", "-shm") if Path(str(path) + x).is_file()]
    return round(sum(p.stat().st_blocks * 512 for p in files) / 2**20, 1)


def build_shard(engine: Engine) -> dict[str, object]:
    """Build the HNSW shard of the written catalog (a child process above 5,000 tools)."""
    ann = engine.store.ann  # type: ignore[attr-defined]
    ann.min_tools = 0
    ann.reset()
    t0 = time.perf_counter()
    ann.current()
    ann.wait_built(None)
    assert ann.current() is not None, "the HNSW shard was not built"
    return {"shard_build_s": round(time.perf_counter() - t0, 1), **ann.describe()}


#: Written beside a kept index once its catalog is complete.
KEPT = "built"


def workdir(keep: Path | None, size: int) -> contextlib.AbstractContextManager[str]:
    """A temporary folder, or ``keep/<size>`` kept for the next run (its index reused when
    complete: only the shard is reopened and the posting index loaded)."""
    if keep is None:
        return tempfile.TemporaryDirectory()
    folder = keep / str(size)
    folder.mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(folder))


def terms_mb(engine: Engine) -> float:
    """The ``tools_terms`` rows the posting index loads from (payload bytes)."""
    found = engine.store.database.query(  # type: ignore[attr-defined]
        "SELECT sum(length(terms) + length(tf) + 16) FROM tools_terms", []
    )
    return round(int(found[0][0] or 0) / 2**20, 1)
