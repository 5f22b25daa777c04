"""Skills and hierarchical search benchmarks. Run by hand; figures go to
docs/BENCHMARKS.md section 3.

    python bench/skills.py quality toolbench_stable seal_tools   # hit@3, nDCG@10 per strategy
    python bench/skills.py routing [--max-dev 300] [--unseen] [--sets NAME ...]
                                   [--model local:quality] [--fit packaged|catalog|both]
    python bench/skills.py classify livemcpbench               # uncategorized share + sample
    python bench/skills.py latency [short|long] [--size 10000] [--runs 300]   # p95 at 10k tools
    python bench/skills.py fitcost [10000]      # seconds of a catalog fit: built-in, 10k tools

Indexes live under $BENCH_DIR (default /tmp/toolscout-bench-skills) and are reused.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.eval.metrics import mean, percentile, score_query
from toolscout.eval.run import index_dataset, load_queries
from toolscout.models import SearchRequest, Tool

SHARED = SHARED_BENCH
WORK = Path(os.environ.get("BENCH_DIR", "/tmp/toolscout-bench-skills"))
STRATEGIES = ("direct", "hierarchical", "hybrid")


def open_engine(name: str, *, query_cache: bool = False) -> Engine:
    """Quality runs share one query embedding across the three strategies (cache on); the
    latency run embeds every query it times (cache off)."""
    WORK.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        db=str(WORK / f"{name}.db"),
        cache_dir=str(WORK / "cache"),
        query_cache_size=4096 if query_cache else 0,
        result_cache_size=0,  # every timed or scored search runs in full
    )
    try:
        return Engine.open(settings)
    except ConfigError as exc:  # built by an older analyzer/model: rebuild (vectors are cached)
        print(f"[{name}] rebuilding: {exc}", file=sys.stderr)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{settings.db}{suffix}").unlink(missing_ok=True)
        return Engine.open(settings)


def indexed(name: str) -> Engine:
    engine = open_engine(name, query_cache=True)
    t0 = time.perf_counter()
    index_dataset(engine, SHARED / name)
    engine.classify(all=True)  # the calibration may have changed since the last run
    print(f"[{name}] indexed + classified in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return engine


def quality(names: list[str]) -> None:
    for arg in names:
        name, _, step = arg.partition(":")  # seal_tools:2 = every second query
        engine = indexed(name)
        queries = load_queries(SHARED / name / "queries.jsonl")[:: int(step or 1)]
        rows: dict[str, list[dict[str, float]]] = {s: [] for s in STRATEGIES}
        fractions: list[float] = []
        fallbacks = 0
        for q in queries:
            for strategy in STRATEGIES:
                req = SearchRequest(q.text[:1000], limit=10, tool_threshold=0.0, strategy=strategy)
                res = engine.find(req)
                rows[strategy].append(score_query([h.tool.id for h in res.tools], q.gold))
                if strategy == "hierarchical":
                    fractions.append(res.metadata["searched_fraction"])
                    fallbacks += res.metadata["skill_ids_used"] is None
        print(f"\n{name}: {len(queries)} queries")
        print("| strategy | hit@3 | nDCG@10 | recall@10 |")
        print("|---|---|---|---|")
        for strategy in STRATEGIES:
            m = mean(rows[strategy])
            print(
                f"| {strategy} | {100 * m['hit@3']:.1f} | {100 * m['ndcg@10']:.1f} "
                f"| {100 * m['recall@10']:.1f} |"
            )
        print(
            f"stage 2 searched {100 * statistics.mean(fractions):.1f} % of the catalog on "
            f"average (median {100 * statistics.median(fractions):.1f} %); "
            f"{fallbacks} of {len(queries)} queries fell back to the whole catalog"
        )
        engine.close()


def routing(args: list[str]) -> None:
    """A skill fit on the dev sets of bench/fit/skill_scores.py: the share of requests whose
    gold tool has a skill among the matched ones, by the previous rule (the first three skills
    scoring at least 0.4) and by the default adaptive rule (skills in score order until the
    coverage model reaches ``skill_coverage``, at most ``skill_limit``), the skills matched and
    the share of the catalog they hold, fallbacks, and direct against hierarchical hit@3.

    ``--model``: the embedding model; ``--fit``: the packaged constants, the constants fitted
    on each dev catalog itself (``skills/catalogfit.py``, as an index of another model does
    at run time), or both, one after the other on the same index and requests."""
    from natural import db_folder, open_index
    from toolscout.embed.base import DEFAULT_MODEL

    parser = argparse.ArgumentParser(prog="skills.py routing")
    parser.add_argument("--max-dev", type=int, default=300, help="requests per dev set")
    parser.add_argument("--unseen", action="store_true", help="also report tooleyes_dev")
    parser.add_argument("--sets", nargs="*", default=None, help="dev sets (default: all)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="embedding model")
    parser.add_argument("--fit", choices=("packaged", "catalog", "both"), default="packaged")
    opts = parser.parse_args(args)
    from fit.skill_scores import dev_sets

    db = db_folder(WORK / "routing", opts.model)
    db.mkdir(parents=True, exist_ok=True)
    fits = ("packaged", "catalog") if opts.fit == "both" else (opts.fit,)
    print(f"model {opts.model}\n\n| dev set (requests) | fit | routed, three skills → "
          "**adaptive** | skills matched | catalog share | fell back | direct hit@3 | "
          "hierarchical hit@3 |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    for name, (tools, pairs) in dev_sets(opts.max_dev, opts.unseen).items():
        if opts.sets and name.split()[0] not in opts.sets:
            continue
        engine, _ = open_index(db / f"{name.split()[0]}.db", tools, name, opts.model)
        for which in fits:
            t0 = time.perf_counter()
            label = _serve(engine, which)
            seconds = time.perf_counter() - t0
            print(f"| {name} ({len(pairs)}) | {label} | {_routing_cells(engine, pairs)} |",
                  flush=True)  # fmt: skip
            print(f"[{name}] {which}: fitted and classified in {seconds:.1f} s", file=sys.stderr)
        engine.close()


def _serve(engine: Engine, which: str) -> str:
    """Serve the packaged constants or a fit on the engine's own catalog (made now, even for
    the packaged fit's model) and re-classify with them. Returns how the fit is described."""
    from toolscout.search.skillfit import packaged_skill_fit, stored_skill_fit

    fit = packaged_skill_fit()
    label = "packaged" if fit.matches(engine.embedder) else "packaged (another model's)"
    if which == "catalog":
        engine.skill_fits.use(None)
        engine.skill_fits.refit(force=True)
        found = stored_skill_fit(engine.store)
        if found is None:
            raise SystemExit("too few tools hold a skill for a catalog fit")
        fit, label = found, f"catalog ({found.requests} pseudo-requests)"
    engine.skill_fits.use(fit)
    engine.classify(all=True)
    return label


