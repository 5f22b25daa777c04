"""Recall of the embedded HNSW vector leg (Qdrant Edge) against exact search, per shared set and
on a scale catalog.

    PYTHONPATH=src python bench/ann_recall.py sets [--sets NAME ...] [--ef 64 128 200]
    PYTHONPATH=src python bench/ann_recall.py scale --size 100000 [--queries 600] [--ef ...]
                                                    [--keep DIR] [--quality N]
    PYTHONPATH=src python bench/ann_recall.py clusters [--bases 1000] [--per-base 14 141]
                                                       [--m 16 32] [--ef 400 1600]

``sets``: each shared set's tools are indexed as the product indexes them (offline enrichment,
the default model, vectors from the cache) in a store whose HNSW leg answers from the first
tool. Two shard configurations are measured on the same index: the product's (below ~6,600
tools per segment Qdrant scans exactly, so small sets are answered exactly) and a forced one
(every segment gets a graph and every search, filtered or not, walks it), which is what recall
at scale depends on. livemcpbench has no queries of its own: the project's paraphrases of its
tasks (tests/data/livemcp_paraphrase) stand in. ``scale``: the bench/catalogs.py catalog of
``--size`` tools as bench/latency.py builds it (real tools embedded, variants with perturbed
vectors of their base), the product's configuration, queries from the three sets'
``queries.jsonl``; ``--quality N`` adds the default search's hit@3 and nDCG@10 over N queries
of each of those sets (their gold tools are the catalog's real tools) with each leg.
``clusters``: why recall falls at 1M. ``--bases`` real tool vectors, each with ``n - 1``
near-copies made as the scale catalogs make them (``--per-base``; the 100k catalog has ~14 tools
per real tool, the 1M catalog ~141), in the product's shard at each ``--m``: recall@10 against
exact search for the three sets' queries.

Each query runs twice on the same vectors: unfiltered, and restricted to the primary skill of
the exact top hit (a hierarchical search's filter). recall@10: the share of the exact top 10
(of a 100-candidate search, the hybrid search's depth) that the HNSW leg's top 10 holds;
recall@100 likewise over all 100. ``--quality`` adds the default search's nDCG@10 and hit@3
over every query of the set, with the exact leg and with the forced-graph HNSW leg on the same
index. No timing: these figures do not depend on load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.eval.run import load_queries
from toolscout.ingest.entries import parse_entry
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Filters, Loaded, Scored
from toolscout.store.sqlite import SQLiteStore
from toolscout.store.sqlite.ann import GraphParams

CACHE = str(Path.home() / ".cache" / "toolscout")
PARAPHRASES = Path(__file__).resolve().parents[1] / "tests/data/livemcp_paraphrase/queries.jsonl"
SETS = ("livemcpbench", "toolbench_stable", "seal_tools", "tooleyes_dev")
DEPTH = 100
FORCED = {"full_scan_kb": 1, "indexing_kb": 1}
#: Queries searched exactly at once.
EXACT_STEP = 50


def _open(tmp: str, name: str = "r.db") -> Engine:
    return Engine.open(
        Settings(
            db=f"sqlite:///{tmp}/{name}?ann_min_tools=0",
            cache_dir=CACHE,
            query_cache_size=0,
            result_cache_size=0,
        )
    )


def _queries(names: list[str], limit: int | None) -> list[str]:
    texts: list[str] = []
    for name in names:
        path = SHARED_BENCH / name / "queries.jsonl"
        if not path.is_file():  # livemcpbench ships tools only: the project's paraphrases
            path = PARAPHRASES
        texts += [q.text[:1000] for q in load_queries(path)]
    if limit is not None and len(texts) > limit:
        texts = random.Random(0).sample(texts, limit)
    return texts


def _skill_filters(store: SQLiteStore, exact: list[list[Scored]]) -> list[Filters | None]:
    out: list[Filters | None] = []
    for run in exact:
        rows = store.database.query(
            "SELECT skill_id FROM tool_skills WHERE tool_id=? ORDER BY is_primary DESC, "
            "confidence DESC LIMIT 1",
            (run[0].id,) if run else ("",),
        )
        out.append(Filters(skill_ids=[rows[0][0]]) if rows else None)
    return out


def _recall(approx: list[Scored], exact: list[Scored], k: int) -> float | None:
    want = {h.id for h in exact[:k]}
    if not want:
        return None
    return len(want & {h.id for h in approx[:k]}) / len(want)


def _measure(store: SQLiteStore, vectors: NDArray[np.float32], efs: list[int]) -> dict[str, Any]:
    """recall@10 and @100 per ef, unfiltered and skill-filtered, on the shard as built."""
    index = store.ann.current()
    assert index is not None, "the HNSW leg is not answering"
    points, indexed = index.counts()
    exact = [  # in steps: the score matrix of every query at once would be GBs at 1M tools
        run
        for start in range(0, len(vectors), EXACT_STEP)
        for run in store.vector_leg.nearest_many(vectors[start : start + EXACT_STEP], limit=DEPTH)
    ]
    filters = _skill_filters(store, exact)
    exact_f = [
        store.vector_leg.nearest_many(v[None, :], limit=DEPTH, filters=f)[0]
        for v, f in zip(vectors, filters, strict=True)
    ]
    row: dict[str, Any] = {"points": points, "in_graph": indexed}
    for ef in efs:
        index.graph = replace(index.graph, ef=ef)
        approx = store.ann.nearest_many(vectors, limit=DEPTH, filters=None)  # this index
        approx_f = [
            store.ann.nearest_many(v[None, :], limit=DEPTH, filters=f)[0]
            for v, f in zip(vectors, filters, strict=True)
        ]
        assert store.ann.current() is index, "the HNSW leg changed while measuring"
        cell: dict[str, float] = {}
        for label, got, want in (("", approx, exact), ("skill_", approx_f, exact_f)):
            for k in (10, 100):
                values = [_recall(a, e, k) for a, e in zip(got, want, strict=True)]
                kept = [v for v in values if v is not None]
                cell[f"{label}recall@{k}"] = round(float(np.mean(kept)), 4)
                if k == 10:
                    cell[f"{label}min@10"] = round(float(np.min(kept)), 2)
        row[f"ef={ef}"] = cell
    return row


def _size_mb(folder: Path) -> float:
    """Space allocated on disk (the shard's preallocated files are sparse)."""
    return round(sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


def _legs_quality(engine: Engine, folder: Path) -> dict[str, dict[str, float]]:
    """The default search's nDCG@10 and hit@3 over the queries in ``folder``, with the exact
    vector leg and with the HNSW leg, on the same index."""
    from toolscout.eval.run import evaluate

    out: dict[str, dict[str, float]] = {}
    for leg in ("exact", "ann"):
        engine.store.ann.enabled = leg == "ann"  # type: ignore[attr-defined]
        report = evaluate(engine, folder)
        out[leg] = {k: round(100 * report.overall[k], 2) for k in ("ndcg@10", "hit@3")}
    engine.store.ann.enabled = True  # type: ignore[attr-defined]
    return out


def _quality(engine: Engine, name: str) -> dict[str, dict[str, float]]:
    """The default search (hybrid, the engine's own embedding path) with the exact leg and with
    the forced-graph HNSW leg, on the same index: nDCG@10 and hit@3 over every query."""
    folder = SHARED_BENCH / name
    if not (folder / "queries.jsonl").is_file():
        folder = PARAPHRASES.parent
    return _legs_quality(engine, folder)


def _sample_set(name: str, limit: int, into: Path) -> Path:
    """A folder holding at most ``limit`` of the set's queries (a fixed sample)."""
    path = SHARED_BENCH / name / "queries.jsonl"
    if not path.is_file():
        path = PARAPHRASES
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(lines) > limit:
        lines = random.Random(0).sample(lines, limit)
    folder = into / name
    folder.mkdir()
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _scale_quality(engine: Engine, limit: int) -> dict[str, Any]:
    """The default search's hit@3 and nDCG@10 on the scale catalog, exact leg against HNSW leg:
    the sets' gold tools are the catalog's real tools, so this is what a user sees of the
    recall above."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in SETS[:3]:
            row = _legs_quality(engine, _sample_set(name, limit, Path(tmp)))
            out[name] = row
            print(json.dumps({"quality": {name: row}}), flush=True)
    return out


def sets_bench(
    names: list[str], efs: list[int], limit: int | None, quality: bool
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            engine = _open(tmp)
            engine.index([CatalogFile(SHARED_BENCH / name / "tools.jsonl", source=name).read()])
            store = engine.store
            assert isinstance(store, SQLiteStore)
            vectors = engine.embedder.embed_query(_queries([name], limit))
            row: dict[str, Any] = {"queries": len(vectors)}
            row["product"] = _measure(store, vectors, efs)
            store.ann.graph = replace(store.ann.graph, **FORCED)
            store.ann.rebuild()
            row["forced_graph"] = _measure(store, vectors, efs)
            if quality:
                row["quality"] = _quality(engine, name)
            engine.close()
        results[name] = row
        print(json.dumps({name: row}), flush=True)
    return results


def scale_bench(
    size: int, efs: list[int], limit: int, keep: Path | None, quality: int = 0
) -> dict[str, Any]:
    """``keep``: the index ``bench/latency.py search --keep`` keeps (``KEEP/<size>``), reused
    when complete, else built there."""
    from latency_index import KEPT, build_index

    with contextlib.ExitStack() as stack:
        if keep is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        else:
            folder = keep / str(size)
            folder.mkdir(parents=True, exist_ok=True)
        engine = _open(str(folder), "l.db" if keep is not None else "r.db")
        store = engine.store
        assert isinstance(store, SQLiteStore)
        store.ann.min_tools = 10**9  # the exact leg while the catalog is written
        if not (folder / KEPT).is_file():
            build_index(engine, size)
            if keep is not None:
                (folder / KEPT).write_text(str(size))
        store.ann.min_tools = 0
        store.ann.reset()
        store.ann.current()
        assert store.ann.wait_built(timeout=None)
        vectors = engine.embedder.embed_query(_queries(list(SETS[:3]), limit))
        row: dict[str, Any] = {"tools": store.count(), "queries": len(vectors)}
        row.update(_measure(store, vectors, efs))
        row["shard_mb"] = _size_mb(store.ann.folder)
        if quality:
            row["quality"] = _scale_quality(engine, quality)
        engine.close()
    print(json.dumps({size: row}), flush=True)
    return row


def _real_vectors() -> NDArray[np.float32]:
    """The real tools of the scale catalog's sets, embedded by the default model (cached)."""
    from catalogs import SETS as CATALOG_SETS
    from catalogs import load_real

    real = load_real(SHARED_BENCH, CATALOG_SETS)
    with tempfile.TemporaryDirectory() as tmp:
        engine = _open(tmp)
        engine.index([Loaded(source="bench", tools=[parse_entry(r, source="bench") for r in real])])
        ids = [str(r["id"]) for r in real]
        found = engine.store.vectors(ids)
        engine.close()
    return np.stack([found[i] for i in ids]).astype(np.float32)


def clusters_bench(
    bases: int, per_base: list[int], ms: list[int], efs: list[int], queries: int
) -> list[dict[str, Any]]:
    """HNSW recall on clusters of near-copies, the product's shard (GraphParams) but for ``m``:
    ``bases`` real tool vectors, each with ``n - 1`` variants made as bench/latency.py makes
    them (Gaussian noise, sigma 0.02 per dimension, renormalised), for each ``n`` in
    ``per_base``. The 100k catalog has ~14 tools per base and the 1M catalog ~141."""
    real = _real_vectors()
    rng = np.random.default_rng(0)
    centres = real[rng.choice(len(real), min(bases, len(real)), replace=False)]
    from toolscout.store.sqlite.ann.shard import EdgeIndex, Row

    engine_dir = tempfile.TemporaryDirectory()
    engine = _open(engine_dir.name)
    vectors = engine.embedder.embed_query(_queries(list(SETS[:3]), queries))
    engine.close()
    engine_dir.cleanup()
    rows_out: list[dict[str, Any]] = []
    for n in per_base:
        noise = rng.normal(0, 0.02, (n - 1, *centres.shape)).astype(np.float32)
        copies = centres[None, :, :] + noise
        copies /= np.linalg.norm(copies, axis=2, keepdims=True)
        points = np.concatenate([centres, copies.reshape(-1, centres.shape[1])])
        exact = np.argsort(-(vectors @ points.T), axis=1)[:, :10]
        for m in ms:
            graph = replace(GraphParams(), m=m)
            with tempfile.TemporaryDirectory() as tmp:
                index = EdgeIndex.create(
                    Path(tmp) / "s", epoch="b", dim=points.shape[1], graph=graph
                )
                step = 5000
                for start in range(0, len(points), step):
                    chunk = points[start : start + step]
                    index.apply(
                        [
                            Row(start + i + 1, str(start + i), None, None, "tool", [], v)
                            for i, v in enumerate(chunk)
                        ],
                        [],
                    )
                index.optimize()
                row: dict[str, Any] = {"points": len(points), "per_base": n, "m": m}
                for ef in efs:
                    index.graph = replace(graph, ef=ef)
                    found = index.nearest_many(
                        vectors, limit=10, filters=None, ids_of=lambda r: {i: str(i - 1) for i in r}
                    )
                    got = [{int(h.id) for h in run} for run in found]
                    recall = [
                        len(g & set(e.tolist())) / 10 for g, e in zip(got, exact, strict=True)
                    ]
                    row[f"recall@10 ef={ef}"] = round(float(np.mean(recall)), 4)
                index.close()
            rows_out.append(row)
            print(json.dumps({"clusters": row}), flush=True)
    return rows_out


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sets")
    s.add_argument("--sets", nargs="+", default=list(SETS))
    s.add_argument("--ef", nargs="+", type=int, default=[GraphParams().ef])
    s.add_argument("--queries", type=int, default=None, help="at most this many per set")
    s.add_argument(
        "--quality", action="store_true", help="also nDCG@10 / hit@3 with each leg (same index)"
    )
    c = sub.add_parser("scale")
    c.add_argument("--size", type=int, default=100_000)
    c.add_argument("--ef", nargs="+", type=int, default=[GraphParams().ef])
    c.add_argument("--queries", type=int, default=600)
    c.add_argument("--keep", type=Path, help="reuse (or keep) the index in KEEP/<size>")
    c.add_argument(
        "--quality",
        type=int,
        default=0,
        metavar="N",
        help="also hit@3 / nDCG@10 of N queries per set with each leg (same index)",
    )
    k = sub.add_parser("clusters")
    k.add_argument("--bases", type=int, default=1000)
    k.add_argument("--per-base", nargs="+", type=int, default=[14, 141])
    k.add_argument("--m", nargs="+", type=int, default=[GraphParams().m])
    k.add_argument("--ef", nargs="+", type=int, default=[GraphParams().ef])
    k.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.cmd == "clusters":
        clusters_bench(args.bases, args.per_base, args.m, args.ef, args.queries)
    elif args.cmd == "sets":
        sets_bench(args.sets, args.ef, args.queries, args.quality)
    else:
        scale_bench(args.size, args.ef, args.queries, args.keep, args.quality)
    return 0


if __name__ == "__main__":
    sys.exit(main())
