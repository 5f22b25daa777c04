"""The default search beside four same-model baselines on every set, with paired sign tests.

    python bench/ranking.py [--sets NAME ...] [--splits dev test] [--max-queries 400]

Systems, all on toolscout's active embedding model, one index per set:

* ``default`` — ``Engine.search`` (the public API, hybrid mode; the learned ranker re-scores
  the fused candidates unless the settings turn it off);
* ``learned`` — the same legs re-scored by the learned ranker (search/rank.py; ``--ranker DIR``
  measures a refit instead of the packaged one; the packaged one is ``default``'s);
* ``candidate`` — with ``--candidate DIR``: a refit that also reads extra features
  (bench/fit/ranker.py ``--extra``, bench/fit/peer_view.py), compared like ``learned``;
* ``fixed_fusion`` — the same legs in the hand-set adaptive fusion's order, no learned ranker
  (``learned_vs`` / ``default_vs`` against it: the learned ranker against the hand fusion);
* ``variant`` — with ``--variant KEY=VALUE ...``: the hand-set fusion with those
  ``SearchConfig`` fields changed (``variant_vs``: it against every other system);
* ``cosine`` — cosine over the peer text ``name + split name + server + category + description
  + parameter names and descriptions`` (bench/quality.py ``peer_text``), whole request;
* ``bm25s`` — bm25s (English stopwords, Snowball stemmer) over the same text;
* ``rrf`` — RRF (k = 60) of those two top-100 lists;
* ``weighted_rrf`` — the same with weights 0.3 (bm25s) and 0.7 (cosine).

For each set and split: hit@3 and nDCG@10 of every system, then ``default`` and ``learned``
each against every other system request by request (``learned_vs`` in the JSON report): on
how many requests one ranks a gold tool in the top 3 and the other does not (``+won/-lost``),
with the exact two-sided sign test's p-value; the same for nDCG@10 (a request counts where the
two differ). Last, how well the default's and the learned
ranker's scores are calibrated: the expected calibration error (10 equal-width bins) of the first
hit and of the first five, each beside its sampling floor (the error exact probabilities would
still show on that many hits; toolscout.eval.metrics ``sampling_floor``). And the time the
learned ranker takes to re-score 100 candidates.

Sets: bench/natural.py's (the ``dev`` / ``test`` splits of ``data/natural``, the paraphrase and
single-intent halves, ToolBench G1 as dev, Seal-Tools' ``dev`` split) and ``tooleyes_dev``
(every request dev; gold is at toolkit level, read hit@k). Indexes are kept in ``--db-dir``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "fit"))

from peer_view import PeerSearcher, build_views, load_extended

from natural import ROOT, SHARED, Dataset, Ranker, Request, datasets, load_requests, open_index
from quality import peers
from ranking_report import calibration_markdown, line, markdown, reliability_figure
from toolscout.engine import Engine
from toolscout.eval.metrics import (
    calibration_error,
    mean,
    reliability,
    sampling_floor,
    score_query,
    sign_test,
)
from toolscout.models import Scored, Tool
from toolscout.search.candidates import candidate
from toolscout.search.config import SearchConfig, WholeRequest
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rank import (
    REQUEST_COLUMNS,
    Legs,
    candidate_rows,
    copied_columns,
    load_ranker,
    rerank,
)
from toolscout.search.rank import Ranker as Learned

METRICS = ("hit@3", "ndcg@10")


#: The whole request's row of the ``learned`` system (``--whole``; SearchConfig.whole_request).
WHOLE: WholeRequest = SearchConfig().whole_request
#: How many fused candidates the ``learned`` system re-scores (``--rescore``; None: the legs'
#: depth, ``SearchConfig.candidates``, as the product does); the legs stay that deep.
RESCORE: int | None = None


def all_sets(natural: Path) -> dict[str, Dataset]:
    out = datasets(natural)
    out["tooleyes_dev"] = Dataset(
        "tooleyes_dev",
        SHARED / "tooleyes_dev" / "tools.jsonl",
        SHARED / "tooleyes_dev" / "queries.jsonl",
        lambda r: "dev",
    )
    return out


def systems(
    engine: Engine,
    tools: list[Tool],
    scores: dict[str, dict[str, list[float]]],
    ranker: Learned | None,
    candidate: Path | None = None,
    variant: dict[str, Any] | None = None,
) -> dict[str, Ranker]:
    """Every system of the module docstring, keyed by name (``default`` first); ``scores``
    receives the default's and the learned ranker's hit scores per request text."""
    config = engine.searcher.config
    fixed = HybridSearcher(engine.store, engine.embedder, replace(config, learned_ranker=False))
    changed = replace(config, learned_ranker=False, **(variant or {}))
    varied = HybridSearcher(engine.store, engine.embedder, changed)
    learned = HybridSearcher(
        engine.store,
        engine.embedder,
        replace(config, learned_ranker=True, whole_request=WHOLE),
        ranker=ranker,
    )
    if RESCORE is not None:
        learned.candidate_features = partial(shallow_features, learned, RESCORE)  # type: ignore[method-assign]
    peer = peers(engine, tools)
    # Each request's two peer lists are computed once and fused twice.
    bm25, cosine = lru_cache(4)(peer["peer_bm25s"]), lru_cache(4)(peer["peer_vector"])

    def rrf(q: str, weights: tuple[float, float]) -> list[str]:
        score: dict[str, float] = {}
        for run, weight in ((bm25(q), weights[0]), (cosine(q), weights[1])):
            for rank, tid in enumerate(run, 1):
                score[tid] = score.get(tid, 0.0) + weight / (60 + rank)
        return sorted(score, key=lambda t: (-score[t], t))

    def default(q: str) -> list[str]:
        hits = engine.search(q, limit=10).hits
        scores["default"][q] = [h.score for h in hits]
        return [h.tool.id for h in hits]

    def learned_order(q: str) -> list[str]:
        hits = learned.search(q, limit=10)
        scores["learned"][q] = [h.score for h in hits]
        return [h.id for h in hits]

    out: dict[str, Ranker] = {
        "default": default,
        "learned": learned_order,
        "fixed_fusion": lambda q: [r.id for r in fixed.search(q, limit=10)],
        "cosine": cosine,
        "bm25s": bm25,
        "rrf": lambda q: rrf(q, (1.0, 1.0)),
        "weighted_rrf": lambda q: rrf(q, (0.3, 0.7)),
    }
    if ranker is None:
        del out["learned"]
    if variant:
        out["variant"] = lambda q: [r.id for r in varied.search(q, limit=10)]
    if candidate is not None:
        out["candidate"] = candidate_system(engine, tools, scores, candidate)
    return out


def shallow_features(
    searcher: HybridSearcher, depth: int, legs: Legs, tokens: list[str], version: Any = None
) -> tuple[list[str], Any]:
    """``searcher.candidate_features`` for the first ``depth`` fused candidates only."""
    ids = [h.id for h in legs.fused[:depth]]
    return ids, candidate_rows(legs, ids, tokens, searcher.seen.get(ids, version, legs.tools))


def candidate_system(
    engine: Engine, tools: list[Tool], scores: dict[str, dict[str, list[float]]], folder: Path
) -> Ranker:
    """The refit in ``folder`` re-scoring the legs with its extra features."""
    model, groups = load_extended(folder)
    config = replace(engine.searcher.config, learned_ranker=True)
    searcher = PeerSearcher(engine.store, engine.embedder, config, ranker=model)
    searcher.views = build_views(
        tools, engine.embedder, ROOT / "bench" / "out" / "ranking" / "legs"
    )
    searcher.groups = groups

    def rank(q: str) -> list[str]:
        hits = searcher.search(q, limit=10)
        scores["candidate"][q] = [h.score for h in hits]
        return [h.id for h in hits]

    return rank


def compare(rows: dict[str, list[dict[str, float]]], me: str) -> dict[str, dict[str, Any]]:
    """System ``me`` against every other system, per metric: (won, lost, sign-test p)."""
    mine = rows[me]
    out: dict[str, dict[str, Any]] = {}
    for name, theirs in rows.items():
        if name == me:
            continue
        out[name] = {}
        for metric in METRICS:
            won, lost, p = sign_test([r[metric] for r in mine], [r[metric] for r in theirs])
            out[name][metric] = {"won": won, "lost": lost, "p": round(p, 4)}
    return out


def ece(pairs: list[tuple[float, bool]], bins: int = 10) -> float:
    """Expected calibration error: over equal-width score bins, the gap between mean score and
    share right, weighted by the bin's share of the pairs (toolscout.eval.metrics)."""
    return calibration_error(pairs, bins)


