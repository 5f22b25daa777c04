"""``no_match`` per set and per catalog size: answerable requests flagged, no-match recall.

    python bench/no_match.py [--max-dev 300] [--sizes 100 500 5000] [--sets NAME ...]

The default search (``Engine.find``, default request) as served, with the packaged calibration,
once with the learned ranker off and once on (``no_match`` must not change with it), beside the
same run's baseline: the rule shipped before the request model learned from no-match rows (the
vector leg's closest cosine below 0.293: ``PREVIOUS_RULE_COSINE`` in ``bench/fit/answerable.py``).
Nothing is chosen here: ``no_match_below`` comes from ``bench/fit/calibrate.py`` (dev rows of
data/natural and tests/data); this script reports what it does.

* **Per set**: the share of answerable requests flagged on each dev set separately (paraphrase
  odd ids over LiveMCPBench, single-intent odd ids over the built-in catalog, the dev requests
  of MetaTool, Gorilla and BFCL over their whole catalogs, the multi-intent requests), and on
  ``tooleyes_dev`` (evaluation data: reported, never fitted); the no-match requests of
  tests/data/no_match (odd ids: dev; even ids: held out) over the catalogs they were written for;
  MetaTool's dev and test requests that need no tool (over its catalog) and whose own tool is
  not offered (over its catalog without that tool and its near-copies, a ``tool_ids`` filter).
* **Per catalog size** (100, 500, 5,000 tools): a catalog made of every other dev tool of
  MetaTool, Gorilla and BFCL (an even stride of them, at most half of it) and distractors (the
  training tools of data/natural, then ToolBench and Seal-Tools tools). Answerable: the dev
  requests whose gold tools are all in it; no-match: dev requests none of whose gold tools is
  (unanswerable by construction; a near-copy of a gold tool may still serve one, so the recall
  is a lower bound).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from natural import ROOT, SHARED, TESTS, _odd_dev, datasets, db_folder, load_requests, open_index
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.models import Filters, SearchRequest
from toolscout.search.rank import load_ranker

sys.path.insert(0, str(Path(__file__).resolve().parent / "fit"))
from answerable import PREVIOUS_RULE_COSINE, Catalog, no_match_requests

SOURCES = ("metatool", "gorilla_apibench", "bfcl")
#: The three judges each request is flagged by: the default search with the learned ranker off
#: and on, and the previous rule.
JUDGES = ("ranker off", "ranker on", "previous rule")


def flagged(
    engine: Engine, texts: list[str], within: list[tuple[str, ...] | None] | None = None
) -> dict[str, float]:
    """Share of ``texts`` each judge marks ``no_match`` (``within``: per request, the only
    tools it may return)."""
    if not texts:
        return dict.fromkeys(JUDGES, float("nan"))
    searcher = engine.searcher
    if searcher.ranker is None:
        searcher.ranker = load_ranker()
    scopes = within or [None] * len(texts)
    counts = dict.fromkeys(JUDGES, 0)
    for text, scope in zip(texts, scopes, strict=True):
        request = SearchRequest(text[:1000], tool_ids=scope)
        for judge, on in (("ranker off", False), ("ranker on", True)):
            searcher.config = replace(searcher.config, learned_ranker=on)
            counts[judge] += engine.find(request).no_match
        counts["previous rule"] += _closest(engine, text[:1000], scope) < PREVIOUS_RULE_COSINE
    searcher.config = replace(searcher.config, learned_ranker=False)
    return {judge: n / len(texts) for judge, n in counts.items()}


def _closest(engine: Engine, text: str, scope: tuple[str, ...] | None) -> float:
    """The vector leg's closest cosine (what the previous rule read)."""
    filters = Filters(tool_ids=scope) if scope is not None else None
    runs = engine.store.nearest_many(engine.searcher.embed_query(text), limit=1, filters=filters)
    return max((run[0].score for run in runs if run), default=-1.0)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


SETS = (
    "livemcp_paraphrase", "single_intent", *SOURCES, "no_match", "metatool_no_match",
    "tooleyes_dev",
)  # fmt: skip


