"""Retrieval quality of toolscout's modes beside three peers, all measured in one run.

    python bench/quality.py [--sets toolbench_stable seal_tools livemcp_paraphrase]
        [--query-encoder int8|exact]

Peers (built on the same peer text for every tool: name + split name + server + category +
description + parameter names and descriptions, as in ../shared/bench/README.md):

* ``peer_bm25s``   — bm25s 0.3.16, English stopwords + Snowball stemmer (PyStemmer), default k1/b;
* ``peer_vector``  — cosine over the same default model (MiniLM-L6 int8), whole query;
* ``peer_rrf``     — plain RRF (k=60, equal weights) of those two top-100 lists (freeact's method).

toolscout (its own document text, search/document.py): ``bm25``, ``vector``, ``hybrid`` with
``fusion=rrf`` (the same legs fused by plain RRF), and ``hybrid`` default (adaptive fusion).

Run files (``{"query_id", "ranked"}``) land in ``<out>/runs/<set>/<system>.jsonl`` so
``../shared/bench/score_run.py`` can re-score every figure. ``livemcp_paraphrase`` is the project's
dev set (tests/data/livemcp_paraphrase) over the livemcpbench catalog.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.metrics import mean, score_query
from toolscout.eval.run import Query, load_queries
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode, Tool
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.text import split_identifier

ROOT = Path(__file__).resolve().parents[1]
SHARED = SHARED_BENCH
SETS = {
    "toolbench_stable": (SHARED / "toolbench_stable" / "tools.jsonl", SHARED / "toolbench_stable"),
    "seal_tools": (SHARED / "seal_tools" / "tools.jsonl", SHARED / "seal_tools"),
    "livemcp_paraphrase": (
        SHARED / "livemcpbench" / "tools.jsonl",
        ROOT / "tests" / "data" / "livemcp_paraphrase",
    ),
}
TOP = 100
Ranker = Callable[[str], list[str]]


def peer_text(tool: Tool) -> str:
    params: list[str] = []
    for name, schema in ((tool.input_schema or {}).get("properties") or {}).items():
        params.append(str(name))
        if isinstance(schema, dict) and isinstance(schema.get("description"), str):
            params.append(schema["description"])
    parts = [
        tool.name,
        " ".join(split_identifier(tool.name)),
        tool.server or "",
        tool.category or "",
    ]
    return " ".join([*parts, tool.description, *params])


def _rrf(runs: list[list[str]], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for run in runs:
        for rank, tid in enumerate(run, 1):
            scores[tid] = scores.get(tid, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda t: (-scores[t], t))


def peers(engine: Engine, tools: list[Tool]) -> dict[str, Ranker]:
    stemmer = Stemmer.Stemmer("english")
    texts = [peer_text(t) for t in tools]
    ids = [t.id for t in tools]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    matrix = engine.embedder.embed(texts)

    def bm25(q: str) -> list[str]:
        toks = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = retriever.retrieve(toks, k=min(TOP, len(ids)), show_progress=False)
        return [ids[d] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def vector(q: str) -> list[str]:
        sims = matrix @ engine.embedder.embed_query([q])[0]
        order = np.argsort(-sims, kind="stable")[:TOP]
        return [ids[i] for i in order]

    return {
        "peer_bm25s": bm25,
        "peer_vector": vector,
        "peer_rrf": lambda q: _rrf([bm25(q), vector(q)]),
    }


def ours(engine: Engine) -> dict[str, Ranker]:
    rrf = HybridSearcher(
        engine.store, engine.embedder, replace(engine.searcher.config, fusion="rrf")
    )

    def mode(m: SearchMode) -> Ranker:
        return lambda q: [h.tool.id for h in engine.search(q, mode=m, limit=10).hits]

    return {
        "toolscout_bm25": mode(SearchMode.BM25),
        "toolscout_vector": mode(SearchMode.VECTOR),
        "toolscout_hybrid_rrf": lambda q: [r.id for r in rrf.search(q, limit=10)],
        "toolscout_hybrid": mode(SearchMode.HYBRID),
    }


def split_of(name: str, q: Query) -> str:
    """Which queries the defaults were tuned on (dev) and which are held out."""
    if name == "toolbench_stable":
        return "tuned" if (q.group or "").startswith("G1") else "held_out"
    if name == "seal_tools":
        return "tuned" if q.group == "dev" else "held_out"
    return "tuned" if int(q.id.lstrip("p")) % 2 == 1 else "held_out"


def run_set(
    name: str, out: Path, cache_dir: str, query_encoder: str = "int8"
) -> dict[str, dict[str, dict[str, float]]]:
    tools_path, qdir = SETS[name]
    queries = load_queries(qdir / "queries.jsonl")
    loaded = CatalogFile(tools_path, source=name).read()
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(
            Settings(db=str(Path(tmp) / "q.db"), cache_dir=cache_dir, query_encoder=query_encoder)
        )
        engine.index([loaded])
        systems = {**peers(engine, loaded.tools), **ours(engine)}
        results: dict[str, dict[str, dict[str, float]]] = {}
        for system, rank in systems.items():
            rows: dict[str, list[dict[str, float]]] = {"all": [], "tuned": [], "held_out": []}
            lines = []
            for q in queries:
                ranked = rank(q.text[:1000])[:10]
                lines.append(json.dumps({"query_id": q.id, "ranked": ranked}))
                scores = score_query(ranked, q.gold)
                rows["all"].append(scores)
                rows[split_of(name, q)].append(scores)
            run_path = out / "runs" / name / f"{system}.jsonl"
            run_path.parent.mkdir(parents=True, exist_ok=True)
            run_path.write_text("\n".join(lines) + "\n")
            results[system] = {k: mean(v) for k, v in rows.items() if v}
            print(
                f"{name:20s} {system:22s} "
                + "  ".join(
                    f"{k} nDCG@10 {100 * m['ndcg@10']:5.1f} hit@3 {100 * m['hit@3']:5.1f}"
                    for k, m in results[system].items()
                ),
                flush=True,
            )
        engine.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "toolscout"))
    parser.add_argument("--query-encoder", choices=("int8", "exact"), default="int8")
    args = parser.parse_args()
    report = {
        name: run_set(name, args.out, args.cache_dir, args.query_encoder) for name in args.sets
    }
    (args.out / "quality.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
