"""Where the hand-set fusion loses first places that same-model RRF keeps, request by request.

    python bench/fusion_diagnosis.py [--sets tooleyes_dev metatool] [--split dev]
                                     [--max-queries 400] [--show 0]

For every request of a set's split, the default search (the hand-set adaptive fusion, no learned
ranker, as bench/ranking.py's ``fixed_fusion``) is traced stage by stage: the gold's best place
in the lexical leg (BM25 over the document's fields), in the vector leg (each intent embedded,
a tool keeps its best cosine), after the fusion, after the intent quotas and after the
exact-name rule (the answer). Beside it, the same-model baselines of bench/ranking.py over the
peer text (``cosine``, ``bm25s``, ``rrf``) and the default with one of its own rules changed:

* ``one_row`` — the request embedded whole, not split into intents (no quotas follow);
* ``no_quota`` — intents kept, their quotas off;
* ``no_exact`` — the exact-name rule off;
* ``whole_row`` — the vector leg also reads the whole request's row (its intents' rows
  averaged), a tool keeping its best cosine (``SearchConfig.whole_row``);
* ``rrf_legs`` — the product's two legs fused by RRF (k = 60) instead of the adaptive fusion;
* ``vector_leg`` / ``lexical_leg`` — one leg alone.

The requests the default misses at 3 and the set's best baseline (``--against``; by default
the baseline with the highest hit@3 on that split) hits are each given one cause, the first of
these that holds: a rule whose removal alone puts a gold tool in the top 3 (exact-name, quotas,
intent splitting, in that order; for a request of one intent, embedding it whole differs from
the default only by the final punctuation the splitter trims, and is counted apart); the
fusion, when one of the product's legs has a gold tool in its top 3 but the fused list does
not; otherwise the legs themselves (neither of the product's legs has it in its top 3), split
by whether the peer text's cosine or bm25s does. Every variant is also counted against the
default over the whole split (requests gained / lost at 3, sign test).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from natural import ROOT, Ranker, Request, load_requests, open_index
from quality import peers
from ranking import all_sets
from toolscout.engine import Engine
from toolscout.eval.metrics import sign_test
from toolscout.models import SearchMode
from toolscout.search.candidates import exact_name_first
from toolscout.search.fusion import (
    best_of_intents,
    fuse_legs,
    intent_owners,
    lexical_confidence,
    spread_intents,
)
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.text import query_tokens

LIMIT = 10
#: Rules of the default, each tried off alone, in the order a cause is assigned.
RULES = ("no_exact", "no_quota", "one_row")
#: The same-model baselines over the peer text (bench/ranking.py).
BASELINES = ("cosine", "bm25s", "rrf", "weighted_rrf")
#: The stages of the trace, in the order a search runs them.
STAGES = ("lexical", "vector", "fused", "quotas", "answer")


def place(ids: list[str], gold: set[str]) -> int | None:
    """The first place (1-based) of a gold tool in ``ids``, or None."""
    return next((k for k, tid in enumerate(ids, 1) if tid in gold), None)


def trace(searcher: HybridSearcher, text: str) -> dict[str, Any]:
    """The default search of ``text`` stage by stage (the order of ``HybridSearcher.rank``
    without a learned ranker or feedback): each stage's ids, the intents, the lexical weight."""
    cfg = searcher.config
    n = max(cfg.candidates, LIMIT)
    tokens = query_tokens(text)
    state = searcher.store.state()
    lexical = searcher._lexical(tokens, n, LIMIT, None, state)
    runs = searcher.store.nearest_many(searcher.embed_query(text), limit=n, state=state)
    vector = best_of_intents(runs, n)
    fused = fuse_legs(cfg, SearchMode.HYBRID, tokens, lexical, vector, state.tools)
    quotas = fused
    if cfg.intent_fusion and len(runs) > 1:
        quotas = spread_intents(fused, intent_owners(runs), len(runs), LIMIT)
    answer = exact_name_first(searcher.store.tools, text, quotas)
    return {
        "intents": len(runs),
        "lexical_weight": lexical_confidence(cfg, tokens, lexical, state.tools),
        "lexical": [h.id for h in lexical],
        "vector": [h.id for h in vector],
        "fused": [h.id for h in fused],
        "quotas": [h.id for h in quotas],
        "answer": [h.id for h in answer[:LIMIT]],
    }