def _routing_cells(engine: Engine, pairs: list[tuple[str, tuple[str, ...]]]) -> str:
    from fit.skill_routing import DEFAULTS, catalog_share, routed, strategies
    from fit.skill_routing import routing as share

    fit = engine.search_service.hierarchical.stage1.fit
    rows = routed(engine, pairs)
    before = share(fit.stage1, rows)
    now = share(fit.stage1, rows, fit.coverage, limit=DEFAULTS.skill_limit,
                threshold=DEFAULTS.skill_threshold, target=DEFAULTS.skill_coverage)  # fmt: skip
    of_catalog = catalog_share(engine)
    held = statistics.mean(of_catalog(c) for c in now.chosen)
    row = strategies(engine, pairs)
    return (f"{100 * before.share:.1f} → **{100 * now.share:.1f} %** | {now.matched:.2f} | "
            f"{100 * held:.1f} % | {100 * row['fallback']:.1f} % | "
            f"{100 * row['direct_hit@3']:.1f} | {100 * row['hierarchical_hit@3']:.1f}")  # fmt: skip


def classify_report(name: str, sample: int = 50) -> None:
    engine = indexed(name)
    tools = engine.store.tools.list_tools(limit=100000)
    assigned = engine.store.skills.assignments([t.id for t in tools])
    primary = {
        t.id: next((a.skill_id for a in assigned.get(t.id, []) if a.is_primary), None)
        for t in tools
    }
    unc = sum(p is None for p in primary.values())
    print(f"{name}: {len(tools)} tools, uncategorized {unc} ({100 * unc / len(tools):.1f} %)")
    for label, group in (("Chinese", True), ("other", False)):
        part = [t for t in tools if _cjk(t.description) == group]
        n = sum(primary[t.id] is None for t in part)
        print(f"  {label} descriptions: {len(part)} tools, uncategorized {n}")
    counts: dict[str, int] = {}
    for p in primary.values():
        counts[p or "uncategorized"] = counts.get(p or "uncategorized", 0) + 1
    print(sorted(counts.items(), key=lambda kv: -kv[1]))
    rng = random.Random(3)
    categorized = [t for t in tools if primary[t.id]]
    chosen = rng.sample(categorized, min(sample, len(categorized)))
    for t in chosen:
        rows = assigned[t.id]
        skills = ", ".join(f"{a.skill_id} {a.confidence:.2f}" for a in rows)
        print(f"| {t.id} | {t.description[:90].replace('|', '/')} | {skills} | |")
    engine.close()


def _cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def variant(tool: Tool, n: int) -> Tool:
    return Tool(
        id=f"{tool.id}::v{n}", name=tool.name, description=tool.description,
        input_schema=tool.input_schema, item_type=tool.item_type,
        server=f"{tool.server or 'x'}_v{n}", source="variants", category=tool.category,
    )  # fmt: skip


