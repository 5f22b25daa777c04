"""The requests the learned ranker's score calibration is fitted on and chosen on, searched once.

Each request is searched over its set's whole catalog with the hand-set fusion's legs (the legs
the ranker re-scores, ``HybridSearcher.legs``); the legs are cached in ``--cache`` so that a new
ranker, a new feature or a new map needs no new searches. Pools (bench/fit/ranker_calibration.py
says which variant reads which):

* ``metatool``: MetaTool's training requests the packaged embedder never learned from
  (bench/fit/ranker.py ``requests``), each marked ``ranker_saw`` when the packaged ranker was
  trained on it (the even stride its ``--max-train`` took) — the others were seen by neither
  model, so the packaged ranker's output on them is what a user's request gets;
* ``gorilla_apibench``, ``bfcl``: every training request (the embedder learned from all of
  them, and so did the ranker);
* ``composed``: two-part requests "A. B" (and three-part ones "A. B. C") made of MetaTool
  requests neither model saw, for different tools, every part's tool gold: requests with
  several right tools, which the training splits hardly hold;
* dev: the ``dev`` requests of every set ``bench/ranking.py`` reports (the same even stride of
  at most 400), for choosing and for the report, and two- and three-part requests composed of
  MetaTool's dev requests (``composed_dev``).
"""

from __future__ import annotations

import json
import pickle
import random
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from ranker_data import embedder_requests
from ranker_data import requests as training_requests

from natural import ROOT, Dataset, load_requests, open_index
from ranking import all_sets
from toolscout.config import Settings
from toolscout.engine import Engine
from toolscout.ingest.jsonfile import CatalogFile
from toolscout.models import Loaded, Tool
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rank import FEATURES, Legs, Ranker
from toolscout.search.rankcal import RankCalibration

#: Training sources (data/natural) and the sets whose dev requests are read.
TRAIN_SOURCES = ("metatool", "gorilla_apibench", "bfcl")
DEV_SETS = (
    "metatool",
    "gorilla_apibench",
    "bfcl",
    "livemcp_paraphrase",
    "single_intent",
    "toolbench_stable",
    "seal_tools",
    "tooleyes_dev",
)
#: The dev sets a variant is chosen on (data/natural and the repository's own dev halves);
#: the others are reported only.
CHOOSE_ON = (
    "metatool",
    "gorilla_apibench",
    "bfcl",
    "livemcp_paraphrase",
    "single_intent",
    "composed_dev",
)


@dataclass(frozen=True)
class Searched:
    """One request's legs, its analysed tokens, its gold tools, its set, and whether the
    packaged ranker was trained on it."""

    text: str
    legs: Legs
    tokens: list[str]
    gold: tuple[str, ...]
    source: str
    ranker_saw: bool = False


def _search(
    ds: Dataset, asked: list[tuple[str, tuple[str, ...], bool]], db_dir: Path
) -> list[Searched]:
    engine, _ = open_index(db_dir / f"{ds.name}.db", ds.tools, ds.name)
    searcher = HybridSearcher(
        engine.store, engine.embedder, replace(engine.searcher.config, learned_ranker=False)
    )
    out = []
    for text, gold, saw in asked:
        legs, tokens = searcher.legs(text)
        out.append(Searched(text, legs, tokens, gold, ds.name, saw))
    searcher.close()
    engine.close()
    return out


