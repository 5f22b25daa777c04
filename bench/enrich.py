"""Enrichment gain and cost: hit@3 / nDCG@10 with and without enrichment, same run.

    python bench/enrich.py                         # hybrid, none vs offline, both sets
    python bench/enrich.py --mode bm25             # lexical leg only (fast: no embedding)
    python bench/enrich.py --weights 3,2.5,2,2,1.5,1.5,1,1 --enrich offline --mode bm25
    python bench/enrich.py --cost                  # offline time per 1,000 tools

Tuning sets: toolbench_stable G1_* groups and seal_tools ``dev``; the other groups/splits are
reported separately as held-out. ``--mode bm25`` swaps the embedder for zero vectors (the
lexical leg never reads them), so lexical iterations cost no model time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.enrich.base import Enricher
from toolscout.enrich.cache import EnrichReport
from toolscout.enrich.offline import OfflineEnricher, OfflineOptions
from toolscout.enrich.pipeline import EnrichmentPipeline
from toolscout.eval.run import evaluate, index_dataset, load_queries
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode, Tool
from toolscout.search.config import DEFAULT_FIELD_WEIGHTS, SearchConfig
from toolscout.store.sqlite import SQLiteStore

BENCH = SHARED_BENCH
REPO = Path(__file__).resolve().parents[1]
#: set -> (group field, prefix of the groups tuned on; "-" = none, the whole set is held out)
SETS = {
    "toolbench_stable": ("group", "G1_"),
    "seal_tools": ("split", "dev"),
    "livemcp_paraphrase": ("group", "-"),
}


def set_folder(set_name: str, tmp: Path) -> Path:
    """The set's folder; livemcp_paraphrase pairs the shared livemcpbench catalog with the
    repository's paraphrase queries (linked, not copied)."""
    if set_name != "livemcp_paraphrase":
        return BENCH / set_name
    folder = tmp / set_name
    folder.mkdir()
    (folder / "tools.jsonl").symlink_to(BENCH / "livemcpbench" / "tools.jsonl")
    (folder / "queries.jsonl").symlink_to(REPO / "tests" / "data" / set_name / "queries.jsonl")
    return folder


class ZeroVectors:
    """Stand-in embedder for lexical-only runs: the BM25 leg never reads vectors."""

    name = "zero-vectors"
    dim = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dim), dtype=np.float32)

    embed_query = embed


def _engine(db: Path, index: str, enrich: str, weights: tuple[float, ...]) -> Engine:
    enricher: Enricher | None = None
    if enrich.startswith("offline"):
        # offline:101101 switches OfflineOptions fields off/on in declaration order (ablation)
        flags = enrich.partition(":")[2]
        names = [f.name for f in dataclasses.fields(OfflineOptions)]
        opts = OfflineOptions(**{n: c == "1" for n, c in zip(names, flags, strict=False)})
        enricher = OfflineEnricher(opts)
    config = SearchConfig(field_weights=weights)
    if index == "bm25":
        return Engine(
            SQLiteStore(f"sqlite:///{db}"), ZeroVectors(), config=config, enricher=enricher
        )
    engine = Engine.open(Settings(db=str(db), enrich="none", field_weights=list(weights)))
    if enricher is not None:
        engine.enrichment = EnrichmentPipeline(engine.store, enricher)
    return engine


def _split(
    groups: dict[str, dict[str, float]], rows: dict[str, int], tuned: str
) -> dict[str, dict[str, float]]:
    """Query-weighted means over tuned / held-out groups."""
    out: dict[str, dict[str, float]] = {}
    for label, keep in (("tuned", True), ("held-out", False)):
        picked = [(g, m) for g, m in groups.items() if g.startswith(tuned) == keep]
        n = sum(rows[g] for g, _ in picked)
        if n:
            out[label] = {
                k: sum(m[k] * rows[g] for g, m in picked) / n for k in ("hit@3", "ndcg@10")
            }
    return out


def run_one(
    set_name: str, modes: list[str], enrich: str, weights: tuple[float, ...]
) -> list[dict[str, object]]:
    """Index once, then evaluate each mode (``bm25`` alone skips the embedding model)."""
    field, tuned = SETS[set_name]
    results: list[dict[str, object]] = []
    lexical_only = modes == ["bm25"]
    with tempfile.TemporaryDirectory(prefix="bench-enrich-") as tmp:
        set_dir = set_folder(set_name, Path(tmp))
        rows: dict[str, int] = {}
        for q in load_queries(set_dir / "queries.jsonl", field):
            rows[q.group or ""] = rows.get(q.group or "", 0) + 1
        engine = _engine(Path(tmp) / "i.db", "bm25" if lexical_only else "hybrid", enrich, weights)
        try:
            t0 = time.perf_counter()
            index_dataset(engine, set_dir)
            index_s = time.perf_counter() - t0
            for mode in modes:
                report = evaluate(engine, set_dir, mode=SearchMode(mode), group_field=field)
                result: dict[str, object] = {
                    "set": set_name,
                    "mode": mode,
                    "enrich": enrich,
                    "index_s": round(index_s, 1),
                    "hit@3": round(100 * report.overall["hit@3"], 1),
                    "ndcg@10": round(100 * report.overall["ndcg@10"], 1),
                }
                for label, m in _split(report.groups, rows, tuned).items():
                    result[label] = {k: round(100 * v, 1) for k, v in m.items()}
                result["groups"] = {
                    g: round(100 * m["ndcg@10"], 1) for g, m in report.groups.items()
                }
                results.append(result)
        finally:
            engine.close()
    return results


