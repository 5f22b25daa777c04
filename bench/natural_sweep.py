"""The lexical weight's logistic (midpoint, slope) swept on the dev rows of the natural sets.

    python bench/natural_sweep.py [--max-queries 100] [--grid 3.0:0.5 3.5:0.5 ...]

Same indexes as bench/natural.py (the default model's folder); only ``dev`` rows are read.
Prints hit@3 / nDCG@10 of the vector and bm25 legs and of the hybrid at each setting.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from natural import ROOT, datasets, db_folder, load_requests, open_index
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.eval.metrics import mean, score_query
from toolscout.models import SearchMode
from toolscout.search.hybrid import HybridSearcher

SETS = ("livemcp_paraphrase", "metatool", "gorilla_apibench", "bfcl", "toolbench_stable")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--natural", type=Path, default=ROOT / "data" / "natural")
    parser.add_argument("--max-queries", type=int, default=100)
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--grid", nargs="+", default=["2.5:0.25", "3.0:0.5", "3.5:0.5", "4.0:0.5"])
    args = parser.parse_args()
    sets = datasets(args.natural)
    db_dir = db_folder(ROOT / "bench" / "out" / "natural" / "db", DEFAULT_MODEL)
    for name in args.sets:
        ds = sets[name]
        reqs = [r for r in load_requests(ds, args.max_queries) if r.split == "dev"]
        engine, _ = open_index(db_dir / f"{name}.db", ds.tools, name)
        cells = []
        for mode in ("vector", "bm25"):
            rows = [
                score_query(
                    [r.id for r in engine.searcher.search(q.text, mode=SearchMode(mode), limit=10)],
                    q.gold,
                )
                for q in reqs
            ]
            m = mean(rows)
            cells.append(f"{mode} {100 * m['hit@3']:.1f}/{100 * m['ndcg@10']:.1f}")
        for point in args.grid:
            mid, slope = (float(x) for x in point.split(":"))
            config = replace(engine.searcher.config, evidence_midpoint=mid, evidence_slope=slope)
            searcher = HybridSearcher(engine.store, engine.embedder, config)
            rows = [
                score_query([r.id for r in searcher.search(q.text, limit=10)], q.gold) for q in reqs
            ]
            m = mean(rows)
            cells.append(f"{point} {100 * m['hit@3']:.1f}/{100 * m['ndcg@10']:.1f}")
            searcher.close()
        print(f"{name:18s} dev n={len(reqs):4d}  " + "  ".join(cells), flush=True)
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