def _cached(
    path: Path, ds: Dataset, asked: list[tuple[str, tuple[str, ...], bool]], db_dir: Path
) -> list[Searched]:
    if path.is_file():
        with path.open("rb") as fh:
            cached: list[Searched] = pickle.load(fh)
        return cached
    out = _search(ds, asked, db_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    print(f"{path.stem}: {len(out)} requests searched", flush=True)
    return out


def ranker_max_train(folder: Path | None = None) -> int:
    """The ``--max-train`` the packaged ranker was fitted with (its provenance; 6000 if it
    does not say)."""
    meta = (folder or ROOT / "src" / "toolscout" / "search") / "ranker.json"
    words = str(json.loads(meta.read_text("utf-8")).get("provenance", "")).split()
    return int(words[words.index("--max-train") + 1]) if "--max-train" in words else 6000


def training(db_dir: Path, cache: Path, max_train: int) -> dict[str, list[Searched]]:
    """The training pools of the module docstring (without ``composed``)."""
    sets = all_sets(ROOT / "data" / "natural")
    out: dict[str, list[Searched]] = {}
    for source in TRAIN_SOURCES:
        every = training_requests(source, "train", 0)
        saw = {t for t, _ in training_requests(source, "train", max_train)}
        asked = [(t, g, t in saw) for t, g in every]
        key = f"train_{source}_{max_train if source == 'metatool' else 0}"
        out[source] = _cached(cache / f"{key}.pkl", sets[source], asked, db_dir)
    return out


def compose(
    pool: list[tuple[str, tuple[str, ...]]], count: int, parts: int, seed: int
) -> list[tuple[str, tuple[str, ...], bool]]:
    """``count`` requests of ``parts`` requests of ``pool`` each, joined as sentences, each
    part for other tools than the rest; every part's gold is gold."""
    rng = random.Random(seed)
    asked: list[tuple[str, tuple[str, ...], bool]] = []
    while len(asked) < count and len(pool) >= parts:
        picked = rng.sample(pool, parts)
        golds = [set(g) for _, g in picked]
        if len(set().union(*golds)) < sum(len(g) for g in golds):
            continue  # two parts for one tool
        texts = [t.strip().rstrip(".!?") for t, _ in picked]
        text = ". ".join(t[:1].upper() + t[1:] for t in texts) + "."
        gold = tuple(g for _, gs in picked for g in gs)
        asked.append((text[:1000], gold, False))
    return asked


def composed(
    db_dir: Path, cache: Path, base: list[Searched], count: int, parts: int = 2
) -> list[Searched]:
    """``count`` training requests of ``parts`` parts each (see the module docstring), from
    ``base``'s requests that neither model saw."""
    pool = [(s.text, s.gold) for s in base if not s.ranker_saw]
    asked = compose(pool, count, parts, 5 if parts == 2 else 5 + parts)
    sets = all_sets(ROOT / "data" / "natural")
    name = f"composed{'' if parts == 2 else parts}_{len(base)}_{count}.pkl"
    return _cached(cache / name, sets["metatool"], asked, db_dir)


def dev(
    db_dir: Path, cache: Path, max_queries: int, composed: int = 150
) -> dict[str, list[Searched]]:
    """The dev requests of every set of :data:`DEV_SETS` that is present, and ``composed_dev``:
    ``composed`` two-part and as many three-part requests made of MetaTool's dev requests (seed
    11), the only dev requests of the sets chosen on with several right tools."""
    sets = all_sets(ROOT / "data" / "natural")
    out: dict[str, list[Searched]] = {}
    for name in DEV_SETS:
        ds = sets[name]
        if not ds.tools.is_file() or not ds.queries.is_file():
            print(f"{name}: not found ({ds.tools.parent}), skipped", flush=True)
            continue
        reqs = [r for r in load_requests(ds, max_queries) if r.split == "dev"]
        asked = [(r.text, r.gold, False) for r in reqs]
        out[name] = _cached(cache / f"dev_{name}_{max_queries}.pkl", ds, asked, db_dir)
    pool = [(r.text, r.gold) for r in load_requests(sets["metatool"], 0) if r.split == "dev"]
    asked = [a for parts in (2, 3) for a in compose(pool, composed, parts, 11 + parts)]
    key = cache / f"dev_composed_{composed}.pkl"
    out["composed_dev"] = _cached(key, sets["metatool"], asked, db_dir)
    return out


def tools_of(name: str) -> dict[str, Tool]:
    """Every tool of a set's catalog by id (the features read names and servers)."""
    ds = all_sets(ROOT / "data" / "natural")[name]
    return {t.id: t for t in CatalogFile(ds.tools, source=name).read().tools}


__all__ = [
    "CHOOSE_ON",
    "DEV_SETS",
    "Lone",
    "Searched",
    "clear",
    "clear_match",
    "composed",
    "dev",
    "embedder_requests",
    "holds_clear_match",
    "orders",
    "ranker_max_train",
    "tools_of",
    "training",
]


def orders(
    name: str, rows: list[Searched], db_dir: Path, cache: Path, ranker: Ranker, sha: str
) -> list[list[str]]:
    """The first ten hits the product returns for each of a dev set's requests with ``ranker``
    on (its order does not depend on the score map: the ranker orders the candidates, then the
    intents share the first places), cached per ranker."""
    path = cache / f"orders_{name}_{len(rows)}_{sha[:12]}.json"
    if path.is_file():
        cached: list[list[str]] = json.loads(path.read_text("utf-8"))
        return cached
    ds = all_sets(ROOT / "data" / "natural")[rows[0].source if rows else name]
    engine, _ = open_index(db_dir / f"{ds.name}.db", ds.tools, ds.name)
    config = replace(engine.searcher.config, learned_ranker=True)
    searcher = HybridSearcher(engine.store, engine.embedder, config, ranker=ranker)
    out = [[h.id for h in searcher.search(r.text, limit=10)] for r in rows]
    searcher.close()
    engine.close()
    path.write_text(json.dumps(out), encoding="utf-8")
    return out


#: A clear match, and unrelated tools to put beside it (tests/search/test_rank.py asks the same).
SNOW = Tool(id="snow", name="snow_depth", description="Report snowfall depth for ski resorts.")
OTHERS = [
    Tool(id=f"t{i}", name=f"{verb}_{noun}_{i}", description=f"{verb.title()} the {noun} {i}.")
    for i, (verb, noun) in enumerate(
        (v, n)
        for v in ("create", "delete", "list", "update", "archive")
        for n in ("invoice", "ticket", "repository", "calendar event", "customer", "playlist",
                  "shipment", "database table", "pull request", "contact")
    )
]  # fmt: skip


Lone = list[tuple[NDArray[np.float64], NDArray[np.float64]]]


def clear_match(ranker: Ranker) -> Lone:
    """The ranker's output and feature rows for "snow depth" over a snowfall-depth tool alone
    and among 10 and 50 unrelated tools: a map must score that first hit high in each, and
    not much lower in the larger catalogs (the catalog's size must not collapse it)."""
    out = []
    for size in (0, 10, 50):
        with tempfile.TemporaryDirectory() as folder:
            engine = Engine.open(Settings(db=str(Path(folder) / "index.db")))
            engine.index([Loaded("check", [SNOW, *OTHERS[:size]])])
            config = replace(engine.searcher.config, learned_ranker=True)
            searcher = HybridSearcher(engine.store, engine.embedder, config, ranker=ranker)
            legs, tokens = searcher.legs("snow depth")
            _, x = searcher.candidate_features(legs, tokens)
            out.append((ranker.scores(x), x))
            searcher.close()
            engine.close()
    return out


def clear(cal: RankCalibration, lone: Lone) -> list[float]:
    """The map's score of the clear match alone, among 10 and among 50 unrelated tools
    (:func:`clear_match`)."""
    return [
        round(float(cal.probabilities(raw, x, FEATURES)[int(np.argmax(raw))]), 3) for raw, x in lone
    ]


def holds_clear_match(cal: RankCalibration, lone: Lone) -> bool:
    """Whether the clear match scores at least 0.5 in every catalog and no catalog's score is
    more than 0.3 below the lone tool's (what tests/search/test_rank.py asks of the packaged
    map): a variant that fails is not chosen, however it does on the dev sets."""
    scored = clear(cal, lone)
    return min(scored) >= 0.5 and min(scored) >= scored[0] - 0.3