def calibration(
    reqs: list[Request], ids: dict[str, list[str]], scores: dict[str, list[float]]
) -> dict[str, float]:
    """ECE of a system's first hit and of its first five hits, each beside its sampling floor
    (the ECE exact probabilities would show on this many hits), the first hit's mean score and
    share right, and the reliability diagram's bins of each (lower edge, mean score, share
    right, hits)."""
    top1: list[tuple[float, bool]] = []
    top5: list[tuple[float, bool]] = []
    for r in reqs:
        for rank, (tid, s) in enumerate(zip(ids[r.id], scores[r.text], strict=False)):
            if rank == 0:
                top1.append((s, tid in r.gold))
            if rank < 5:
                top5.append((s, tid in r.gold))
    return {
        "ece_top1": round(ece(top1), 4),
        "ece_top5": round(ece(top5), 4),
        "floor_top1": round(sampling_floor([s for s, _ in top1]), 4),
        "floor_top5": round(sampling_floor([s for s, _ in top5]), 4),
        "mean_top1": round(sum(s for s, _ in top1) / max(1, len(top1)), 4),
        "right_top1": round(sum(r for _, r in top1) / max(1, len(top1)), 4),
        "bins_top1": [[lo, round(m, 4), round(r, 4), n] for lo, m, r, n in reliability(top1)],
        "bins_top5": [[lo, round(m, 4), round(r, 4), n] for lo, m, r, n in reliability(top5)],
    }


