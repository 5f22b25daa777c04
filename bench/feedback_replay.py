"""Learning from use, replayed on the natural-request dev data: does ranking improve after a few
observed calls, only where it should?

    python bench/feedback_replay.py [--sets metatool gorilla_apibench bfcl] [--future 30]
        [--sweep] [--boost B] [--threshold T] [--out bench/out/feedback_replay]

Per set (data/natural, ``dev`` requests with one gold tool), its whole catalog is indexed and
its dev tools with at least four requests are split in two by id (every other one):

* tools **with history**: their first three requests (by id) are recorded as successful calls
  of the tool (``engine.feedback.record``, the path the gateway and the REST route take); their
  other requests, up to ``--future`` per tool, are the *future* requests scored;
* tools **without history**: up to ``--future`` of their requests are scored, to show that other
  tools' history does not push them down.

Figures (hit@3, in points): ``future`` before / after the history (target: +10), ``no_history``
before / after (target: within 0.5), ``after_errors`` (the same three requests recorded as
failed calls instead: never above ``before``), and ``flood``: 1,000 rows promoting one tool for
requests drawn from the set's *training* split, then hit@3 over every scored request, and over
the requests none of those rows resembles (cosine below the memory's threshold; target: within
1 point). ``--sweep`` also prints hit@3 for other memory parameters, re-ranking the captured
fused candidates (no search per setting), which is how the defaults were chosen.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.feedback.memory import MemoryParams, RequestMemory
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Scored, SearchMode

ROOT = Path(__file__).resolve().parents[1]
NATURAL = ROOT / "data" / "natural"
HISTORY = 3
FLOOD = 1000


@dataclass(frozen=True)
class Request:
    id: str
    text: str
    gold: str


@dataclass
class Plan:
    history: dict[str, list[Request]]
    future: list[Request]
    no_history: list[Request]
    train: list[str]


def plan(source: str, future_per_tool: int) -> Plan:
    by_tool: dict[str, list[Request]] = {}
    train: list[str] = []
    for line in (NATURAL / source / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["split"] == "train":
            train.append(str(row["query"])[:1000])
        if row["split"] != "dev" or len(row["gold"]) != 1:
            continue
        req = Request(str(row["id"]), str(row["query"])[:1000], str(row["gold"][0]))
        by_tool.setdefault(req.gold, []).append(req)
    out = Plan({}, [], [], train)
    tools = sorted(t for t, reqs in by_tool.items() if len(reqs) > HISTORY)
    # Numbered rewordings of one function (BFCL's ``#N`` copies) fall on one side together:
    # one copy's history promoting another is the same function found, not a leak.
    sides = {b: i % 2 == 0 for i, b in enumerate(sorted({base_id(t) for t in tools}))}
    for tool in tools:
        reqs = sorted(by_tool[tool], key=lambda r: r.id)
        if sides[base_id(tool)]:
            # Drawn, not the first three: ids follow the source's order, which groups
            # look-alike requests ("Can I ...") together.
            seen = random.Random(tool).sample(range(len(reqs)), HISTORY)
            out.history[tool] = [reqs[i] for i in sorted(seen)]
            rest = [r for i, r in enumerate(reqs) if i not in seen]
            out.future.extend(_stride(rest, future_per_tool))
        else:
            out.no_history.extend(_stride(reqs, future_per_tool))
    return out


def base_id(tool_id: str) -> str:
    """A tool's id without a copy number (``bfcl::Services_4_FindProvider#5``)."""
    return tool_id.split("#", 1)[0]


