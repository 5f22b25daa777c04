"""Search quality on real public OpenAPI documents, beside same-model baselines, in one run.

    python bench/openapi_quality.py [--data DIR] [--splits dev test] [--out FILE]

Data: ``DIR`` (default ``../shared/bench/openapi_specs``, outside the repository; its SOURCE.md
gives each document's origin and licence) holds OpenAPI documents, each file's stem being its
API name (``twilio.json`` -> ``twilio::<operationId>``), and ``queries.jsonl``: requests written
for a sample of their operations, ``{"id", "query", "gold", "split"}``, split into ``dev`` and
``test`` by operation (every request of one operation on the same side). When ``DIR`` is
absent the script says where it looked and exits 0 without figures.

Every document is read as ``toolscout index`` reads it (:class:`OpenApiSource`) and indexed
together into one temporary index with the default settings, so each request is answered among
all the operations of all the APIs. Systems:

* ``default`` — ``Engine.search`` (the public API, hybrid mode, default settings);
* ``plain_cosine`` — cosine of the same model over ``name + split name + description +
  parameter names`` (bench/natural.py's baseline, whole request);
* ``weighted_rrf`` — bm25s and ``plain_cosine`` fused by weighted RRF (bench/natural.py).

Per split: hit@1, hit@3 and nDCG@10 of each system over the requests, and hit@3 per API.
Nothing is tuned on this data; ``test`` is reported, never looked at for a choice.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from natural import Ranker, baselines
from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.metrics import mean, score_query
from toolscout.ingest.openapi import OpenApiSource
from toolscout.models import Loaded

DATA = SHARED_BENCH / "openapi_specs"
SUFFIXES = (".json", ".yaml", ".yml")
METRICS = ("hit@1", "hit@3", "ndcg@10")


def documents(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES)


def read_apis(folder: Path) -> dict[str, Loaded]:
    """Every document of ``folder`` as toolscout reads it, by its stem (the API name)."""
    return {path.stem: OpenApiSource(path, api=path.stem).read() for path in documents(folder)}


def load_queries(folder: Path, splits: list[str]) -> list[dict[str, Any]]:
    rows = []
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row["split"] in splits:
                rows.append(row)
    return rows


def measure(engine: Engine, loads: list[Loaded], queries: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean metrics per split and system (see the module docstring)."""
    tools = [t for loaded in loads for t in loaded.tools]
    systems: dict[str, Ranker] = {
        "default": lambda q: [h.tool.id for h in engine.search(q, limit=10).hits],
        **baselines(engine, tools),
    }
    known = {t.id for t in tools}
    missing = sorted({g for row in queries for g in row["gold"]} - known)
    if missing:
        raise SystemExit(f"gold operations not in the documents: {', '.join(missing[:10])}")
    out: dict[str, Any] = {}
    for split in sorted({row["split"] for row in queries}):
        rows = [row for row in queries if row["split"] == split]
        out[split] = {"requests": len(rows), "operations": len({r["gold"][0] for r in rows})}
        for name, rank in systems.items():
            scored = [score_query(rank(row["query"]), row["gold"]) for row in rows]
            means = mean(scored)
            out[split][name] = {m: round(means[m], 3) for m in METRICS}
            out[split][name]["hit@3_per_api"] = per_api(rows, scored)
    return out


def per_api(rows: list[dict[str, Any]], scored: list[dict[str, float]]) -> dict[str, float]:
    """hit@3 per API (the part of the gold id before ``::``)."""
    by_api: dict[str, list[float]] = {}
    for row, score in zip(rows, scored, strict=True):
        by_api.setdefault(row["gold"][0].split("::")[0], []).append(score["hit@3"])
    return {api: round(sum(v) / len(v), 3) for api, v in sorted(by_api.items())}


def table(report: dict[str, Any]) -> str:
    lines = [
        "| split (requests / operations) | system | hit@1 | hit@3 | nDCG@10 | hit@3 per API |",
        "|---|---|---:|---:|---:|---|",
    ]
    for split, row in report["splits"].items():
        label = f"{split} ({row['requests']} / {row['operations']})"
        for name in ("default", "plain_cosine", "weighted_rrf"):
            m = row[name]
            apis = ", ".join(f"{a} {v:.2f}" for a, v in m["hit@3_per_api"].items())
            lines.append(
                f"| {label} | {name} | {m['hit@1']:.3f} | {m['hit@3']:.3f} | {m['ndcg@10']:.3f} "
                f"| {apis} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="documents + queries.jsonl")
    parser.add_argument("--splits", nargs="+", default=["dev", "test"], choices=["dev", "test"])
    parser.add_argument("--out", type=Path, help="also write the report here (JSON)")
    args = parser.parse_args()
    folder: Path = args.data
    if not (folder / "queries.jsonl").is_file() or not documents(folder):
        print(
            f"skipped: no OpenAPI documents and queries.jsonl in {folder} (the data is kept "
            "outside the repository; see bench/README.md)"
        )
        return 0
    loads = read_apis(folder)
    queries = load_queries(folder, args.splits)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(Settings(db=str(Path(tmp) / "index.db")))
        try:
            engine.index(list(loads.values()))
            report = {
                "data": str(folder),
                "apis": {
                    name: {"operations": len(loaded.tools), "skipped": len(loaded.problems)}
                    for name, loaded in loads.items()
                },
                "splits": measure(engine, list(loads.values()), queries),
            }
        finally:
            engine.close()
    print(json.dumps(report["apis"], indent=1))
    print(table(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
