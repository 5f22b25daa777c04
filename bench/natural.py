"""Natural requests: every leg, the default and two baselines per set, abstention and
multi-intent completeness, all in one run.

    python bench/natural.py [--sets NAME ...] [--max-queries 400] [--out bench/out/natural]

Per set and split (``dev``: what ranking and calibration choices were made on; ``test``: held
out), nDCG@10 and hit@3 of

* ``vector`` / ``bm25`` — toolscout's own legs (``--mode vector|bm25``);
* ``hybrid`` — the default search (the learned ranker); ``fusion`` — the hand-set fusion alone
  (``learned_ranker = false``); ``hybrid_3.0_0.5`` — that fusion with the lexical weight's
  logistic at midpoint 3.0 / slope 0.5 instead of the default 3.5 / 0.25;
* ``plain_cosine`` — cosine with the same model over ``name + split name + description +
  parameter names`` (whole query), the baseline a newcomer would write first;
* ``weighted_rrf`` — twenty lines anyone can write: bm25s (stemmed, English stopwords) and
  ``plain_cosine`` fused by weighted RRF (k = 60, lexical 0.5, vector 1.0);

and ``flagged``: the share of answerable requests the default marks ``no_match``. Then the
no-match requests (tests/data/no_match, odd ids dev, even ids held out) over the two catalogs
they were written for, and the multi-intent requests (tests/data/multi_intent): complete@5 of
the ``direct``, ``hierarchical`` and ``hybrid`` strategies, beside the same code with
sentences embedded apart and no per-intent share of the first places (``:sentences_no_quota``).

Sets: ``livemcp_paraphrase`` (tests/data, odd ids dev), ``single_intent`` (tests/data: short
requests for one tool of the built-in catalog, odd ids dev), ``metatool`` / ``gorilla_apibench`` /
``bfcl`` / ``toolalpaca`` (data/natural, split by tool; toolalpaca is test only),
``toolbench_stable`` (G1 groups dev, G2/G3 test) and ``seal_tools`` (``dev`` split dev).
Indexes are kept in ``--db-dir`` and reused; tool vectors come from the embedding cache.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

from shared_data import SHARED_BENCH
from toolscout.config import Settings
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.eval.metrics import mean, score_query
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import SearchMode, SearchRequest, Tool
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.text import split_identifier, split_sentences

ROOT = Path(__file__).resolve().parents[1]
SHARED = SHARED_BENCH
TESTS = ROOT / "tests" / "data"
Ranker = Callable[[str], list[str]]


@dataclass(frozen=True)
class Request:
    id: str
    text: str
    gold: tuple[str, ...]
    split: str
    group: str


@dataclass(frozen=True)
class Dataset:
    name: str
    tools: Path
    queries: Path
    split: Callable[[dict[str, Any]], str | None]


def _odd_dev(row: dict[str, Any]) -> str:
    return "dev" if int("".join(c for c in row["id"] if c.isdigit())) % 2 == 1 else "test"


def _natural_split(row: dict[str, Any]) -> str | None:
    split = row.get("split")
    return split if split in ("dev", "test") else None  # training requests are never scored


def datasets(natural: Path) -> dict[str, Dataset]:
    livemcp = SHARED / "livemcpbench" / "tools.jsonl"
    out = {
        "livemcp_paraphrase": Dataset(
            "livemcp_paraphrase", livemcp, TESTS / "livemcp_paraphrase" / "queries.jsonl", _odd_dev
        ),
        "single_intent": Dataset(
            "single_intent",
            ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
            TESTS / "single_intent" / "queries.jsonl",
            _odd_dev,
        ),
        "toolbench_stable": Dataset(
            "toolbench_stable",
            SHARED / "toolbench_stable" / "tools.jsonl",
            SHARED / "toolbench_stable" / "queries.jsonl",
            lambda r: "dev" if str(r.get("group", "")).startswith("G1") else "test",
        ),
        "seal_tools": Dataset(
            "seal_tools",
            SHARED / "seal_tools" / "tools.jsonl",
            SHARED / "seal_tools" / "queries.jsonl",
            lambda r: "dev" if r.get("split") == "dev" else "test",
        ),
    }
    for source in ("metatool", "gorilla_apibench", "bfcl", "toolalpaca"):
        out[source] = Dataset(
            source, natural / source / "tools.jsonl", natural / source / "queries.jsonl",
            _natural_split,
        )  # fmt: skip
    return out


def load_requests(ds: Dataset, max_per_split: int) -> list[Request]:
    """Every scored request, at most ``max_per_split`` per split (an even stride, so the
    selection is the same in every run)."""
    by_split: dict[str, list[Request]] = {}
    for line in ds.queries.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        split = ds.split(row)
        if split is None or not row.get("gold"):
            continue
        req = Request(str(row["id"]), str(row["query"])[:1000], tuple(row["gold"]), split,
                      str(row.get("group", "")))  # fmt: skip
        by_split.setdefault(split, []).append(req)
    out: list[Request] = []
    for reqs in by_split.values():
        step = max(1, -(-len(reqs) // max_per_split)) if max_per_split else 1
        out.extend(reqs[::step])
    return out


def plain_text(tool: Tool) -> str:
    """The newcomer's tool text: name, split name, description, parameter names."""
    return " ".join(
        [tool.name, " ".join(split_identifier(tool.name)), tool.description,
         " ".join(tool.parameter_names())]
    )  # fmt: skip


