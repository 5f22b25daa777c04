"""The lexical leg at scale: the SQLite store's FTS5 beside tantivy, bm25s and Qdrant Edge sparse
vectors, on the same analysed field texts (how each treats the fields: bench/lexical_legs.py,
bench/lexical_impacts.py).

    python bench/lexical.py scale --sizes 10000 100000 [1000000] [--queries 200] [--limit 50]
    python bench/lexical.py quality [--sets NAME ...] [--max-queries 400]

``scale``: per catalog size (bench/catalogs.py: real tools, then server-fork variants, as the
latency benchmark builds them; each tool's fields are ``prepare(tool).fields``, no enrichment),
each leg's build time and index size on disk, then p50 / p95 of ``search(tokens, limit)`` for
short requests (tests/data/livemcp_paraphrase) and long ones (toolbench_stable, cut to 1,000
characters, as bench/latency.py), legs interleaved query by query so load hits each alike; the
process's peak RSS so far (every leg is held in memory or open at once, with the catalog).
``--limit`` defaults to the depth the hybrid search asks of the lexical leg
(``SearchConfig.lexical_candidates``). Congruence with FTS5 over the same queries (top-100
lists, untimed): mean overlap@10 and @100 of the id sets, and the mean Spearman rho of the
scores over the ids both returned.

``quality``: on each dev split (bench/natural.py's sets and ``tooleyes_dev``), the set indexed
as the engine indexes it (offline enrichment on: the legs get the very fields the store wrote),
then per leg hit@3 / nDCG@10 of its ``bm25`` mode and of the default (direct, hybrid) search
with that leg in place of FTS5, all in one run, FTS5 first.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalogs import build_catalog
from lexical_impacts import ImpactLeg, QdrantSparseLeg
from lexical_legs import BM25sLeg, Doc, FTS5Leg, Leg, PostingsLeg, TantivyLeg
from natural import ROOT, SHARED, Dataset, datasets, load_requests
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.metrics import mean, percentile, score_query
from toolscout.eval.run import load_queries
from toolscout.indexing import prepare
from toolscout.ingest.entries import parse_entry
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Filters, Scored, SearchMode
from toolscout.search.config import SearchConfig
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.text import query_tokens
from toolscout.store.base import IndexEntry

LEGS = ("fts5", "tantivy", "bm25s", "qdrant", "qdrant_exact", "impact", "postings")
CONGRUENCE_DEPTH = 100


def make_legs(names: Sequence[str]) -> list[Leg]:
    """Fresh legs by name (``fts5``, ``tantivy``, ``bm25s``, ``qdrant``, ``qdrant_exact``,
    ``impact``, ``postings``)."""
    kinds: dict[str, type[Any]] = {
        "fts5": FTS5Leg, "tantivy": TantivyLeg, "bm25s": BM25sLeg, "qdrant": QdrantSparseLeg,
        "impact": ImpactLeg, "postings": PostingsLeg,
    }  # fmt: skip
    return [QdrantSparseLeg(exact_idf=True) if n == "qdrant_exact" else kinds[n]() for n in names]


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(statistics.fmean(kept), 3) if kept else None


def catalog_docs(size: int) -> list[Doc]:
    out: list[Doc] = []
    for raw in build_catalog(size):
        raw.pop("variant_of", None)
        tool = parse_entry(raw, source="bench")
        out.append((tool, prepare(tool).fields))
    return out


def request_tokens() -> dict[str, list[list[str]]]:
    short = [q.text for q in load_queries(ROOT / "tests/data/livemcp_paraphrase/queries.jsonl")]
    long = [q.text[:1000] for q in load_queries(SHARED / "toolbench_stable/queries.jsonl")]
    return {
        kind: [t for t in (query_tokens(q) for q in pool) if t]
        for kind, pool in (("short", short), ("long", long))
    }


def _timed(legs: Sequence[Leg], queries: Sequence[list[str]], limit: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {leg.name: [] for leg in legs}
    for tokens in queries[:5]:
        for leg in legs:
            leg.search(tokens, limit)  # warm-up
    for tokens in queries:
        for leg in legs:
            t0 = time.perf_counter()
            leg.search(tokens, limit)
            times[leg.name].append((time.perf_counter() - t0) * 1000)
    return {
        name: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)}
        for name, v in times.items()
    }


def overlap(a: Sequence[Scored], b: Sequence[Scored], k: int) -> float | None:
    """Shared ids of the two top-``k`` lists over the longer list's length (None: both empty)."""
    x, y = {h.id for h in a[:k]}, {h.id for h in b[:k]}
    size = max(len(x), len(y))
    return len(x & y) / size if size else None