def systems(engine: Engine, tools: list[Any]) -> dict[str, Ranker]:
    """The variants of the default and the peer-text baselines, keyed by name."""
    config = replace(engine.searcher.config, learned_ranker=False)

    def searcher(**change: Any) -> Ranker:
        s = HybridSearcher(engine.store, engine.embedder, replace(config, **change))
        return lambda q: [r.id for r in s.search(q, limit=LIMIT)]

    plain = HybridSearcher(engine.store, engine.embedder, config)
    peer = peers(engine, tools)
    return {
        "one_row": searcher(clause_split=False),
        "no_quota": searcher(intent_fusion=False),
        "no_exact": searcher(exact_name_boost=False),
        "whole_row": searcher(whole_row=True),
        "rrf_legs": searcher(fusion="rrf"),
        "vector_leg": lambda q: [
            r.id for r in plain.search(q, mode=SearchMode.VECTOR, limit=LIMIT)
        ],
        "lexical_leg": lambda q: [r.id for r in plain.search(q, mode=SearchMode.BM25, limit=LIMIT)],
        "cosine": peer["peer_vector"],
        "bm25s": peer["peer_bm25s"],
        "rrf": peer["peer_rrf"],
        "weighted_rrf": lambda q: weighted(peer, q),
    }


def weighted(peer: dict[str, Ranker], q: str) -> list[str]:
    """RRF (k = 60) of the peer bm25s (0.3) and cosine (0.7) lists, as bench/ranking.py's."""
    score: dict[str, float] = {}
    for run, weight in ((peer["peer_bm25s"](q), 0.3), (peer["peer_vector"](q), 0.7)):
        for rank, tid in enumerate(run, 1):
            score[tid] = score.get(tid, 0.0) + weight / (60 + rank)
    return sorted(score, key=lambda t: (-score[t], t))


def cause(row: dict[str, Any]) -> str:
    """The first cause that holds for a request the default misses at 3 and the baseline
    hits (module docstring)."""
    p = row["places"]
    for rule in RULES:
        if not _in3(p[rule]):
            continue
        if rule == "one_row" and row["intents"] == 1:
            # One intent: the only difference is the splitter's trim of the final punctuation.
            return "the text embedded (one intent, its final punctuation trimmed)"
        return {"no_exact": "exact-name rule", "no_quota": "intent quotas"}.get(
            rule, "intent splitting (several intents, one need)"
        )
    if _in3(p["lexical"]) or _in3(p["vector"]):
        return "fusion weights (a product leg has it, the fused list not)"
    if _in3(p["cosine"]) or _in3(p["bm25s"]):
        return "legs: the peer text's cosine or bm25s has it, the product's legs not"
    return "legs: only the baselines' fusion has it"


def _in3(k: int | None) -> bool:
    return k is not None and k <= 3


def diagnose(engine: Engine, tools: list[Any], reqs: list[Request]) -> list[dict[str, Any]]:
    """One row per request: the gold's place at every stage and in every system."""
    base = HybridSearcher(
        engine.store, engine.embedder, replace(engine.searcher.config, learned_ranker=False)
    )
    others = systems(engine, tools)
    rows: list[dict[str, Any]] = []
    for r in reqs:
        gold = set(r.gold)
        t = trace(base, r.text)
        served = [h.id for h in base.search(r.text, limit=LIMIT)]
        if served != t["answer"]:
            raise AssertionError(f"the trace differs from the search for {r.id!r}")
        places: dict[str, int | None] = {s: place(t[s], gold) for s in STAGES}
        for name, rank in others.items():
            found = rank(r.text)
            places[name] = place(found[: LIMIT if name in BASELINES else 100], gold)
        rows.append(
            {
                "id": r.id,
                "text": r.text,
                "intents": t["intents"],
                "lexical_weight": round(t["lexical_weight"], 3),
                "places": places,
                "default_top3": t["answer"][:3],
            }
        )
    return rows


def best_baseline(rows: list[dict[str, Any]]) -> str:
    """The baseline with the most requests hit at 3 (ties: the first of ``BASELINES``)."""
    return max(BASELINES, key=lambda b: sum(_in3(r["places"][b]) for r in rows))


