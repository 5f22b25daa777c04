"""The packaged embedders side by side: retrieval quality on held-out sets and query latency.

    python bench/embedder_quality.py [--models local:minilm-l6-int8 local:tool-minilm-l6]
        [--sets ...] [--metatool-queries 600] [--out bench/out/embedder]

For each model (each in its own fresh index, same run), every set is indexed whole and searched
in ``vector`` and default ``hybrid`` mode; hit@3 and nDCG@10 over the listed requests:

* ``<source>_test``: the tool-disjoint test split of data/natural (``metatool``,
  ``gorilla_apibench``, ``bfcl``: requests whose gold tools were never trained on) and the
  test-only ``toolalpaca``;
  MetaTool's 5,542 test requests are thinned to ``--metatool-queries`` (every k-th row);
* ``paraphrase_test``: the even-numbered half of tests/data/livemcp_paraphrase (its odd half was
  used to pick the training epoch);
* ``toolbench_stable`` and ``seal_tools`` (../shared/bench, all requests): the keyword-heavy sets
  the model must not lose on.

Latency: ``embed_query`` of one short request (3-8 words), one thread, the models interleaved
round by round so machine load hits them alike; p50 / p95 in ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.embed.base import open_embedder
from toolscout.engine import Engine
from toolscout.eval.metrics import mean, score_query
from toolscout.eval.run import Query, load_queries
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode

ROOT = Path(__file__).resolve().parents[1]
NATURAL = ROOT / "data" / "natural"
SHARED = SHARED_BENCH
MODELS = ["local:minilm-l6-int8", "local:tool-minilm-l6"]
SETS = [
    "metatool_test",
    "gorilla_apibench_test",
    "bfcl_test",
    "toolalpaca_test",
    "paraphrase_test",
    "toolbench_stable",
    "seal_tools",
]
SHORT = [
    "file a bug in the repo",
    "weather in Berlin tomorrow",
    "convert 100 USD to EUR",
    "rename report.txt",
    "send Ana the agenda",
    "who won the match last night",
    "book a table for two tonight",
    "find papers about protein folding",
]


def set_files(name: str, metatool_queries: int) -> tuple[Path, list[Query]]:
    """The catalog to index and the requests to score for one set."""
    if name.endswith("_test") and name != "paraphrase_test":
        source = name.removesuffix("_test")
        rows = load_queries(NATURAL / source / "queries.jsonl")
        raw = [json.loads(x) for x in (NATURAL / source / "queries.jsonl").read_text().splitlines()]
        test_ids = {r["id"] for r in raw if r["split"] == "test"}
        queries = [q for q in rows if q.id in test_ids]
        if source == "metatool" and len(queries) > metatool_queries:
            step = len(queries) / metatool_queries
            queries = [queries[int(i * step)] for i in range(metatool_queries)]
        return NATURAL / source / "tools.jsonl", queries
    if name == "paraphrase_test":
        split = json.loads((NATURAL / "livemcp_paraphrase_split.json").read_text())
        rows = load_queries(ROOT / "tests" / "data" / "livemcp_paraphrase" / "queries.jsonl")
        keep = set(split["test"])
        return SHARED / "livemcpbench" / "tools.jsonl", [q for q in rows if q.id in keep]
    return SHARED / name / "tools.jsonl", load_queries(SHARED / name / "queries.jsonl")


def quality(
    model: str, sets: list[str], metatool_queries: int, cache_dir: str
) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in sets:
        tools_path, queries = set_files(name, metatool_queries)
        loaded = CatalogFile(tools_path, source=name).read()
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(db=str(Path(tmp) / "q.db"), cache_dir=cache_dir, embed_model=model)
            engine = Engine.open(settings)
            started = time.monotonic()
            engine.index([loaded])
            indexed = time.monotonic() - started
            out[name] = {}
            for mode in (SearchMode.VECTOR, SearchMode.HYBRID):
                rows = [
                    score_query(
                        [h.tool.id for h in engine.search(q.text[:1000], mode=mode, limit=10).hits],
                        q.gold,
                    )
                    for q in queries
                ]
                m = mean(rows)
                out[name][mode.value] = {
                    "hit@3": 100 * m["hit@3"],
                    "ndcg@10": 100 * m["ndcg@10"],
                    "n": len(rows),
                }
                print(
                    f"{model:24s} {name:22s} {mode.value:7s} n={len(rows):5d} "
                    f"hit@3 {100 * m['hit@3']:5.1f} nDCG@10 {100 * m['ndcg@10']:5.1f} "
                    f"(index {len(loaded.tools)} tools {indexed:.0f} s)",
                    flush=True,
                )
            engine.close()
    return out


def latency(models: list[str], rounds: int) -> dict[str, dict[str, float]]:
    embedders = {m: open_embedder(m, threads=1) for m in models}
    times: dict[str, list[float]] = {m: [] for m in models}
    for e in embedders.values():  # warm up
        e.embed_query(SHORT[:2])
    for _ in range(rounds):
        for m, e in embedders.items():
            for q in SHORT:
                t = time.perf_counter()
                e.embed_query([q])
                times[m].append(1000 * (time.perf_counter() - t))
    out = {}
    for m, ts in times.items():
        ts.sort()
        out[m] = {
            "p50_ms": statistics.median(ts),
            "p95_ms": ts[int(0.95 * (len(ts) - 1))],
            "n": len(ts),
        }
        print(
            f"latency {m:24s} p50 {out[m]['p50_ms']:.2f} ms  p95 {out[m]['p95_ms']:.2f} ms",
            flush=True,
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--sets", nargs="*", default=SETS, help="none: latency only")
    parser.add_argument("--metatool-queries", type=int, default=600)
    parser.add_argument("--latency-rounds", type=int, default=40)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "embedder")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "toolscout"))
    args = parser.parse_args()
    report: dict[str, object] = {}
    if args.latency_rounds:
        report["latency"] = latency(args.models, args.latency_rounds)
    for model in args.models:
        report[model] = quality(model, args.sets, args.metatool_queries, args.cache_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "quality.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
