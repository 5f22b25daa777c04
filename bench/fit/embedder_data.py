"""The training and dev data of bench/fit/train_embedder.py (data/natural, see its docstring).

Training requests and tools come from the ``train`` splits only; the dev sets, which choose the
model, from the ``dev`` splits and the paraphrase set's dev half. Test splits are never read.
:func:`batches` builds batches in which no tool appears twice, as positive or as negative.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shared_data import SHARED_BENCH
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Tool
from toolscout.search.document import embed_text

ROOT = Path(__file__).resolve().parents[2]
NATURAL = ROOT / "data" / "natural"
SHARED = SHARED_BENCH
TRAIN_SOURCES = ("metatool", "gorilla_apibench", "bfcl")
#: One dev set: its name, its catalog and its (request, gold tool ids) rows.
DevSet = tuple[str, list[Tool], list[tuple[str, list[str]]]]


@dataclass
class Pair:
    query: str
    tool: str  # tool id
    source: str
    negative: str | None = None


def load_source(name: str) -> tuple[dict[str, Tool], dict[str, str], list[dict[str, Any]]]:
    """(tools by id, split by tool id, query rows) of one data/natural source."""
    path = NATURAL / name / "tools.jsonl"
    loaded = CatalogFile(path, source=name).read()
    splits = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        splits[row["id"]] = row["split"]
    queries = [json.loads(x) for x in (NATURAL / name / "queries.jsonl").read_text().splitlines()]
    return {t.id: t for t in loaded.tools}, splits, queries


def dev_sets(rng: random.Random, per_set: int) -> list[DevSet]:
    sets = []
    for name in TRAIN_SOURCES:
        tools, _, queries = load_source(name)
        dev = [(q["query"], q["gold"]) for q in queries if q["split"] == "dev"]
        rng.shuffle(dev)
        _, splits, _ = load_source(name)
        catalog_tools = [t for t in tools.values() if name == "metatool" or splits[t.id] == "dev"]
        sets.append((name, catalog_tools, dev[:per_set]))
    split = json.loads((NATURAL / "livemcp_paraphrase_split.json").read_text())
    catalog = SHARED / "livemcpbench" / "tools.jsonl"
    if catalog.is_file():  # evaluation-only catalog: used here to pick a model on the dev half
        tools = CatalogFile(catalog, source="livemcpbench").read().tools
        dev_ids = set(split["dev"])
        rows = [
            json.loads(x)
            for x in (ROOT / "tests/data/livemcp_paraphrase/queries.jsonl").read_text().splitlines()
        ]
        sets.append(
            ("paraphrase_dev", tools, [(r["query"], r["gold"]) for r in rows if r["id"] in dev_ids])
        )
    return sets


def training_pairs(
    args: argparse.Namespace, rng: random.Random
) -> tuple[list[Pair], dict[str, str]]:
    """Request -> tool pairs from the training splits, and the text of every training tool."""
    pairs: list[Pair] = []
    texts: dict[str, str] = {}
    for name in TRAIN_SOURCES:
        tools, splits, queries = load_source(name)
        train_tools = {tid for tid, s in splits.items() if s == "train" and tid in tools}
        for tid in train_tools:
            texts[tid] = embed_text(tools[tid])
        by_tool: dict[str, list[str]] = defaultdict(list)
        for q in queries:
            if q["split"] != "train":
                continue
            assert all(g in train_tools for g in q["gold"]), q
            by_tool[q["gold"][0]].append(q["query"])
        for tid, qs in sorted(by_tool.items()):
            rng.shuffle(qs)
            cap = args.per_tool if name == "metatool" else len(qs)
            pairs.extend(Pair(q, tid, name) for q in qs[:cap])
        if args.self_pairs:
            for tid in sorted(train_tools):
                first = tools[tid].description.split(". ")[0].strip()
                if len(first.split()) >= 4:
                    pairs.append(Pair(first[:300], tid, name + ":self"))
    return pairs, texts


def mine_negatives(
    enc: Any, pairs: list[Pair], texts: dict[str, str], depth: int, rng: random.Random
) -> None:
    """One hard negative per pair: a same-source training tool the model ranks high, not gold."""
    by_source: dict[str, list[str]] = defaultdict(list)
    for tid in texts:
        by_source[tid.split("::")[0] if "::" in tid else tid].append(tid)
    source_of = {p.tool: p.source.split(":")[0] for p in pairs}
    pool: dict[str, list[str]] = defaultdict(list)
    for tid, src in source_of.items():
        pool[src].append(tid)
    for src, tids in pool.items():
        tids = sorted(set(tids))
        docs = enc.embed([texts[t] for t in tids])
        mine = [p for p in pairs if p.source.split(":")[0] == src]
        qv = enc.embed([p.query for p in mine])
        ranked = np.argsort(-(qv @ docs.T), axis=1)[:, : depth + 1]
        for p, row in zip(mine, ranked, strict=True):
            cands = [tids[i] for i in row if tids[i] != p.tool][:depth]
            p.negative = rng.choice(cands) if cands else None


def batches(pairs: list[Pair], size: int, rng: random.Random) -> list[list[Pair]]:
    """Shuffled batches in which no tool appears twice (as positive or negative)."""
    order = pairs[:]
    rng.shuffle(order)
    out: list[list[Pair]] = []
    pending = order
    while pending:
        batch: list[Pair] = []
        used: set[str] = set()
        rest = []
        for p in pending:
            keys = {p.tool} | ({p.negative} if p.negative else set())
            if len(batch) < size and not keys & used:
                batch.append(p)
                used |= keys
            else:
                rest.append(p)
        out.append(batch)
        pending = rest
    return [b for b in out if len(b) > 1]