def scaled(target: int) -> Engine:
    """An index of ``target`` tools: three shared catalogs, then copies of their tools with
    jittered vectors (kept under $BENCH_DIR)."""
    from toolscout.engine import prepare
    from toolscout.store.base import IndexEntry

    engine = open_engine("scale10k" if target == 10000 else f"scale{target}")
    if engine.store.count() < target:
        for name in ("toolbench_stable", "seal_tools", "livemcpbench"):
            index_dataset(engine, SHARED / name)
        base = engine.store.tools.list_tools(limit=100000)
        vecs = engine.store.vectors([t.id for t in base])
        rng = np.random.default_rng(7)
        entries, n = [], 2
        while engine.store.count() + len(entries) < target:
            for t in base[: target - engine.store.count() - len(entries)]:
                v = vecs[t.id] + rng.normal(0, 0.02, size=vecs[t.id].shape).astype(np.float32)
                p = prepare(variant(t, n))
                entries.append(IndexEntry(p.tool, p.fields, v / np.linalg.norm(v), p.text_hash))
            n += 1
        engine.store.upsert(entries)
    return engine


def fit_cost(target: int) -> None:
    """Seconds a catalog fit of the skill constants takes (forced, for the default model: the
    same work as for another one), on the built-in catalog and on an index of ``target``
    tools; each index classified first, as indexing leaves it."""
    from importlib import resources

    from toolscout.ingest.jsonfile import CatalogFile
    from toolscout.search.skillfit import stored_skill_fit

    builtin = open_engine("builtin_fit")
    path = Path(str(resources.files("toolscout.data").joinpath("starter_catalog.json")))
    builtin.index([CatalogFile(path, source="builtin").read()])
    for name, engine in (("built-in catalog", builtin), (f"{target} tools", scaled(target))):
        engine.classify()
        t0 = time.perf_counter()
        engine.skill_fits.refit(force=True)
        seconds = time.perf_counter() - t0
        fit = stored_skill_fit(engine.store)
        assert fit is not None, "too few tools hold a skill for a catalog fit"
        print(f"{name}: {engine.store.count()} tools, {fit.requests} pseudo-requests, "
              f"fitted and re-classified in {seconds:.1f} s")  # fmt: skip
        engine.close()


def latency(target: int = 10000, runs: int = 300, kind: str = "long") -> None:
    engine = scaled(target)
    t0 = time.perf_counter()
    engine.classify()
    print(f"classify: {time.perf_counter() - t0:.1f} s; tools {engine.store.count()}")
    if kind == "short":  # agent-style requests: the paraphrase dev set (3-12 words)
        para = Path(__file__).resolve().parents[1] / "tests/data/livemcp_paraphrase/queries.jsonl"
        queries = [q.text for q in load_queries(para)]
    else:
        queries = [
            q.text[:1000]
            for n in ("toolbench_stable", "seal_tools")
            for q in load_queries(SHARED / n / "queries.jsonl")
        ]
    rng2 = random.Random(5)
    sample = [rng2.choice(queries) for _ in range(runs)]
    # The previous stage-1 rule (the first three skills scoring at least 0.4) beside the
    # adaptive default, so the cost of the rule is measured in the same run.
    variants = {
        "hierarchical": {"strategy": "hierarchical"},
        "hierarchical, three skills": {
            "strategy": "hierarchical", "skill_limit": 3, "skill_coverage": 1.0,
            "skill_threshold": 0.4,
        },
        "direct": {"strategy": "direct"},
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in variants}
    inner: dict[str, list[float]] = {name: [] for name in variants}
    for q in sample:
        for strategy, kw in variants.items():
            req = SearchRequest(q, include_schemas=True, **kw)  # type: ignore[arg-type]
            t = time.perf_counter()
            res = engine.find(req)
            times[strategy].append((time.perf_counter() - t) * 1000)
            inner[strategy].append(
                res.metadata["total_time_ms"] - res.metadata["query_embedding_time_ms"]
            )
    for s in times:
        print(
            f"{s}: p50 {percentile(times[s], 50):.1f} ms, p95 {percentile(times[s], 95):.1f} ms; "
            f"without embedding p50 {percentile(inner[s], 50):.1f}, "
            f"p95 {percentile(inner[s], 95):.1f}"
        )
    engine.close()


def main(argv: list[str]) -> Any:
    if not argv:
        raise SystemExit(__doc__)
    cmd, rest = argv[0], argv[1:]
    if cmd == "quality":
        return quality(rest or ["toolbench_stable", "seal_tools"])
    if cmd == "routing":
        return routing(rest)
    if cmd == "classify":
        return classify_report(rest[0] if rest else "livemcpbench")
    if cmd == "fitcost":
        return fit_cost(int(rest[0]) if rest else 10000)
    if cmd == "latency":
        parser = argparse.ArgumentParser(prog="skills.py latency")
        parser.add_argument("kind", nargs="?", choices=("short", "long"), default="long")
        parser.add_argument("--size", type=int, default=10000, help="tools in the index")
        parser.add_argument("--runs", type=int, default=300, help="queries timed")
        args = parser.parse_args(rest)
        return latency(args.size, args.runs, args.kind)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
