"""The requests bench/fit/ranker.py fits the learned ranker on, and their legs.

Each source's ``train`` and ``dev`` requests of ``data/natural`` (MetaTool's training requests
without those the packaged embedder learned from), training requests composed into requests of
several intents, and each request's legs as the ranker sees them, searched over its source's
whole catalog and cached (:func:`collect`), so changing the features needs no new searches.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
from dataclasses import dataclass, replace
from pathlib import Path

from peer_view import PeerSearcher, Request

from natural import ROOT, datasets, open_index
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Tool
from toolscout.search.config import SearchConfig, WholeRequest
from toolscout.search.rank import Legs

SOURCES = ("metatool", "gorilla_apibench", "bfcl")
#: The whole request's row the legs are searched with unless told otherwise (the product's).
DEFAULT_WHOLE: WholeRequest = SearchConfig().whole_request
#: Candidates re-scored per request (SearchConfig.candidates).
CANDIDATES = 100
#: Part of the legs cache's file names: a cache written before the legs held the whole
#: request's run is not read.
LEGS_VERSION = "w1"


def embedder_requests() -> set[str]:
    """The MetaTool training requests the packaged embedder learned from (bench/fit/
    train_embedder.py picks at most 25 per tool with seed 13; replayed here exactly)."""
    from embedder_data import training_pairs

    args = argparse.Namespace(per_tool=25, self_pairs=False)
    pairs, _ = training_pairs(args, random.Random(13))
    return {p.query for p in pairs if p.source == "metatool"}


def requests(source: str, split: str, cap: int) -> list[tuple[str, tuple[str, ...]]]:
    """A split's requests with gold tools, at most ``cap`` (an even stride). MetaTool's
    training requests exclude those the embedder learned from: on them its cosine is right
    nearly always, which would teach the ranker to trust it blindly."""
    path = ROOT / "data" / "natural" / source / "queries.jsonl"
    rows = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    seen = embedder_requests() if (source, split) == ("metatool", "train") else set()
    picked = [(str(r["query"])[:1000], tuple(r["gold"])) for r in rows
              if r.get("split") == split and r.get("gold") and r["query"] not in seen]  # fmt: skip
    step = max(1, -(-len(picked) // cap)) if cap else 1
    return picked[::step]


@dataclass(frozen=True)
class Searched:
    """One request's legs as the ranker sees them, its gold tools, its source, and what the
    extra features of peer_view.py read of it."""

    legs: Legs
    tokens: list[str]
    gold: tuple[str, ...]
    source: str
    request: Request


def composed(
    source: str, cap: int, count: int, parts: int = 2
) -> list[tuple[str, tuple[str, ...]]]:
    """``count`` requests made of ``parts`` training requests for different tools ("A. B" or
    "A. B. C"), whose gold is every part's (seed 5; seed 5 + parts for more than two): requests
    of several intents each served by its own tool, which the training splits hardly hold."""
    base = requests(source, "train", cap)
    rng = random.Random(5 if parts == 2 else 5 + parts)
    out: list[tuple[str, tuple[str, ...]]] = []
    while len(out) < count and len(base) >= parts:
        picked = rng.sample(base, parts)
        golds = [set(gold) for _, gold in picked]
        if len(set().union(*golds)) < sum(len(g) for g in golds):
            continue
        texts = [text.strip().rstrip(".!?") for text, _ in picked[:-1]] + [picked[-1][0].strip()]
        joined = ". ".join(t[:1].upper() + t[1:] if i else t for i, t in enumerate(texts))
        out.append((joined[:1000], tuple(g for _, gold in picked for g in gold)))
    return out


def collect(
    source: str,
    split: str,
    cap: int,
    db_dir: Path,
    cache: Path,
    compose: int = 0,
    parts: int = 2,
    whole: WholeRequest = DEFAULT_WHOLE,
) -> list[Searched]:
    """The legs of every request of one source's split, or of ``compose`` training requests
    composed of ``parts`` each, searched with ``whole`` as the whole request's row (cached:
    features can change without searching again)."""
    mean = "_mean" if whole == "intents_mean" else ""
    made = f"_c{compose}{f'p{parts}' if parts != 2 else ''}" if compose else ""
    path = cache / f"{source}_{split}_{cap}{made}{mean}_{LEGS_VERSION}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            cached: list[Searched] = pickle.load(fh)
        return cached
    ds = datasets(ROOT / "data" / "natural")[source]
    engine, _ = open_index(db_dir / f"{source}.db", ds.tools, source)
    config = replace(engine.searcher.config, learned_ranker=False, whole_request=whole)
    searcher = PeerSearcher(engine.store, engine.embedder, config)
    out = []
    asked = composed(source, cap, compose, parts) if compose else requests(source, split, cap)
    for text, gold in asked:
        legs, tokens = searcher.legs(text)
        assert searcher.last_rows is not None
        request = searcher.request(searcher.last_text, searcher.last_rows)
        out.append(Searched(legs, tokens, gold, source, request))
    searcher.close()
    engine.close()
    cache.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    print(f"{source} {split}: {len(out)} requests searched", flush=True)
    return out


def catalog(source: str) -> dict[str, Tool]:
    ds = datasets(ROOT / "data" / "natural")[source]
    return {t.id: t for t in CatalogFile(ds.tools, source=source).read().tools}