def run_set(
    ds: Dataset,
    requests: list[Request],
    db_dir: Path,
    ranker: Path | None = None,
    only: list[str] | None = None,
    candidate: Path | None = None,
    variant: dict[str, Any] | None = None,
) -> dict[str, Any]:
    engine, tools = open_index(db_dir / f"{ds.name}.db", ds.tools, ds.name)
    scores: dict[str, dict[str, list[float]]] = {"default": {}, "learned": {}, "candidate": {}}
    wanted = not only or "learned" in only
    learned = load_ranker(ranker) if wanted else None
    ranked = systems(engine, tools, scores, learned, candidate, variant)
    if only:
        kept = ("default", "candidate", "variant")
        ranked = {k: v for k, v in ranked.items() if k in kept or k in only}
    report: dict[str, Any] = {}
    for split in sorted({r.split for r in requests}):
        reqs = [r for r in requests if r.split == split]
        rows: dict[str, list[dict[str, float]]] = {}
        runs: dict[str, dict[str, list[str]]] = {}
        for name, rank in ranked.items():
            runs[name] = {r.id: rank(r.text)[:10] for r in reqs}
            rows[name] = [score_query(runs[name][r.id], r.gold) for r in reqs]
        means = {name: mean(v) for name, v in rows.items()}
        report[split] = {
            "requests": len(reqs),
            "systems": {n: {k: round(m[k], 4) for k in METRICS} for n, m in means.items()},
            "default_vs": compare(rows, "default"),
            "learned_vs": compare(rows, "learned") if "learned" in rows else {},
            "candidate_vs": compare(rows, "candidate") if "candidate" in rows else {},
            "variant_vs": compare(rows, "variant") if "variant" in rows else {},
            "calibration": {
                name: calibration(reqs, runs[name], scores[name])
                for name in ("default", "learned", "candidate")
                if name in runs
            },
        }
        print(line(ds.name, split, report[split]), flush=True)
    engine.close()
    return report


