"""The quality tier beside the default model: quality on every set, cost per query and per 1k tools.

    PYTHONPATH=src python bench/quality_tier.py quality [--sets NAME ...] [--splits dev test]
    PYTHONPATH=src python bench/quality_tier.py cost [--tools 1000] [--queries 200]

Both compare ``--models`` (default: ``local:tool-minilm-l6``, the default model, and
``local:quality``, all-mpnet-base-v2 installed by ``toolscout model install quality``) in one run.

``quality``: every set and split ``bench/ranking.py`` covers (bench/natural.py's sets and
``tooleyes_dev``), one index per set and model (kept in ``--db-dir``): hit@3 and nDCG@10 of the
default search (``Engine.search``, hybrid) and of the vector leg alone, for each model; then the
second model's default search against the first's, request by request, with the exact sign
test's p-value; and whether the scores are calibrated for the model (the packaged calibration,
ranker and skill scores are fitted for the default model: with another one the engine ranks by
the hand-set fusion and reports its scores as approximate).

``cost``: on the first ``--tools`` tools of a catalog (default: Seal-Tools, the largest shared
set): seconds to embed them as ``toolscout index`` does (``embed_text``, one ``embed`` call, no
vector cache) and so tools indexed per second; and the time to embed each of ``--queries``
requests alone (``embed_query``, p50 / p95 ms), as a search does. Timings need a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from natural import ROOT, Dataset, Request, db_folder, load_requests, open_index
from ranking import all_sets
from shared_data import SHARED_BENCH
from toolscout.config import load_settings
from toolscout.embed.base import DEFAULT_MODEL, Embedder, open_embedder
from toolscout.engine import Engine
from toolscout.eval.metrics import mean, score_query, sign_test
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode
from toolscout.search.document import embed_text

MODELS = [DEFAULT_MODEL, "local:quality"]
METRICS = ("hit@3", "ndcg@10")
HYBRID, VECTOR = SearchMode.HYBRID, SearchMode.VECTOR


def ranked(engine: Engine, text: str, mode: SearchMode) -> list[str]:
    return [h.tool.id for h in engine.search(text, mode=mode, limit=10).hits]


def run_model(
    ds: Dataset, reqs: list[Request], db_dir: Path, model: str
) -> tuple[dict[str, Any], dict[str, list[dict[str, float]]]]:
    """One model on one set: per split, the metrics' means and each request's default scores."""
    engine, _ = open_index(db_folder(db_dir, model) / f"{ds.name}.db", ds.tools, ds.name, model)
    status = engine.searcher.calibration_status
    out: dict[str, Any] = {}
    rows: dict[str, list[dict[str, float]]] = {}
    for split in sorted({r.split for r in reqs}):
        chosen = [r for r in reqs if r.split == split]
        rows[split] = [score_query(ranked(engine, r.text, HYBRID), r.gold) for r in chosen]
        vector = [score_query(ranked(engine, r.text, VECTOR), r.gold) for r in chosen]
        out[split] = {
            "requests": len(chosen),
            "default": {k: round(v, 4) for k, v in mean(rows[split]).items() if k in METRICS},
            "vector": {k: round(v, 4) for k, v in mean(vector).items() if k in METRICS},
            "scores": status,
        }
    engine.close()
    return out, rows


def quality(args: argparse.Namespace) -> dict[str, Any]:
    sets = all_sets(ROOT / "data" / "natural")
    report: dict[str, Any] = {}
    for name in args.sets:
        ds = sets[name]
        if not ds.tools.is_file() or not ds.queries.is_file():
            print(f"{name}: not found ({ds.tools.parent}), skipped", flush=True)
            continue
        reqs = [r for r in load_requests(ds, args.max_queries) if r.split in args.splits]
        if not reqs:
            continue
        per_model = {m: run_model(ds, reqs, args.db_dir, m) for m in args.models}
        first, second = args.models[0], args.models[-1]
        report[name] = {}
        for split in sorted({r.split for r in reqs}):
            row: dict[str, Any] = {m: per_model[m][0][split] for m in args.models}
            mine, theirs = per_model[second][1][split], per_model[first][1][split]
            row["second_vs_first"] = {}
            for metric in METRICS:
                won, lost, p = sign_test([r[metric] for r in mine], [r[metric] for r in theirs])
                row["second_vs_first"][metric] = {"won": won, "lost": lost, "p": round(p, 4)}
            report[name][split] = row
            print(_line(name, split, row, args.models), flush=True)
    return report


def _line(name: str, split: str, row: dict[str, Any], models: list[str]) -> str:
    cells = "  ".join(
        f"{m}: "
        + " ".join(
            f"{leg} {100 * row[m][leg]['hit@3']:5.1f}/{100 * row[m][leg]['ndcg@10']:5.1f}"
            for leg in ("default", "vector")
        )
        for m in models
    )
    sign = row["second_vs_first"]["hit@3"]
    return (
        f"{name:18s} {split:4s} n={row[models[0]]['requests']:4d}  {cells}  "
        f"h3 +{sign['won']}/-{sign['lost']} p={sign['p']:.2g}"
    )


def markdown(report: dict[str, Any], models: list[str]) -> str:
    """One row per set and split: hit@3 / nDCG@10 of each model's default search and vector leg."""
    head = (
        "| set split (requests) | "
        + " | ".join(f"{m} default | {m} vector" for m in models)
        + " | hit@3 won/lost (p) |"
    )
    lines = [head, "|---" * (2 * len(models) + 2) + "|"]
    for name, splits in report.items():
        for split, row in splits.items():
            cells = " | ".join(
                f"{100 * row[m][leg]['hit@3']:.1f} / {100 * row[m][leg]['ndcg@10']:.1f}"
                for m in models
                for leg in ("default", "vector")
            )
            s = row["second_vs_first"]["hit@3"]
            n = row[models[0]]["requests"]
            signs = f"+{s['won']}/-{s['lost']} ({s['p']:.2g})"
            lines.append(f"| {name} {split} ({n}) | {cells} | {signs} |")
    return "\n".join(lines)