def per_set(db: Path, model: str, max_dev: int, names: list[str]) -> dict[str, dict[str, Any]]:
    sets = datasets(ROOT / "data" / "natural")
    out: dict[str, dict[str, Any]] = {}
    for name in [n for n in names if n in sets]:
        ds = sets[name]
        texts = [r.text for r in load_requests(ds, max_dev) if r.split == "dev"]
        engine, _ = open_index(db / f"{name}.db", ds.tools, name, model)
        out[name] = {"requests": len(texts), "answerable_flagged": flagged(engine, texts)}
        engine.close()
    if "no_match" in names:
        out.update(no_match_sets(db, model))
    if "metatool_no_match" in names:
        out.update(metatool_no_match(db, model, max_dev))
    eyes = SHARED / "tooleyes_dev"
    if "tooleyes_dev" in names and eyes.is_dir():
        texts = [r["query"] for r in _lines(eyes / "queries.jsonl") if r.get("gold")]
        engine, _ = open_index(db / "tooleyes_dev.db", eyes / "tools.jsonl", "tooleyes_dev", model)
        out["tooleyes_dev (unseen)"] = {"requests": len(texts),
                                        "answerable_flagged": flagged(engine, texts)}  # fmt: skip
        engine.close()
    return out


def no_match_sets(db: Path, model: str) -> dict[str, dict[str, Any]]:
    """The multi-intent and no-match requests over the catalogs they were written for."""
    out: dict[str, dict[str, Any]] = {}
    nm, mi = (
        _lines(TESTS / "no_match" / "queries.jsonl"),
        _lines(TESTS / "multi_intent" / "queries.jsonl"),
    )
    catalogs = {
        "builtin": ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
        "livemcpbench": SHARED / "livemcpbench" / "tools.jsonl",
    }
    for name, path in catalogs.items():
        engine, _ = open_index(db / f"no_match_{name}.db", path, name, model)
        multi = [r["query"] for r in mi if r["group"] == name]
        out[f"multi_intent:{name}"] = {"requests": len(multi),
                                       "answerable_flagged": flagged(engine, multi)}  # fmt: skip
        for half in ("dev", "test"):
            texts = [r["query"] for r in nm if _odd_dev(r) == half]
            out[f"no_match {half}:{name}"] = {
                "requests": len(texts),
                "no_match_flagged": flagged(engine, texts),
            }
        engine.close()
    return out


