"""The rows bench/fit/calibrate.py fits on and the dev evidence it chooses on (its steps 1
and 3; its docstring says which requests and catalogs).

:func:`collect_training` searches the **training** requests of data/natural: hit rows per search
mode (:func:`training_rows`) and the labelled request rows of bench/fit/answerable.py.
:func:`collect_dev` measures every dev set over its catalog with any ``measure`` (the request
model's evidence here, :func:`dev_evidence`), the held-out halves beside them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import replace
from functools import reduce
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from answerable import (
    Catalog,
    Evidences,
    Row,
    catalog_rows,
    labelled,
    natural_index,
    no_match_requests,
    not_offered,
    seeded_sample,
    sized,
    unanswerable,
)

from natural import ROOT, SHARED, TESTS, _odd_dev, load_requests, open_index
from toolscout.engine import Engine
from toolscout.models import Ranked, SearchMode
from toolscout.search.calibration import embedder_identity
from toolscout.search.evidence import MODE_FEATURES, Evidence, RequestEvidence, request_evidence

MODES = ("hybrid", "vector", "bm25")
TRAIN_SOURCES = ("metatool", "gorilla_apibench", "bfcl")
#: The sizes of the training-pool catalogs request rows are labelled over (0: the whole pool).
TRAIN_SIZES = (100, 500, 0)


def sample(items: list[Any], limit: int) -> list[Any]:
    step = max(1, -(-len(items) // limit)) if limit else 1
    return items[::step]


def train_requests(path: Path, limit: int) -> list[tuple[str, tuple[str, ...]]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    train = [(r["query"][:1000], tuple(r["gold"])) for r in rows if r.get("split") == "train"]
    return sample(train, limit)


Rows = dict[str, list[tuple[list[float], float]]]
Found = dict[SearchMode, list[tuple[Ranked, Evidence]]]
T = TypeVar("T")


def training_rows(engine: Engine, requests: list[tuple[str, tuple[str, ...]]]) -> Rows:
    """Hit rows per mode: the top 10 over the whole catalog (gold hits positive), and the top
    10 once the gold tools are taken out (all negative; each hit's relative score is re-based
    on the best remaining hit, as if the gold tools were not indexed)."""
    rows: dict[str, list[tuple[list[float], float]]] = {m: [] for m in MODES}
    # The hand-set fusion's own hits: these rows fit its scores (the learned ranker, on by
    # default, orders and scores hits through its own map, search/rankcal.py).
    engine.searcher.config = replace(engine.searcher.config, learned_ranker=False)
    for text, gold in requests:
        gold_set = set(gold)
        searched: Found = {
            SearchMode(mode): engine.searcher.search_evidence(
                text, mode=SearchMode(mode), limit=10 + len(gold_set)
            )
            for mode in MODES
        }
        for mode in MODES:
            names = MODE_FEATURES[mode]
            found = searched[SearchMode(mode)]
            for ranked, ev in found[:10]:
                rows[mode].append((ev.values(names), float(ranked.id in gold_set)))
            rest = [ev for ranked, ev in found if ranked.id not in gold_set][:10]
            top = max((ev.relative for ev in rest), default=0.0)
            for ev in rest:
                rebased = replace(ev, relative=ev.relative / top if top > 0 else 0.0)
                rows[mode].append((rebased.values(names), 0.0))
    return rows


def dev_evidence(engine: Engine, texts: list[str]) -> Evidences:
    """Per request: what the request model reads over the whole index, as a search computes
    it (None: no hit)."""
    out: list[RequestEvidence | None] = []
    for text in texts:
        legs, _ = engine.searcher.legs(text)
        out.append(request_evidence(legs.lexical, legs.vector, legs.tools))
    return {"request": out}


def collect_training(
    sets: dict[str, Any], db_dir: Path, model: str, args: argparse.Namespace
) -> tuple[Rows, list[Row], str, str | None]:
    """Step 1's rows: hit rows per mode, request rows, and the model's name and digest."""
    rows: Rows = {m: [] for m in MODES}
    request_rows: list[Row] = []
    embedder, digest = "", None
    requests = {src: train_requests(sets[src].queries, args.max_train) for src in TRAIN_SOURCES}
    no_match = no_match_requests(args.natural / "metatool_no_match" / "queries.jsonl", "train")
    no_tool = [r["query"] for r in no_match["no_tool"]]
    for source in TRAIN_SOURCES:
        ds = sets[source]
        engine, _ = open_index(db_dir / f"{source}.db", ds.tools, source, model)
        embedder, digest = embedder_identity(engine.embedder)
        reqs = requests[source]
        for mode, part in training_rows(engine, reqs).items():
            rows[mode].extend(part)
        cat = Catalog(engine, catalog_rows(ds.tools))
        request_rows += labelled(cat, reqs, source)
        copies = [len(cat.near(gold)) - len(set(gold)) for _, gold in reqs]
        print(f"{source}: near-copies of the gold tools, mean {np.mean(copies):.2f}; "
              f"{np.mean([c > 0 for c in copies]):.1%} of the requests have one")  # fmt: skip
        foreign = [
            text
            for other in TRAIN_SOURCES
            if other != source
            for text, _ in sample(requests[other], args.max_foreign)
        ]
        request_rows += unanswerable(cat, foreign, f"{source}:foreign")
        request_rows += unanswerable(cat, no_tool, f"{source}:metatool no_tool")
        if source == "metatool":
            request_rows += not_offered(cat, no_match["not_offered"])
        print(f"{source}: {len(reqs)} training requests, {len(foreign)} foreign", flush=True)
        engine.close()
    engine, pool_rows = natural_index(args.natural, db_dir, model)
    cat = Catalog(engine, pool_rows)
    pool = [str(t["id"]) for t in pool_rows if t.get("split") == "train"]
    every = [r for src in TRAIN_SOURCES for r in sample(requests[src], args.max_sized)]
    request_rows += sized(cat, every, pool, TRAIN_SIZES, "training pool")
    for text in no_tool:  # each request embedded once: its catalogs one after the other
        for size in TRAIN_SIZES:
            within = seeded_sample(pool, size or len(pool), f"{size}\x00{text}", [])
            request_rows += unanswerable(cat, [text], f"pool@{size}:no_tool", within)
    engine.close()
    print(f"request rows: {len(request_rows)}, {int(sum(r[1] for r in request_rows))} answerable")
    return rows, request_rows, embedder, digest


def collect_dev(
    sets: dict[str, Any],
    db_dir: Path,
    model: str,
    max_dev: int,
    measure: Callable[[Engine, list[str]], T],
    merge: Callable[[T, T], T],
) -> tuple[dict[str, T], T, T, T]:
    """Step 3's requests, each list of them measured over its catalog by ``measure``: per
    answerable dev set, the no-match requests' dev (odd ids) and held-out (even ids) halves
    over both catalogs (joined by ``merge``), and the held-out half of the single-intent
    requests over the built-in catalog (answerable; reported only)."""
    answerable: dict[str, T] = {}
    for name in ["livemcp_paraphrase", *TRAIN_SOURCES]:
        ds = sets[name]
        reqs = [r for r in load_requests(ds, max_dev) if r.split == "dev"]
        engine, _ = open_index(db_dir / f"{name}.db", ds.tools, name, model)
        answerable[name] = measure(engine, [r.text for r in reqs])
        engine.close()
    catalogs = {
        "builtin": ROOT / "src" / "toolscout" / "data" / "starter_catalog.json",
        "livemcpbench": SHARED / "livemcpbench" / "tools.jsonl",
    }
    nm_rows, mi_rows, si_rows = (
        [json.loads(x) for x in (TESTS / name / "queries.jsonl").read_text().splitlines()]
        for name in ("no_match", "multi_intent", "single_intent")
    )
    dev: list[T] = []
    held_out: list[T] = []
    for name, path in catalogs.items():
        engine, _ = open_index(db_dir / f"no_match_{name}.db", path, name, model)
        dev.append(measure(engine, [r["query"] for r in nm_rows if _odd_dev(r) == "dev"]))
        held_out.append(measure(engine, [r["query"] for r in nm_rows if _odd_dev(r) == "test"]))
        answerable[f"multi_intent:{name}"] = measure(
            engine, [r["query"] for r in mi_rows if r["group"] == name]
        )
        if name == "builtin":
            single = {split: [r["query"] for r in si_rows if _odd_dev(r) == split]
                      for split in ("dev", "test")}  # fmt: skip
            answerable["single_intent"] = measure(engine, single["dev"])
            single_held = measure(engine, single["test"])
        engine.close()
    return answerable, reduce(merge, dev), reduce(merge, held_out), single_held


def joined(a: Evidences, b: Evidences) -> Evidences:
    return {key: a[key] + b[key] for key in a}