def _embedder(model: str, threads: int) -> Embedder:
    settings = load_settings(embed_model=model)
    return open_embedder(model, threads=threads, models_dir=Path(settings.models_dir))


def cost(args: argparse.Namespace) -> dict[str, Any]:
    tools = list(CatalogFile(args.catalog, source="cost").read().tools)[: args.tools]
    texts = [embed_text(t) for t in tools]
    requests = [
        json.loads(line)["query"]
        for line in args.requests.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ][: args.queries]
    report: dict[str, Any] = {"tools": len(texts), "queries": len(requests)}
    report["threads"] = args.threads
    for model in args.models:
        embedder = _embedder(model, args.threads)
        embedder.embed_query(["warm up"])
        took = []
        for text in requests:
            t0 = time.perf_counter()
            embedder.embed_query([text])
            took.append((time.perf_counter() - t0) * 1000)
        took.sort()
        t0 = time.perf_counter()
        embedder.embed(texts)
        seconds = time.perf_counter() - t0
        report[model] = {
            "name": embedder.name,
            "dim": embedder.dim,
            "query_ms_p50": round(took[len(took) // 2], 2),
            "query_ms_p95": round(took[min(len(took) - 1, int(0.95 * len(took)))], 2),
            "index_s_per_1k_tools": round(seconds * 1000 / len(texts), 1),
            "tools_per_s": round(len(texts) / seconds, 1),
        }
        print(json.dumps({model: report[model]}), flush=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["quality", "cost"])
    parser.add_argument("--models", nargs=2, default=MODELS, help="the baseline, then the tier")
    sets = list(all_sets(ROOT / "data" / "natural"))
    parser.add_argument("--sets", nargs="*", default=sets, choices=sets)
    parser.add_argument("--splits", nargs="+", default=["dev", "test"], choices=["dev", "test"])
    parser.add_argument("--max-queries", type=int, default=400, help="per split; 0 = all")
    out = ROOT / "bench" / "out" / "quality_tier"
    parser.add_argument("--db-dir", type=Path, default=out / "db")
    parser.add_argument("--out", type=Path, default=out)
    seal = SHARED_BENCH / "seal_tools"
    parser.add_argument("--catalog", type=Path, default=seal / "tools.jsonl")
    parser.add_argument("--requests", type=Path, default=seal / "queries.jsonl")
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    t0 = time.perf_counter()
    report = {"models": args.models}
    if args.what == "quality":
        report["sets"] = quality(args)
    else:
        report["cost"] = cost(args)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.what}.json").write_text(json.dumps(report, indent=1))
    if args.what == "quality":
        print(markdown(report["sets"], args.models))
    print(f"{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
