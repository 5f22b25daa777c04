"""Sync benchmarks: freshness under the watcher, and no-change / 1 %-changed syncs.

    python bench/sync.py freshness [--edits 20] [--debounce-ms 100]
    python bench/sync.py catalog --catalog bench/out/catalog_10k.jsonl [--changed 0.01]

``freshness``: a folder of 20 Python tools is watched (``Watcher`` in a thread, as ``toolscout
watch`` / ``serve --watch`` run it). Each edit rewrites one tool's docstring with a new phrase; the
time is from just before the file is written until ``Engine.search`` for that phrase returns the
tool with the new docstring. Baseline in the same run: a one-shot ``sync`` of the same folder
after an edit (what the watcher does per change, without detection and debounce).

``catalog``: a fresh index of the catalog (the initial index; embedding vectors come from the
cache in ~/.cache/toolscout when an earlier run stored them, which the output says), then three
no-change syncs, then a sync where ``--changed`` of the tools got a new description.

Figures go to section 5 of docs/BENCHMARKS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.ingest.pyfile import ToolDirectory
from toolscout.sync.sync import SourceSet, SourceSummary, catalog_source, sync
from toolscout.sync.watch import Watcher

TOPICS = [
    "invoice",
    "glacier",
    "telescope",
    "orchard",
    "lantern",
    "harbour",
    "violin",
    "compass",
    "meadow",
    "quarry",
    "saffron",
    "tundra",
    "beacon",
    "canyon",
    "falcon",
    "marble",
    "nebula",
    "pepper",
    "ribbon",
    "walnut",
]


ENRICH: dict[str, str] = {}  # --enrich, when given


def _engine(db: Path) -> Engine:
    return Engine.open(Settings(db=str(db), **ENRICH))  # type: ignore[arg-type]


def _write_tool(root: Path, i: int, doc: str) -> Path:
    path = root / "mcptools" / "bench" / f"tool_{i:02d}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'def run(value: str):\n    """{doc}"""\n', encoding="utf-8")
    return path


def _model_texts(engine: Engine) -> int:
    """Texts the model itself embedded so far (cache misses), found through the wrappers."""
    layer: object = engine.embedder
    for _ in range(5):
        if hasattr(layer, "embedded_texts"):
            return int(layer.embedded_texts)
        layer = getattr(layer, "inner", None)
    return -1  # no cache layer: unknown


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def freshness(edits: int, debounce_ms: int) -> None:
    with tempfile.TemporaryDirectory(prefix="toolscout-fresh-") as tmp:
        root = Path(tmp) / "tools"
        for i, topic in enumerate(TOPICS):
            _write_tool(root, i, f"Handle the {topic} records of a small office")
        engine = _engine(Path(tmp) / "fresh.db")
        synced = threading.Event()

        def on_sync(summary: SourceSummary) -> None:
            synced.set()

        stop = threading.Event()
        watcher = Watcher(
            engine, SourceSet(tool_dirs=(root,)), debounce_ms=debounce_ms, on_sync=on_sync
        )
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        if not synced.wait(120):
            sys.exit("the watcher did not finish its first sync")
        latencies: list[float] = []
        for n in range(edits):
            i = n % len(TOPICS)
            phrase = f"calibrate the {TOPICS[i]} spectrometer number {n}"
            synced.clear()
            t0 = time.perf_counter()
            _write_tool(root, i, f"Use this to {phrase}.")
            while True:
                if not synced.wait(30):
                    sys.exit(f"edit {n}: no sync within 30 s")
                synced.clear()
                hits = engine.search(phrase, limit=1).hits
                if hits and phrase in hits[0].tool.description:
                    break
            latencies.append(time.perf_counter() - t0)
        stop.set()
        thread.join(30)

        # Baseline: the same change applied by a one-shot sync (no detection, no debounce).
        one_shot: list[float] = []
        for n in range(5):
            _write_tool(root, n, f"Baseline edit {n} of the {TOPICS[n]} ledger")
            t0 = time.perf_counter()
            sync(engine, [ToolDirectory(root)])
            one_shot.append(time.perf_counter() - t0)
        engine.close()
    ms = [1000 * x for x in latencies]
    print(
        json.dumps(
            {
                "bench": "freshness",
                "enrich": ENRICH.get("enrich", "(settings)"),
                "edits": edits,
                "debounce_ms": debounce_ms,
                "save_to_search_ms": {
                    "p50": round(statistics.median(ms), 1),
                    "p95": round(_pct(ms, 0.95), 1),
                    "max": round(max(ms), 1),
                },
                "baseline_one_shot_sync_ms": {
                    "p50": round(1000 * statistics.median(one_shot), 1),
                    "max": round(1000 * max(one_shot), 1),
                },
            }
        )
    )


def _timed_sync(engine: Engine, path: Path) -> tuple[float, float, SourceSummary]:
    t0 = time.perf_counter()
    loaded = CatalogFile(path, source=catalog_source(path)).read()
    t_read = time.perf_counter() - t0
    from toolscout.sync.sync import apply_listing

    summary = apply_listing(engine, loaded)
    return t_read, time.perf_counter() - t0, summary


def catalog(path: Path, changed: float, seed: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory(prefix="toolscout-sync-") as tmp:
        work = Path(tmp) / path.name
        work.write_text("\n".join(lines) + "\n", encoding="utf-8")
        engine = _engine(Path(tmp) / "sync.db")
        cache_before = _model_texts(engine)
        t_read, t_initial, first = _timed_sync(engine, work)
        model_texts = _model_texts(engine) - cache_before
        no_change = [_timed_sync(engine, work) for _ in range(3)]
        rng = random.Random(seed)
        picked = rng.sample(range(len(lines)), max(1, round(changed * len(lines))))
        for i in picked:
            row = json.loads(lines[i])
            row["description"] = f"{row.get('description') or ''} Revised edition {i}."
            lines[i] = json.dumps(row, ensure_ascii=False)
        work.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _, t_changed, changed_summary = _timed_sync(engine, work)
        engine.close()
    print(
        json.dumps(
            {
                "bench": "catalog_sync",
                "enrich": ENRICH.get("enrich", "(settings)"),
                "catalog": str(path),
                "tools": len(lines),
                "initial_index_s": round(t_initial, 2),
                "initial_read_s": round(t_read, 2),
                "initial_embedded": first.embedded,
                "initial_texts_run_through_the_model": model_texts,
                "no_change_sync_s": [round(t, 2) for _, t, _ in no_change],
                "no_change_read_s": [round(r, 2) for r, _, _ in no_change],
                "no_change_embedded": [s.embedded for _, _, s in no_change],
                "changed_items": len(picked),
                "changed_sync_s": round(t_changed, 2),
                "changed_summary": changed_summary.to_dict() | {"problems": None},
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    fresh = sub.add_parser("freshness")
    fresh.add_argument("--edits", type=int, default=20)
    fresh.add_argument("--debounce-ms", type=int, default=100)
    cat = sub.add_parser("catalog")
    cat.add_argument("--catalog", type=Path, default=Path("bench/out/catalog_10k.jsonl"))
    cat.add_argument("--changed", type=float, default=0.01)
    cat.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--enrich", choices=("none", "offline"), help="override the enrich setting for this run"
    )
    args = parser.parse_args()
    if args.enrich:
        ENRICH["enrich"] = args.enrich
    if args.what == "freshness":
        freshness(args.edits, args.debounce_ms)
    else:
        catalog(args.catalog, args.changed, args.seed)


if __name__ == "__main__":
    main()