def rescore_ms(folder: Path | None, runs: int = 200) -> dict[str, float]:
    """Best and median milliseconds the ranker (the packaged one unless ``folder``) takes to
    re-score 100 candidates as a search does: their views taken from a dict built once (as the
    name table holds them), then their rows, the trees, the probabilities, the order and the
    re-scored hits (``candidate_rows`` and ``rerank``); the same with ``ranker.json``'s
    logistic map in place of its score map (``logistic_*``), timed in turns; and the score map
    alone, from the ranker's output and feature rows to probabilities (``scoremap_*``)."""
    ranker = load_ranker(folder)
    plain = replace(ranker, rankcal=None)
    hits = [Scored(f"t{i}", 0.8 - i / 200) for i in range(100)]
    legs = Legs(hits[:50], hits, hits, 1, 5000, hits)
    ids = [h.id for h in hits]
    seen = {tid: candidate(tid, f"tool {tid}", None) for tid in ids}
    took: dict[str, list[float]] = {"map": [], "logistic": [], "scoremap": []}
    for _ in range(runs):
        for name, which in (("map", ranker), ("logistic", plain)):
            t0 = time.perf_counter()
            x = candidate_rows(legs, ids, ["tool"], seen)
            rerank(which, legs, ids, x)
            took[name].append((time.perf_counter() - t0) * 1000)
        raw = ranker.scores(x, REQUEST_COLUMNS, copied_columns(legs))
        t0 = time.perf_counter()
        ranker.probabilities(raw, x)
        took["scoremap"].append((time.perf_counter() - t0) * 1000)
    out = {}
    for name, values in took.items():
        values.sort()
        prefix = {"map": "", "logistic": "logistic_"}.get(name, f"{name}_")
        out[f"{prefix}best"] = round(values[0], 3)
        out[f"{prefix}median"] = round(values[len(values) // 2], 3)
    return out


def config_value(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of a ``SearchConfig`` field, the value typed as the field's default is."""
    key, _, text = item.partition("=")
    default = getattr(SearchConfig(), key, None)
    if default is None:
        raise SystemExit(f"--variant {item}: SearchConfig has no field {key!r}")
    if isinstance(default, bool):
        return key, text.lower() in ("1", "true", "yes", "on")
    return key, type(default)(text)


def main() -> int:
    global WHOLE, RESCORE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sets = all_sets(ROOT / "data" / "natural")
    parser.add_argument("--sets", nargs="*", default=list(sets), choices=list(sets))
    parser.add_argument("--splits", nargs="+", default=["dev"], choices=["dev", "test"])
    parser.add_argument("--max-queries", type=int, default=400, help="per split; 0 = all")
    parser.add_argument("--db-dir", type=Path, default=ROOT / "bench" / "out" / "ranking" / "db")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "ranking")
    parser.add_argument(
        "--ranker", type=Path, default=None, help="measure this refit's folder as `learned`"
    )
    parser.add_argument(
        "--systems", nargs="*", default=None, help="only these systems beside `default`"
    )
    parser.add_argument(
        "--candidate", type=Path, default=None, help="a refit with extra features, as `candidate`"
    )  # a refit is compared quickly with `--splits dev --systems learned --ranker DIR`
    parser.add_argument(
        "--whole", choices=("embedded", "intents_mean"), default=WHOLE,
        help="the whole request's row of `learned` (a --ranker DIR fitted with the same --whole)",
    )  # fmt: skip
    parser.add_argument(
        "--variant", nargs="*", default=None, metavar="KEY=VALUE",
        help="SearchConfig fields: adds `variant`, the hand-set fusion with them changed",
    )  # fmt: skip
    parser.add_argument(
        "--rescore", type=int, default=None, metavar="N",
        help="`learned` re-scores only the first N fused candidates (the legs stay as deep)",
    )  # fmt: skip
    args = parser.parse_args()
    WHOLE, RESCORE = args.whole, args.rescore
    variant = dict(config_value(item) for item in args.variant or [])
    t0 = time.perf_counter()
    report: dict[str, Any] = {"sets": {}}
    for name in args.sets:
        ds = sets[name]
        if not ds.tools.is_file() or not ds.queries.is_file():
            print(f"{name}: not found ({ds.tools.parent}), skipped", flush=True)
            continue
        reqs = [r for r in load_requests(ds, args.max_queries) if r.split in args.splits]
        if reqs:
            report["sets"][name] = run_set(
                ds, reqs, args.db_dir, args.ranker, args.systems, args.candidate, variant
            )
    report["rescore_100_ms"] = rescore_ms(args.ranker)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ranking.json").write_text(json.dumps(report, indent=1))
    for system in ("default", "learned"):
        if any(system in sp.get("calibration", {}) for v in report["sets"].values()
               for sp in v.values()):  # fmt: skip
            figure = args.out / f"reliability_{system}.svg"
            figure.write_text(reliability_figure(report, system), encoding="utf-8")
    print(markdown(report))
    print(calibration_markdown(report))
    timing = report["rescore_100_ms"]
    print(
        f"re-scoring 100 candidates: {timing['best']} ms best, {timing['median']} ms median "
        f"(with ranker.json's logistic map instead: {timing['logistic_best']} / "
        f"{timing['logistic_median']} ms); the score map alone: {timing['scoremap_best']} / "
        f"{timing['scoremap_median']} ms"
    )
    print(f"{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