def cost(set_name: str) -> dict[str, object]:
    """Offline enrichment time per 1,000 tools, direct and through the cache (SQLite)."""
    folder = BENCH / ("livemcpbench" if set_name == "livemcp_paraphrase" else set_name)
    tools = CatalogFile(folder / "tools.jsonl", source=set_name).read().tools
    with tempfile.TemporaryDirectory(prefix="bench-enrich-") as tmp:
        store = SQLiteStore(f"sqlite:///{tmp}/c.db")
        pipeline = EnrichmentPipeline(store, OfflineEnricher())
        t0 = time.perf_counter()
        pipeline.fields(tools)
        first = time.perf_counter() - t0
        made: EnrichReport = pipeline.last_report
        t0 = time.perf_counter()
        pipeline.fields(tools)
        again = time.perf_counter() - t0
        hits = pipeline.last_report.tools_cached
        store.close()
    k = 1000 / len(tools)
    return {
        "set": set_name,
        "tools": len(tools),
        "first_pass_s_per_1000": round(first * k, 3),
        "rerun_s_per_1000": round(again * k, 3),
        "made": made.tools_made,
        "rerun_cache_hits": hits,
    }


def llm_cost(set_name: str, limit: int = 1000) -> dict[str, object]:
    """LLM calls and tokens for ``limit`` tools (whole servers) against the OpenAI-compatible
    TEST DOUBLE of tests/support (it answers every call with one valid enrichment and reports
    20 tokens a call, so prompt size is reported too: ~4 characters a token), then the same
    tools again: an unchanged re-run must make no call."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.openai_double import OpenAIDouble, good
    from toolscout.enrich.llm import OpenAICompatibleLLM
    from toolscout.enrich.llm_enricher import LLMEnricher, profile_prompt, tool_prompt

    folder = BENCH / ("livemcpbench" if set_name == "livemcp_paraphrase" else set_name)
    tools = CatalogFile(folder / "tools.jsonl", source=set_name).read().tools[:limit]
    tool_answer = {
        "enhanced_description": "Looks something up for the user and returns it.",
        "action_entities": ["get item"],
        "use_cases": ["find an item"],
        "keywords": ["lookup"],
    }
    profile_answer = {"domain": "general lookups", "capabilities": ["get item"]}
    with OpenAIDouble(default=good(tool_answer)) as double, tempfile.TemporaryDirectory() as tmp:
        servers = {t.server or t.category or "(none)" for t in tools}
        double.script(*[good(profile_answer)] * len(servers))  # profiles are asked first
        llm = OpenAICompatibleLLM(base_url=double.base_url, model="double", retries=0)
        store = SQLiteStore(f"sqlite:///{tmp}/llm.db")
        pipeline = EnrichmentPipeline(store, LLMEnricher(llm, concurrency=4))
        t0 = time.perf_counter()
        pipeline.fields(tools)
        seconds = time.perf_counter() - t0
        first = pipeline.last_report
        calls_first = len(double.requests)
        pipeline.fields(tools)
        calls_again = len(double.requests) - calls_first
        store.close()
    prompt_chars = sum(len(tool_prompt(t, None)) for t in tools)
    groups: dict[str, list[Tool]] = {}
    for t in tools:
        groups.setdefault(t.server or t.category or "(none)", []).append(t)
    prompt_chars += sum(len(profile_prompt(k, v)) for k, v in groups.items())
    k = 1000 / len(tools)
    return {
        "set": set_name,
        "tools": len(tools),
        "profiles": len(groups),
        "calls_per_1000": round(calls_first * k),
        "tokens_per_1000_reported_by_double": round(first.tokens * k),
        "prompt_tokens_per_1000_estimated": round(prompt_chars / 4 * k),
        "failed": first.tools_failed + first.profiles_failed,
        "seconds_vs_double": round(seconds, 1),
        "calls_on_unchanged_rerun": calls_again,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="toolbench_stable,seal_tools")
    parser.add_argument("--mode", default="hybrid", help="comma list of bm25, vector, hybrid")
    parser.add_argument("--enrich", default="none,offline", help="comma list of none/offline")
    parser.add_argument("--weights", default=None, help="8 comma-separated field weights")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--llm-cost", action="store_true", help="calls/tokens vs the test double")
    args = parser.parse_args()
    sets = args.sets.split(",")
    if args.llm_cost:
        for s in sets:
            print(json.dumps(llm_cost(s)), flush=True)
        return
    if args.cost:
        for s in sets:
            print(json.dumps(cost(s)))
        return
    weights = (
        tuple(float(x) for x in args.weights.split(",")) if args.weights else DEFAULT_FIELD_WEIGHTS
    )
    for s in sets:
        for enrich in args.enrich.split(","):
            for result in run_one(s, args.mode.split(","), enrich, weights):
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