def _stride(reqs: list[Request], n: int) -> list[Request]:
    step = max(1, -(-len(reqs) // n))
    return reqs[::step][:n]


class Capture:
    """A boost that changes nothing and keeps each search's fused candidates (for --sweep)."""

    def __init__(self) -> None:
        self.seen: list[tuple[NDArray[np.float32], list[Scored]]] = []

    def apply(
        self,
        query_vectors: NDArray[np.float32],
        fused: list[Scored],
        version: Hashable | None,
        *,
        ranked: bool = False,
    ) -> list[Scored]:
        self.seen.append((query_vectors, fused))
        return fused


def ranks(engine: Engine, reqs: list[Request]) -> list[int | None]:
    out: list[int | None] = []
    for r in reqs:
        ids = [h.tool.id for h in engine.search(r.text, limit=10).tools]
        out.append(ids.index(r.gold) if r.gold in ids else None)
    return out


def hit3(found: list[int | None]) -> float:
    return 100.0 * sum(1 for k in found if k is not None and k < 3) / max(1, len(found))


def record(engine: Engine, rows: list[tuple[str, str]], outcome: str) -> None:
    for text, tool in rows:
        engine.feedback.record(text, tool, outcome, source="api")


def sweep(engine: Engine, p: Plan, history_rows: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """hit@3 of future/no-history requests for other memory parameters, from captured fused
    candidates re-ranked by the memory's own ``gains``."""
    memory = engine.feedback.memory
    assert memory is not None
    engine.feedback.clear()
    capture = Capture()
    engine.searcher.boost = capture
    reqs = p.future + p.no_history
    ranks(engine, reqs)
    engine.searcher.boost = memory
    record(engine, history_rows, "success")
    snap = memory.snapshot()
    rows: list[dict[str, Any]] = []
    for threshold in (0.45, 0.5, 0.55, 0.6):
        for boost in (0.2, 0.3, 0.5, 1.0):
            probe = RequestMemory(
                engine.store,
                engine.embedder,
                replace(memory.params, threshold=threshold, boost=boost),
            )
            found: list[int | None] = []
            for r, (vecs, fused) in zip(reqs, capture.seen, strict=True):
                gains = probe.gains(snap, vecs)
                order = sorted(
                    (Scored(h.id, h.score + gains.get(h.id, 0.0)) for h in fused),
                    key=lambda h: (-h.score, h.id),
                )
                ids = [h.id for h in order[:10]]
                found.append(ids.index(r.gold) if r.gold in ids else None)
            n = len(p.future)
            rows.append(
                {
                    "threshold": threshold,
                    "boost": boost,
                    "future": round(hit3(found[:n]), 1),
                    "no_history": round(hit3(found[n:]), 1),
                }
            )
    engine.feedback.clear()
    return rows


def flood(
    engine: Engine, p: Plan, reqs: list[Request], catalog: list[str], seed: int = 0
) -> dict[str, Any]:
    """1,000 rows promoting one tool (no scored request's gold) for requests of the training
    split."""
    memory = engine.feedback.memory
    assert memory is not None
    engine.feedback.clear()
    before = ranks(engine, reqs)
    golds = {r.gold for r in reqs} | set(p.history)
    target = next(t for t in sorted(catalog) if t not in golds)
    drawn = random.Random(seed).sample(p.train, min(FLOOD, len(p.train)))
    record(engine, [(text, target) for text in drawn], "success")
    after = ranks(engine, reqs)
    snap = memory.snapshot()
    rows = engine.embedder.embed_query([r.text for r in reqs])
    ranked = engine.searcher.ranking(SearchMode.HYBRID)[0] == "learned"
    threshold = (memory.params.for_ranked() if ranked else memory.params).threshold
    close = (np.asarray(rows) @ snap.vectors.T).max(axis=1) >= threshold
    apart = [i for i in range(len(reqs)) if not close[i]]
    engine.feedback.clear()
    return {
        "rows": len(drawn),
        "tool": target,
        "all_before": round(hit3(before), 1),
        "all_after": round(hit3(after), 1),
        "unlike_requests": len(apart),
        "unlike_before": round(hit3([before[i] for i in apart]), 1),
        "unlike_after": round(hit3([after[i] for i in apart]), 1),
    }


def run_set(
    source: str, db_dir: Path, future_per_tool: int, do_sweep: bool, params: MemoryParams
) -> dict[str, Any]:
    p = plan(source, future_per_tool)
    db = db_dir / f"{source}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    engine = Engine.open(Settings(db=str(db), result_cache_size=0))
    try:
        assert engine.feedback.memory is not None
        engine.feedback.memory.params = params
        loaded = CatalogFile(NATURAL / source / "tools.jsonl", source=source).read()
        engine.index([loaded])
        catalog = [t.id for t in loaded.tools]
        engine.feedback.clear()
        history_rows = [(r.text, tool) for tool, reqs in p.history.items() for r in reqs]
        t0 = time.perf_counter()
        before_f, before_n = ranks(engine, p.future), ranks(engine, p.no_history)
        record(engine, history_rows, "error")
        errors_f = ranks(engine, p.future)
        errors_h = ranks(engine, [Request("", t, g) for t, g in history_rows])
        engine.feedback.clear()
        base_h = ranks(engine, [Request("", t, g) for t, g in history_rows])
        record(engine, history_rows, "success")
        after_f, after_n = ranks(engine, p.future), ranks(engine, p.no_history)
        engine.feedback.clear()
        out: dict[str, Any] = {
            "history_tools": len(p.history),
            "future_requests": len(p.future),
            "no_history_tools": len({r.gold for r in p.no_history}),
            "no_history_requests": len(p.no_history),
            "future_before": round(hit3(before_f), 1),
            "future_after": round(hit3(after_f), 1),
            "no_history_before": round(hit3(before_n), 1),
            "no_history_after": round(hit3(after_n), 1),
            "future_after_errors": round(hit3(errors_f), 1),
            "history_moved_up_by_errors": sum(
                1
                for a, b in zip(base_h, errors_h, strict=True)
                if b is not None and (a is None or b < a)
            ),
            "flood": flood(engine, p, p.future + p.no_history, catalog),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        if do_sweep:
            out["sweep"] = sweep(engine, p, history_rows)
        return out
    finally:
        engine.close()


def _pooled(sets: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Request-weighted means over the sets."""
    out: dict[str, float] = {}
    for key, n in (
        ("future_before", "future_requests"),
        ("future_after", "future_requests"),
        ("no_history_before", "no_history_requests"),
        ("no_history_after", "no_history_requests"),
    ):
        total = sum(s[n] for s in sets.values())
        out[key] = round(sum(s[key] * s[n] for s in sets.values()) / max(1, total), 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["metatool", "gorilla_apibench", "bfcl"])
    parser.add_argument("--future", type=int, default=30, help="future requests per tool")
    parser.add_argument("--sweep", action="store_true", help="also try other memory parameters")
    parser.add_argument(
        "--boost", type=float, help="the memory's boost for this run (default: the packaged one)"
    )
    parser.add_argument(
        "--threshold", type=float, help="the memory's threshold (default: the packaged one)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "feedback_replay")
    args = parser.parse_args()
    db_dir = args.out / "db"
    shutil.rmtree(db_dir, ignore_errors=True)  # feedback rows of an earlier run must not count
    params = MemoryParams()
    # One run measures one ranking: an override holds for the fusion's scores and the ranker's.
    if args.boost is not None:
        params = replace(params, boost=args.boost, ranked_boost=args.boost)
    if args.threshold is not None:
        params = replace(params, threshold=args.threshold, ranked_threshold=args.threshold)
    report: dict[str, Any] = {"params": params.__dict__, "sets": {}}
    for source in args.sets:
        report["sets"][source] = row = run_set(source, db_dir, args.future, args.sweep, params)
        line = {k: v for k, v in row.items() if k != "sweep"}
        print(source, json.dumps(line), flush=True)
        for s in row.get("sweep", []):
            print("  sweep", json.dumps(s), flush=True)
    report["pooled"] = _pooled(report["sets"])
    print("pooled", json.dumps(report["pooled"]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