def spearman(a: Sequence[Scored], b: Sequence[Scored]) -> float | None:
    """Spearman's rho of the two legs' scores over the ids both returned (None: < 3 shared or
    a constant list)."""
    sa, sb = {h.id: h.score for h in a}, {h.id: h.score for h in b}
    shared = sorted(sa.keys() & sb.keys())
    if len(shared) < 3:
        return None
    ra = _ranks([sa[i] for i in shared])
    rb = _ranks([sb[i] for i in shared])
    if ra.std() == 0 or rb.std() == 0:
        return None
    value = float(np.corrcoef(ra, rb)[0, 1])
    return None if math.isnan(value) else value


def _ranks(values: Sequence[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Ranks with ties averaged."""
    arr = np.asarray(values, dtype=np.float64)
    order = np.argsort(arr, kind="stable")
    ranks = np.empty(len(arr))
    ranks[order] = np.arange(len(arr), dtype=np.float64)
    for value in np.unique(arr):
        same = arr == value
        ranks[same] = ranks[same].mean()
    return ranks


def congruence(legs: Sequence[Leg], queries: Sequence[list[str]]) -> dict[str, Any]:
    """Each leg's agreement with the first (FTS5) over ``queries``."""
    base = [legs[0].search(q, CONGRUENCE_DEPTH) for q in queries]
    out: dict[str, Any] = {}
    for leg in legs[1:]:
        runs = [leg.search(q, CONGRUENCE_DEPTH) for q in queries]
        out[leg.name] = {
            "overlap@10": _mean([overlap(a, b, 10) for a, b in zip(base, runs, strict=True)]),
            "overlap@100": _mean([overlap(a, b, 100) for a, b in zip(base, runs, strict=True)]),
            "spearman": _mean([spearman(a, b) for a, b in zip(base, runs, strict=True)]),
        }
    return out


def scale_bench(sizes: list[int], n: int, limit: int, names: Sequence[str]) -> dict[str, Any]:
    pools = request_tokens()
    rng = random.Random(0)
    results: dict[str, Any] = {}
    for size in sizes:
        docs = catalog_docs(size)
        row: dict[str, Any] = {"tools": len(docs), "limit": limit, "build_s": {}, "disk_mb": {}}
        row["facts"] = {}
        legs = make_legs(names)
        with tempfile.TemporaryDirectory() as tmp:
            for leg in legs:
                t0 = time.perf_counter()
                leg.build(docs, SearchConfig().field_weights, Path(tmp))
                row["build_s"][leg.name] = round(time.perf_counter() - t0, 1)
                row["disk_mb"][leg.name] = round(leg.size_bytes() / 2**20, 1)
                row["facts"][leg.name] = leg.facts()
            for kind, pool in pools.items():
                qs = [rng.choice(pool) for _ in range(n if kind == "short" else max(1, n // 2))]
                # Untimed first: every leg has read each query's postings (mmap-backed legs
                # would otherwise pay page faults inside the timed pass).
                row[f"congruence_{kind}"] = congruence(legs, qs)
                row[kind] = _timed(legs, qs, limit)
            for leg in legs:
                leg.close()
        row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        results[str(size)] = row
        print(json.dumps({size: row}), flush=True)
    return results


class SwappedStore:
    """A store whose lexical leg is ``leg``; everything the hybrid search asks otherwise goes
    to ``store``."""

    parallel_reads = False

    def __init__(self, store: Any, leg: Leg) -> None:
        self.store, self.leg = store, leg

    def lexical(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        filters: Filters | None = None,
        weights: Sequence[float] | None = None,
        state: Any = None,
    ) -> list[Scored]:
        if filters is not None and not filters.is_empty():
            raise ValueError("the compared legs take no filters; run the search without them")
        return self.leg.search(tokens, limit)

    def count(self, filters: Filters | None = None, *, at: Any = None) -> int:
        return int(self.store.count(filters, at=at))

    def state(self) -> Any:
        return self.store.state()

    def nearest_many(
        self, vectors: Any, *, limit: int, filters: Filters | None = None, state: Any = None
    ) -> Any:
        return self.store.nearest_many(vectors, limit=limit, filters=filters, state=state)

    @property
    def tools(self) -> Any:
        return self.store.tools


def indexed(ds: Dataset, folder: Path) -> tuple[Engine, list[Doc]]:
    """The set indexed by the engine, and the fields the store was given for each tool."""
    engine = Engine.open(Settings(db=str(folder / f"{ds.name}.db"), result_cache_size=0))
    written: dict[str, Doc] = {}
    upsert = engine.store.upsert

    def recording(entries: Sequence[IndexEntry]) -> None:
        upsert(entries)
        written.update((e.tool.id, (e.tool, dict(e.fields))) for e in entries)

    engine.store.upsert = recording  # type: ignore[method-assign]
    engine.index([CatalogFile(ds.tools, source=ds.name).read()])
    engine.store.upsert = upsert  # type: ignore[method-assign]
    if len(written) != engine.store.count():
        raise RuntimeError(
            f"{ds.name}: {engine.store.count()} tools indexed but {len(written)} seen written; "
            "the legs would not get the store's fields"
        )
    return engine, [written[k] for k in sorted(written)]


def _scores(runs: Mapping[str, list[str]], gold: Mapping[str, Sequence[str]]) -> dict[str, float]:
    m = mean([score_query(runs[q][:10], gold[q]) for q in runs])
    return {"hit@3": round(100 * m["hit@3"], 1), "ndcg@10": round(100 * m["ndcg@10"], 1)}


def quality_set(ds: Dataset, max_queries: int, names: Sequence[str]) -> dict[str, Any]:
    requests = [r for r in load_requests(ds, max_queries) if r.split == "dev"]
    gold = {r.id: r.gold for r in requests}
    out: dict[str, Any] = {"requests": len(requests)}
    with tempfile.TemporaryDirectory() as tmp:
        engine, docs = indexed(ds, Path(tmp))
        config = engine.searcher.config
        vectors = {r.id: engine.searcher.embed_query(r.text) for r in requests}
        fts5 = FTS5Leg(engine.store)
        fts5.weights = config.field_weights
        legs: list[Leg] = [fts5, *make_legs([n for n in names if n != "fts5"])]
        for leg in legs[1:]:
            leg.build(docs, config.field_weights, Path(tmp) / "legs")
        tokens = [t for t in (query_tokens(r.text) for r in requests) if t]
        out["congruence"] = congruence(legs, tokens)
        for leg in legs:
            searcher = HybridSearcher(SwappedStore(engine.store, leg), engine.embedder, config)
            row = {}
            for mode in (SearchMode.BM25, SearchMode.HYBRID):
                runs = {
                    r.id: [
                        h.id
                        for h in searcher.search(
                            r.text, mode=mode, limit=10, query_vectors=vectors[r.id]
                        )
                    ]
                    for r in requests
                }
                row[mode.value] = _scores(runs, gold)
            out[leg.name] = row
            searcher.close()
            if leg is not fts5:
                leg.close()
        engine.close()
    return out


def quality_bench(sets: Sequence[str] | None, max_queries: int, names: Sequence[str]) -> Any:
    found = datasets(ROOT / "data" / "natural")
    found["tooleyes_dev"] = Dataset(
        "tooleyes_dev",
        SHARED / "tooleyes_dev" / "tools.jsonl",
        SHARED / "tooleyes_dev" / "queries.jsonl",
        lambda r: "dev",
    )
    report: dict[str, Any] = {}
    for name in sets if sets is not None else [s for s in found if s != "toolalpaca"]:
        ds = found[name]
        if not ds.tools.is_file() or not ds.queries.is_file():
            print(f"{name}: not found, skipped", flush=True)
            continue
        report[name] = quality_set(ds, max_queries, names)
        print(json.dumps({name: report[name]}), flush=True)
    _print_table(report, names)
    return report


def _print_table(report: Mapping[str, Any], names: Sequence[str]) -> None:
    print("| set (dev requests) | leg | bm25 hit@3 / nDCG@10 | hybrid hit@3 / nDCG@10 |")
    print("|---|---|---|---|")
    for name, row in report.items():
        for leg in names:
            if leg not in row:
                continue
            b, h = row[leg]["bm25"], row[leg]["hybrid"]
            print(
                f"| {name} ({row['requests']}) | {leg} | {b['hit@3']} / {b['ndcg@10']} "
                f"| {h['hit@3']} / {h['ndcg@10']} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scale")
    s.add_argument("--sizes", nargs="+", type=int, default=[10000, 100000])
    s.add_argument("--queries", type=int, default=200, help="short requests; long: half")
    s.add_argument("--limit", type=int, default=SearchConfig().lexical_candidates)
    q = sub.add_parser("quality")
    q.add_argument("--sets", nargs="*", default=None, help="default: every dev set found")
    q.add_argument("--max-queries", type=int, default=400, help="per split; 0 = all")
    for p in (s, q):
        p.add_argument("--legs", nargs="+", default=list(LEGS), choices=LEGS)
        p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "lexical")
    args = parser.parse_args()
    names = ["fts5", *[n for n in args.legs if n != "fts5"]]
    if args.cmd == "scale":
        report = scale_bench(args.sizes, args.queries, args.limit, names)
    else:
        report = quality_bench(args.sets, args.max_queries, names)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.cmd}.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