def baselines(engine: Engine, tools: list[Tool]) -> dict[str, Ranker]:
    """``plain_cosine`` and the twenty-line ``weighted_rrf`` (see the module docstring)."""
    ids = [t.id for t in tools]
    texts = [plain_text(t) for t in tools]
    matrix = engine.embedder.embed(texts)
    stemmer = Stemmer.Stemmer("english")
    lexical = bm25s.BM25()
    lexical.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
                  show_progress=False)  # fmt: skip

    def cosine(q: str) -> list[str]:
        sims = matrix @ engine.embedder.embed_query([q])[0]
        return [ids[i] for i in np.argsort(-sims, kind="stable")[:100]]

    def bm25(q: str) -> list[str]:
        toks = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        if not toks.vocab:
            return []
        docs, scores = lexical.retrieve(toks, k=min(100, len(ids)), show_progress=False)
        return [ids[d] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def weighted_rrf(q: str) -> list[str]:
        score: dict[str, float] = {}
        for run, weight in ((bm25(q), 0.5), (cosine(q), 1.0)):
            for rank, tid in enumerate(run, 1):
                score[tid] = score.get(tid, 0.0) + weight / (60 + rank)
        return sorted(score, key=lambda t: (-score[t], t))

    return {"plain_cosine": cosine, "weighted_rrf": weighted_rrf}


def db_folder(root: Path, embed_model: str) -> Path:
    """Indexes of one embedding model (an index refuses to open with another model)."""
    return root / "".join(c if c.isalnum() or c in "-_." else "_" for c in embed_model)


def open_index(
    db: Path, tools: Path, source: str, embed_model: str = DEFAULT_MODEL
) -> tuple[Engine, list[Tool]]:
    db.parent.mkdir(parents=True, exist_ok=True)
    engine = Engine.open(Settings(db=str(db), result_cache_size=0, embed_model=embed_model))
    loaded = CatalogFile(tools, source=source).read()
    engine.index([loaded])
    return engine, list(loaded.tools)


def flagged(engine: Engine, text: str) -> bool | None:
    """Whether the default search marks ``text`` ``no_match`` (None: this code cannot say)."""
    searcher = engine.searcher
    judge = getattr(searcher, "no_match", None)
    if judge is None:
        return None
    return bool(judge(searcher.search(text, limit=10)))


def run_set(
    ds: Dataset, requests: list[Request], db_dir: Path, model: str = DEFAULT_MODEL
) -> dict[str, Any]:
    engine, tools = open_index(db_dir / f"{ds.name}.db", ds.tools, ds.name, model)
    systems: dict[str, Ranker] = {
        mode: (lambda m: lambda q: [h.tool.id for h in engine.search(q, mode=m, limit=10).hits])(
            SearchMode(mode)
        )
        for mode in ("vector", "bm25", "hybrid")
    }
    hand = replace(engine.searcher.config, learned_ranker=False)
    fusion = HybridSearcher(engine.store, engine.embedder, hand)
    previous = HybridSearcher(
        engine.store, engine.embedder, replace(hand, evidence_midpoint=3.0, evidence_slope=0.5)
    )
    systems["fusion"] = lambda q: [r.id for r in fusion.search(q, limit=10)]
    systems["hybrid_3.0_0.5"] = lambda q: [r.id for r in previous.search(q, limit=10)]
    systems.update(baselines(engine, tools))
    report: dict[str, Any] = {}
    for split in sorted({r.split for r in requests}):
        reqs = [r for r in requests if r.split == split]
        row: dict[str, Any] = {"requests": len(reqs)}
        for name, rank in systems.items():
            m = mean([score_query(rank(r.text)[:10], r.gold) for r in reqs])
            row[name] = {"ndcg@10": m["ndcg@10"], "hit@3": m["hit@3"], "hit@1": m["hit@1"]}
        marks = [flagged(engine, r.text) for r in reqs]
        row["flagged"] = None if None in marks else sum(bool(x) for x in marks) / len(reqs)
        report[split] = row
        print(_line(ds.name, split, row), flush=True)
    previous.close()
    fusion.close()
    engine.close()
    return report


def _line(name: str, split: str, row: dict[str, Any]) -> str:
    cells = "  ".join(
        f"{k} {100 * v['hit@3']:5.1f}/{100 * v['ndcg@10']:5.1f}"
        for k, v in row.items()
        if isinstance(v, dict)
    )
    flag = "-" if row["flagged"] is None else f"{100 * row['flagged']:.1f}%"
    return f"{name:18s} {split:4s} n={row['requests']:4d}  {cells}  flagged {flag}"


def run_no_match(db_dir: Path, model: str = DEFAULT_MODEL) -> dict[str, Any]:
    rows = [json.loads(x) for x in (TESTS / "no_match" / "queries.jsonl").read_text().splitlines()]
    catalogs = {
        "builtin": ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
        "livemcpbench": SHARED / "livemcpbench" / "tools.jsonl",
    }
    report: dict[str, Any] = {}
    for name, path in catalogs.items():
        engine, _ = open_index(db_dir / f"no_match_{name}.db", path, name, model)
        for split in ("dev", "test"):
            part = [r for r in rows if _odd_dev(r) == split]
            marks = [flagged(engine, r["query"]) for r in part]
            if None in marks:
                report[f"{name}:{split}"] = None
                continue
            groups: dict[str, list[bool]] = {}
            for r, mark in zip(part, marks, strict=True):
                groups.setdefault(r["group"], []).append(bool(mark))
            report[f"{name}:{split}"] = {
                "requests": len(part),
                "flagged": sum(bool(x) for x in marks) / len(part),
                **{g: sum(v) / len(v) for g, v in sorted(groups.items())},
            }
            print(f"no_match {name:12s} {split}: {report[f'{name}:{split}']}", flush=True)
        engine.close()
    return report


def _sentences(query: str) -> list[str]:
    parts = split_sentences(query)
    return parts[:8] if len(parts) > 1 else [query]


def run_multi_intent(db_dir: Path, model: str = DEFAULT_MODEL) -> dict[str, Any]:
    rows = [
        json.loads(x) for x in (TESTS / "multi_intent" / "queries.jsonl").read_text().splitlines()
    ]
    catalogs = {
        "builtin": ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
        "livemcpbench": SHARED / "livemcpbench" / "tools.jsonl",
    }
    scores: dict[str, list[dict[str, float]]] = {}
    for name, path in catalogs.items():
        engine, _ = open_index(db_dir / f"no_match_{name}.db", path, name, model)
        searcher = engine.searcher
        default = searcher.config
        for variant in ("sentences_no_quota", "default"):
            if variant == "sentences_no_quota":
                # The baseline: sentences embedded apart, no per-intent share of the places.
                searcher.config = replace(default, intent_fusion=False)
                searcher.intents = _sentences  # type: ignore[method-assign]
            for strategy in ("direct", "hierarchical", "hybrid"):
                for r in (r for r in rows if r["group"] == name):
                    res = engine.find(SearchRequest(
                        r["query"], limit=5, tool_threshold=0.0, strategy=strategy
                    ))  # fmt: skip
                    got = [h.tool.id for h in res.tools]
                    key = strategy if variant == "default" else f"{strategy}:{variant}"
                    scores.setdefault(key, []).append(score_query(got, r["gold"]))
            searcher.config = default
            searcher.__dict__.pop("intents", None)
        engine.close()
    report = {}
    for strategy, rows_ in scores.items():
        m = mean(rows_)
        report[strategy] = {k: m[k] for k in ("complete@5", "hit@5", "recall@5")}
        print(f"multi_intent {strategy:12s} {report[strategy]}", flush=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="*", default=None, help="default: every set found")
    parser.add_argument("--natural", type=Path, default=ROOT / "data" / "natural")
    parser.add_argument("--max-queries", type=int, default=400, help="per split; 0 = all")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "natural")
    parser.add_argument("--db-dir", type=Path, default=None)
    parser.add_argument("--skip", nargs="*", default=[], choices=["no_match", "multi_intent"])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="embed_model of every index")
    args = parser.parse_args()
    db_dir = args.db_dir or db_folder(args.out / "db", args.model)
    all_sets = datasets(args.natural)
    names = args.sets if args.sets is not None else list(all_sets)
    t0 = time.perf_counter()
    report: dict[str, Any] = {"sets": {}}
    for name in names:
        ds = all_sets[name]
        if not ds.tools.is_file() or not ds.queries.is_file():
            print(f"{name}: not found ({ds.tools.parent}), skipped", flush=True)
            continue
        report["sets"][name] = run_set(ds, load_requests(ds, args.max_queries), db_dir, args.model)
    if "no_match" not in args.skip:
        report["no_match"] = run_no_match(db_dir, args.model)
    if "multi_intent" not in args.skip:
        report["multi_intent"] = run_multi_intent(db_dir, args.model)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "natural.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
