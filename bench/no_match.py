"""``no_match`` per set and per catalog size: answerable requests flagged, no-match recall.

    python bench/no_match.py [--max-dev 300] [--sizes 100 500 5000] [--sets NAME ...]

The default search (``Engine.find``, default request) as served, with the packaged calibration.
Nothing is chosen here: ``no_match_below`` comes from ``bench/fit/calibrate.py`` (dev rows of
data/natural and tests/data); this script reports what it does.

* **Per set**: the share of answerable requests flagged on each dev set separately (paraphrase
  odd ids over LiveMCPBench, single-intent odd ids over the built-in catalog, the dev requests
  of MetaTool, Gorilla and BFCL over their whole catalogs, the multi-intent requests), and on
  ``tooleyes_dev`` (evaluation data: reported, never fitted); the no-match requests of
  tests/data/no_match (odd ids: dev; even ids: held out) over the catalogs they were written for.
* **Per catalog size** (100, 500, 5,000 tools): a catalog made of every other dev tool of
  MetaTool, Gorilla and BFCL (an even stride of them, at most half of it) and distractors (the
  training tools of data/natural, then ToolBench and Seal-Tools tools). Answerable: the dev
  requests whose gold tools are all in it; no-match: dev requests none of whose gold tools is
  (unanswerable by construction; a near-copy of a gold tool may still serve one, so the recall
  is a lower bound).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from natural import ROOT, SHARED, TESTS, _odd_dev, datasets, db_folder, load_requests, open_index
from toolscout.embed.base import DEFAULT_MODEL
from toolscout.engine import Engine
from toolscout.models import SearchRequest

SOURCES = ("metatool", "gorilla_apibench", "bfcl")


def flagged(engine: Engine, texts: list[str]) -> float:
    """Share of ``texts`` the default search marks ``no_match``."""
    if not texts:
        return float("nan")
    return sum(engine.find(SearchRequest(t[:1000])).no_match for t in texts) / len(texts)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


SETS = ("livemcp_paraphrase", "single_intent", *SOURCES, "no_match", "tooleyes_dev")


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
        for suffix in ("", "-wal", "-shm"):  # built fresh: a reused index keeps old tools
            (db / f"sized_{size}.db{suffix}").unlink(missing_ok=True)
        engine, _ = open_index(db / f"sized_{size}.db", path, f"sized_{size}", model)
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
    print("| set (requests) | answerable flagged | no-match flagged |\n|---|---|---|")
    for name, row in sets.items():
        a, n = row.get("answerable_flagged"), row.get("no_match_flagged")
        print(f"| {name} ({row['requests']}) | {'' if a is None else f'{100 * a:.1f} %'} | "
              f"{'' if n is None else f'{100 * n:.1f} %'} |")  # fmt: skip
    sizes = per_size(db, args.out, args.embed_model, args.sizes, args.max_dev)
    print("| catalog | answerable (flagged) | no-match (flagged) |\n|---|---|---|")
    for row in sizes.values():
        a, n = 100 * row["answerable_flagged"], 100 * row["no_match_flagged"]
        print(f"| {row['tools']} tools | {row['answerable']} ({a:.1f} %) "
              f"| {row['no_match']} ({n:.1f} %) |")  # fmt: skip
    report = {"sets": sets, "sizes": sizes, "seconds": round(time.perf_counter() - t0, 1)}
    (args.out / "no_match.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