def metatool_no_match(db: Path, model: str, max_dev: int) -> dict[str, dict[str, Any]]:
    """MetaTool's requests that need no tool, and those whose own tool is not offered (searched
    without it and its near-copies), dev and test splits (at most ``max_dev`` each)."""
    natural = ROOT / "data" / "natural"
    tools = natural / "metatool" / "tools.jsonl"
    engine, _ = open_index(db / "metatool.db", tools, "metatool", model)
    catalog = Catalog(engine, _lines(tools))
    out: dict[str, dict[str, Any]] = {}
    for split in ("dev", "test"):
        rows = no_match_requests(natural / "metatool_no_match" / "queries.jsonl", split)
        for group, found in rows.items():
            found = found[:: max(1, -(-len(found) // max_dev))]
            scopes: list[tuple[str, ...] | None] | None = None
            if group == "not_offered":
                scopes = [
                    tuple(t for t in catalog.ids if t not in catalog.near(r["absent"]))
                    for r in found
                ]
            out[f"metatool {group} {split}"] = {
                "requests": len(found),
                "no_match_flagged": flagged(engine, [r["query"] for r in found], scopes),
            }
    engine.close()
    return out


def sized_catalog(size: int) -> tuple[list[dict[str, Any]], list[tuple[str, tuple[str, ...]]]]:
    """The catalog of ``size`` tools (see the module docstring) and every dev request."""
    natural = ROOT / "data" / "natural"
    dev_tools, train_tools, requests = [], [], []
    for source in SOURCES:
        for row in _lines(natural / source / "tools.jsonl"):
            (dev_tools if row["split"] == "dev" else train_tools).append(row)
        rows = _lines(natural / source / "queries.jsonl")
        requests += [(r["query"], tuple(r["gold"])) for r in rows if r["split"] == "dev"]
    # Every other dev tool is never indexed, so each size has no-match requests; the rest
    # (an even stride of them, at most half the catalog) are.
    kept = dev_tools[::2]
    step = max(1, -(-len(kept) // (size // 2)))
    chosen = kept[::step][: size // 2]
    distractors = [t for t in train_tools if t["split"] == "train"]
    for name in ("toolbench_stable", "seal_tools"):
        distractors += _lines(SHARED / name / "tools.jsonl")
    fill = size - len(chosen)
    stride = max(1, len(distractors) // max(1, fill))
    catalog = chosen + distractors[::stride][:fill]
    if len(catalog) < size:
        taken = {t["id"] for t in catalog}
        catalog += [t for t in distractors if t["id"] not in taken][: size - len(catalog)]
    return catalog, requests


def per_size(db: Path, out: Path, model: str, sizes: list[int], max_dev: int) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for size in sizes:
        catalog, requests = sized_catalog(size)
        path = out / f"catalog_{size}.jsonl"
        path.write_text("".join(json.dumps(t) + "\n" for t in catalog), encoding="utf-8")
        ids = {t["id"] for t in catalog}
        answerable = [q for q, gold in requests if set(gold) <= ids]
        missing = [q for q, gold in requests if not set(gold) & ids]
        answerable = answerable[:: max(1, -(-len(answerable) // max_dev))]
        missing = missing[:: max(1, -(-len(missing) // max_dev))]
        # Built fresh unless the index was made from this very catalog (a reused index keeps
        # tools that a changed catalog no longer lists).
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        marker = db / f"sized_{size}.sha256"
        if not marker.exists() or marker.read_text() != digest:
            for suffix in ("", "-wal", "-shm"):
                (db / f"sized_{size}.db{suffix}").unlink(missing_ok=True)
            marker.unlink(missing_ok=True)
        engine, _ = open_index(db / f"sized_{size}.db", path, f"sized_{size}", model)
        marker.write_text(digest)
        report[str(size)] = {
            "tools": engine.store.count(),
            "answerable": len(answerable),
            "answerable_flagged": flagged(engine, answerable),
            "no_match": len(missing),
            "no_match_flagged": flagged(engine, missing),
        }
        engine.close()
        print(f"catalog {size}: {report[str(size)]}", flush=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-dev", type=int, default=300, help="requests per set")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 500, 5000])
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=SETS)
    parser.add_argument("--embed-model", default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "no_match")
    args = parser.parse_args()
    t0 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    db = db_folder(args.out / "db", args.embed_model)
    db.mkdir(parents=True, exist_ok=True)
    sets = per_set(db, args.embed_model, args.max_dev, args.sets)
    heads = " / ".join(JUDGES)
    print(f"answerable flagged / no-match flagged, {heads}")
    print(f"| set (requests) | answerable flagged: {heads} | no-match flagged: {heads} |")
    print("|---|---|---|")
    for name, row in sets.items():
        a, n = row.get("answerable_flagged"), row.get("no_match_flagged")
        print(f"| {name} ({row['requests']}) | {_pcts(a)} | {_pcts(n)} |")
    sizes = per_size(db, args.out, args.embed_model, args.sizes, args.max_dev)
    print(f"| catalog | answerable: {heads} | no-match: {heads} |\n|---|---|---|")
    for row in sizes.values():
        print(f"| {row['tools']} tools | {row['answerable']}: {_pcts(row['answerable_flagged'])} "
              f"| {row['no_match']}: {_pcts(row['no_match_flagged'])} |")  # fmt: skip
    report = {"sets": sets, "sizes": sizes, "seconds": round(time.perf_counter() - t0, 1)}
    (args.out / "no_match.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"{report['seconds']} s")
    return 0


def _pcts(shares: dict[str, float] | None) -> str:
    if shares is None:
        return ""
    return " / ".join(f"{100 * shares[judge]:.1f} %" for judge in JUDGES)


if __name__ == "__main__":
    sys.exit(main())