def tally(rows: list[dict[str, Any]], variants: list[str], against: str) -> dict[str, Any]:
    """Causes over the default's losses and wins against the baseline ``against``; every
    variant against the default over the whole split."""
    lost = [r for r in rows if not _in3(r["places"]["answer"]) and _in3(r["places"][against])]
    won = [r for r in rows if _in3(r["places"]["answer"]) and not _in3(r["places"][against])]
    hit = [_in3(r["places"]["answer"]) for r in rows]
    versus: dict[str, dict[str, Any]] = {}
    for name in variants:
        theirs = [_in3(r["places"][name]) for r in rows]
        w, lo, p = sign_test([float(x) for x in theirs], [float(x) for x in hit])
        versus[name] = {"hit@3": round(100 * sum(theirs) / len(rows), 1), "won": w,
                         "lost": lo, "p": round(p, 4)}  # fmt: skip
    return {
        "requests": len(rows),
        "against": against,
        "default_hit@3": round(100 * sum(hit) / len(rows), 1),
        "lost": len(lost),
        "won": len(won),
        "causes_lost": dict(Counter(cause(r) for r in lost).most_common()),
        "lost_split_into_intents": sum(r["intents"] > 1 for r in lost),
        "won_split_into_intents": sum(r["intents"] > 1 for r in won),
        "lost_vector_leg_in3": sum(_in3(r["places"]["vector"]) for r in lost),
        "lost_lexical_leg_in3": sum(_in3(r["places"]["lexical"]) for r in lost),
        "lost_peer_cosine_in3": sum(_in3(r["places"]["cosine"]) for r in lost),
        "lost_peer_bm25s_in3": sum(_in3(r["places"]["bm25s"]) for r in lost),
        "lost_default_4_to_10": sum(r["places"]["answer"] is not None for r in lost),
        "lost_rows": lost,
        "variants_vs_default": versus,
    }


def markdown(report: dict[str, Any]) -> str:
    """The tally as two tables: causes per set, variants against the default per set."""
    sets = report["sets"]
    causes = sorted({c for s in sets.values() for c in s["causes_lost"]})
    heads = " | ".join(f"{n} (vs {s['against']})" for n, s in sets.items())
    lines = ["| cause of a first place the baseline keeps | " + heads + " |",
             "|---" * (len(sets) + 1) + "|"]  # fmt: skip
    for c in causes:
        lines.append(
            f"| {c} | " + " | ".join(str(s["causes_lost"].get(c, 0)) for s in sets.values()) + " |"
        )
    counts = " | ".join(f"{s['lost']} / {s['won']}" for s in sets.values())
    lines.append(f"| **lost to the baseline / won from it** | {counts} |")
    lines += ["", "| variant (hit@3, +won/-lost vs default, p) | " + " | ".join(sets) + " |",
              "|---" * (len(sets) + 1) + "|"]  # fmt: skip
    names = list(next(iter(sets.values()))["variants_vs_default"])
    lines.append("| default | " + " | ".join(str(s["default_hit@3"]) for s in sets.values()) + " |")
    for n in names:
        cells = []
        for s in sets.values():
            v = s["variants_vs_default"][n]
            cells.append(f"{v['hit@3']} (+{v['won']}/-{v['lost']}, {v['p']:.2g})")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sets = all_sets(ROOT / "data" / "natural")
    parser.add_argument(
        "--sets", nargs="+", default=["tooleyes_dev", "metatool"], choices=list(sets)
    )
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    parser.add_argument("--max-queries", type=int, default=400, help="per split; 0 = all")
    parser.add_argument("--db-dir", type=Path, default=ROOT / "bench" / "out" / "ranking" / "db")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "fusion_diagnosis")
    parser.add_argument(
        "--against", choices=BASELINES, default=None, help="the baseline (default: the best)"
    )
    parser.add_argument("--show", type=int, default=0, help="print this many lost requests per set")
    args = parser.parse_args()
    t0 = time.perf_counter()
    report: dict[str, Any] = {"sets": {}}
    for name in args.sets:
        ds = sets[name]
        if not ds.tools.is_file() or not ds.queries.is_file():
            print(f"{name}: not found ({ds.tools.parent}), skipped", flush=True)
            continue
        reqs = [r for r in load_requests(ds, args.max_queries) if r.split == args.split]
        if not reqs:
            continue
        engine, tools = open_index(args.db_dir / f"{name}.db", ds.tools, name)
        rows = diagnose(engine, tools, reqs)
        engine.close()
        variants = [k for k in rows[0]["places"] if k not in STAGES]
        report["sets"][name] = tally(rows, variants, args.against or best_baseline(rows))
        for row in report["sets"][name]["lost_rows"][: args.show]:
            print(json.dumps(row), flush=True)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "diagnosis.json").write_text(json.dumps(report, indent=1))
    if report["sets"]:
        print(markdown(report))
    print(f"{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
