"""Labelled rows for the request model ``P(answerable)`` (src/toolscout/search/calibration.py).

Read by ``bench/fit/calibrate.py`` (training and dev rows) and ``bench/no_match.py`` (the
MetaTool no-match sets). A row is what :func:`request_evidence` reads for one request over one
catalog, labelled 1 (some tool of the catalog serves it) or 0 (none does):

* **constructed**: a request of data/natural over a catalog that holds its gold tools is
  answerable; over the same catalog with its gold tools and their **near-copies** taken out it
  is not. A near-copy of a gold tool is a tool with the same name (any spelling, ``identifier_key``)
  or whose stored vector has cosine >= :data:`NEAR_COSINE` with the gold tool's (Gorilla holds
  many models whose descriptions differ in one word). Catalogs: the request's own source, and
  catalogs of ``sizes`` tools drawn from a pool (the gold tools plus a sample seeded by the
  request), so the model sees the same request at several catalog sizes;
* **MetaTool** (data/natural/metatool_no_match): ``no_tool`` requests over every catalog, and
  ``not_offered`` requests over MetaTool's catalog without their absent tool (and its
  near-copies) and over the ten tools they were offered with (answerable once the absent tool is
  added back: the same ten plus it);
* requests of another source over a catalog (APIs of another domain; a rare accidental fit
  there is label noise).

A catalog smaller than an index is a subset of its rows: the vector leg's cosines are exact (one
product with the stored vectors); BM25 keeps the whole index's IDF (only ``bm25`` reads it).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from natural import load_requests, open_index
from toolscout.engine import Engine
from toolscout.models import Scored
from toolscout.search.calibration import fit_logistic
from toolscout.search.evidence import RequestEvidence, request_evidence
from toolscout.search.text import identifier_key, query_tokens

#: Cosine between two tools' stored vectors at or above which one is a near-copy of the other.
NEAR_COSINE = 0.9
#: Depth of each leg when rows are taken from a probe (more than any exclusion removes).
DEPTH = 60
#: BM25 hits read over the whole index, of which a smaller catalog keeps its own.
LEXICAL_DEPTH = 400

#: The rule shipped before the request model learned from no-match rows (its calibration.json:
#: ``P = sigmoid(6.835242 * cosine - 4.424315) < 0.081528``): the closest tool's cosine below
#: this. The same-run baseline of bench/fit/calibrate.py and bench/no_match.py.
PREVIOUS_RULE_COSINE = (math.log(0.081528 / (1 - 0.081528)) + 4.424315) / 6.835242

Row = tuple[RequestEvidence, float, str]
Evidences = dict[str, list[RequestEvidence | None]]
SOURCES = ("metatool", "gorilla_apibench", "bfcl")
#: Dev catalogs (every data/natural tool fits in the largest).
DEV_SIZES = (100, 500, 2500)


@dataclass(frozen=True)
class Probe:
    """One search's legs, best first, over a catalog of ``tools`` tools."""

    lexical: list[Scored]
    vector: list[Scored]
    tools: int

    def evidence(self, exclude: frozenset[str] = frozenset()) -> RequestEvidence | None:
        """The request model's input with the tools in ``exclude`` taken out of the catalog
        (``exclude`` holds only tools of this catalog)."""
        return request_evidence(
            [h for h in self.lexical if h.id not in exclude],
            [h for h in self.vector if h.id not in exclude],
            self.tools - len(exclude),
        )


class Catalog:
    """One index's tools as the request model's rows need them: their stored vectors (the
    vector leg over any subset is one product, exact), names, and near-copies (see the module
    docstring)."""

    def __init__(self, engine: Engine, tools: Iterable[dict[str, Any]]):
        self.engine = engine
        rows = list(tools)
        found = engine.store.vectors([str(t["id"]) for t in rows])
        self.ids = [str(t["id"]) for t in rows if str(t["id"]) in found]
        self.row = {tid: k for k, tid in enumerate(self.ids)}
        self.matrix = np.stack([found[i] for i in self.ids]).astype(np.float32)
        self.by_name: dict[str, set[str]] = {}
        for t in rows:
            self.by_name.setdefault(identifier_key(str(t["name"])), set()).add(str(t["id"]))
        self.name = {str(t["id"]): identifier_key(str(t["name"])) for t in rows}
        self._seen: dict[str, tuple[NDArray[np.float32], list[Scored]]] = {}

    def near(self, gold: Iterable[str]) -> frozenset[str]:
        """``gold`` and every near-copy of one of them."""
        out = set(gold)
        for g in list(out):
            out |= self.by_name.get(self.name.get(g, ""), set())
            k = self.row.get(g)
            if k is not None:
                close = np.flatnonzero(self.matrix @ self.matrix[k] >= NEAR_COSINE)
                out |= {self.ids[int(j)] for j in close}
        return frozenset(out)

    def probe(self, text: str, within: Sequence[str] | None = None) -> Probe:
        """The legs of a search for ``text`` over the whole index or the tools ``within``: the
        vector leg exact (each tool's best cosine over the request's intents), the lexical leg
        the index's BM25 hits that are in ``within``."""
        if text not in self._seen:
            searcher = self.engine.searcher
            vectors = np.asarray(searcher.embed_query(text), dtype=np.float32)
            cosines = (self.matrix @ vectors.T).max(axis=1)
            tokens = query_tokens(text)
            lexical = (
                self.engine.store.lexical(
                    tokens, limit=LEXICAL_DEPTH, weights=searcher.config.field_weights
                )
                if tokens
                else []
            )
            self._seen = {text: (cosines, lexical)}  # one request at a time is probed
        cosines, lexical = self._seen[text]
        if within is None:
            rows = np.arange(len(self.ids))
        else:
            rows = np.array([self.row[t] for t in within if t in self.row], dtype=np.int64)
        top = rows[np.argsort(-cosines[rows], kind="stable")[:DEPTH]]
        vector = [Scored(self.ids[int(k)], float(cosines[k])) for k in top]
        if within is not None:
            keep = set(within)
            lexical = [h for h in lexical if h.id in keep]
        return Probe(lexical[:DEPTH], vector, len(rows))


def seeded_sample(pool: Sequence[str], size: int, seed: str, keep: Iterable[str]) -> list[str]:
    """``keep`` plus a sample of ``pool`` up to ``size`` tools, the same for the same seed."""
    kept = list(dict.fromkeys(keep))
    taken = set(kept)
    rng = np.random.default_rng(int(hashlib.sha256(seed.encode()).hexdigest()[:12], 16))
    rest = [t for t in pool if t not in taken]
    take = max(0, min(len(rest), size - len(kept)))
    return kept + [rest[int(j)] for j in rng.choice(len(rest), size=take, replace=False)]


def labelled(
    cat: Catalog,
    requests: Sequence[tuple[str, tuple[str, ...]]],
    tag: str,
    within: Sequence[str] | None = None,
) -> list[Row]:
    """Each request answerable over the catalog (the index, or the tools ``within``, which
    must hold its gold) and not over it without its gold tools and their near-copies."""
    out: list[Row] = []
    catalog = set(within) if within is not None else None
    for text, gold in requests:
        found = cat.probe(text, within)
        removed = cat.near(gold)
        if catalog is not None:
            removed = frozenset(removed & catalog)
        for label, exclude in ((1.0, frozenset[str]()), (0.0, removed)):
            ev = found.evidence(exclude)
            if ev is not None:
                out.append((ev, label, f"{tag}:{'answerable' if label else 'gold removed'}"))
    return out


def unanswerable(
    cat: Catalog, texts: Sequence[str], tag: str, within: Sequence[str] | None = None
) -> list[Row]:
    """Requests that no tool of the catalog serves (no hit at all: no row)."""
    out: list[Row] = []
    for text in texts:
        ev = cat.probe(text, within).evidence()
        if ev is not None:
            out.append((ev, 0.0, tag))
    return out


def sized(
    cat: Catalog,
    requests: Sequence[tuple[str, tuple[str, ...]]],
    pool: Sequence[str],
    sizes: Sequence[int],
    tag: str,
) -> list[Row]:
    """:func:`labelled` over catalogs of each of ``sizes`` tools: the request's gold tools plus
    a sample of ``pool`` seeded by the request (0: the whole pool)."""
    out: list[Row] = []
    for text, gold in requests:  # each request embedded once: its catalogs one after the other
        for size in sizes:
            within = seeded_sample(pool, size or len(pool), f"{size}\x00{text}", gold)
            out += labelled(cat, [(text, gold)], f"{tag}@{size or len(pool)}", within)
    return out


def no_match_requests(path: Path, split: str) -> dict[str, list[dict[str, Any]]]:
    """data/natural/metatool_no_match rows of ``split`` by group (``no_tool``, ``not_offered``)."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    out: dict[str, list[dict[str, Any]]] = {"no_tool": [], "not_offered": []}
    for r in rows:
        if r["split"] == split:
            out[r["group"]].append({**r, "query": str(r["query"])[:1000]})
    return out


def not_offered(cat: Catalog, rows: Sequence[dict[str, Any]]) -> list[Row]:
    """MetaTool's requests whose tool is absent: over the whole catalog without it (and its
    near-copies), over the ten tools offered with it, and over those ten plus it (answerable)."""
    out: list[Row] = []
    for r in rows:
        text, absent = r["query"], tuple(r["absent"])
        ev = cat.probe(text).evidence(cat.near(absent))
        if ev is not None:
            out.append((ev, 0.0, "metatool not_offered:whole catalog"))
        offered = [t for t in r["offered"] if t not in cat.near(absent)]
        for label, within in ((0.0, offered), (1.0, [*offered, *absent])):
            ev = cat.probe(text, within).evidence()
            if ev is not None:
                out.append((ev, label, f"metatool not_offered:offered{'+absent' * int(label)}"))
    return out


def natural_tools(natural: Path) -> list[dict[str, Any]]:
    """Every tool of data/natural (MetaTool, Gorilla, BFCL, ToolAlpaca), one catalog."""
    out: list[dict[str, Any]] = []
    for source in ("metatool", "gorilla_apibench", "bfcl", "toolalpaca"):
        text = (natural / source / "tools.jsonl").read_text(encoding="utf-8")
        out += [json.loads(x) for x in text.splitlines() if x.strip()]
    return out


def dev_catalog(tools: Sequence[dict[str, Any]], size: int) -> list[str]:
    """A dev catalog of ``size`` tools: an even stride of every other dev tool (at most half
    of it; the other dev tools are never in it, so some dev requests are unanswerable) and
    distractors (the other tools of data/natural)."""
    dev = sorted(str(t["id"]) for t in tools if t.get("split") == "dev")
    kept = dev[::2]
    chosen = kept[:: max(1, -(-len(kept) // (size // 2)))][: size // 2]
    left_out = set(dev[1::2])
    others = [str(t["id"]) for t in tools if t.get("split") != "dev" and t["id"] not in left_out]
    fill = size - len(chosen)
    return chosen + others[:: max(1, len(others) // max(1, fill))][:fill]


def dev_sized(
    cat: Catalog,
    requests: Sequence[tuple[str, tuple[str, ...]]],
    catalog: Sequence[str],
    limit: int,
) -> tuple[list[RequestEvidence | None], list[RequestEvidence | None]]:
    """Over ``catalog``: the request model's input for the requests all of whose gold tools
    are in it (answerable) and for those none of whose gold tools is, with their near-copies
    taken out too (no-match); at most ``limit`` of each, an even stride."""
    ids = set(catalog)
    yes = [(t, g) for t, g in requests if set(g) <= ids]
    no = [(t, g) for t, g in requests if not set(g) & ids]
    yes, no = (part[:: max(1, -(-len(part) // limit))] for part in (yes, no))
    answerable = [cat.probe(t, catalog).evidence() for t, _ in yes]
    missing = [cat.probe(t, catalog).evidence(cat.near(g) & ids) for t, g in no]
    return answerable, missing


def catalog_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def natural_index(natural: Path, db_dir: Path, model: str) -> tuple[Engine, list[dict[str, Any]]]:
    """One index of every data/natural tool (training pool and dev catalogs are subsets)."""
    tools = natural_tools(natural)
    path = db_dir.parent / "natural_tools.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    engine, _ = open_index(db_dir / "natural_all.db", path, "natural", model)
    return engine, tools


def collect_dev_no_match(
    sets: dict[str, Any], natural: Path, db_dir: Path, model: str, max_dev: int
) -> tuple[dict[str, Evidences], dict[str, Evidences]]:
    """The dev catalogs of 100, 500 and 2,500 data/natural tools (answerable dev requests,
    and the dev requests left out of them), and MetaTool's dev requests that no tool (over
    its catalog) or no offered tool (over the catalog without it, and over the ten offered
    with it) serves: (answerable sets, no-match sets)."""
    engine, tools = natural_index(natural, db_dir, model)
    cat = Catalog(engine, tools)
    requests = [
        (r.text, r.gold) for src in SOURCES for r in load_requests(sets[src], 0) if r.split == "dev"
    ]
    yes: dict[str, Evidences] = {}
    no: dict[str, Evidences] = {}
    for size in DEV_SIZES:
        found, missing = dev_sized(cat, requests, dev_catalog(tools, size), max_dev)
        yes[f"dev catalog {size}"] = {"request": found}
        no[f"left out of dev catalog {size}"] = {"request": missing}
    engine.close()
    ds = sets["metatool"]
    engine, _ = open_index(db_dir / "metatool.db", ds.tools, "metatool", model)
    cat = Catalog(engine, catalog_rows(ds.tools))
    rows = no_match_requests(natural / "metatool_no_match" / "queries.jsonl", "dev")
    no["metatool no_tool"] = {
        "request": [cat.probe(r["query"]).evidence() for r in rows["no_tool"]]
    }
    offered = not_offered(cat, rows["not_offered"])
    for where in ("whole catalog", "offered"):
        no[f"metatool not_offered ({where})"] = {
            "request": [ev for ev, label, tag in offered if tag.endswith(where) and not label]
        }
    engine.close()
    return yes, no


def fit_request_model(
    request_rows: list[Row], features: Sequence[str]
) -> tuple[tuple[float, ...], float]:
    """The request model over ``features`` on the labelled rows: (coef, intercept)."""
    y = np.array([label for _, label, _ in request_rows], dtype=np.float64)
    x = np.array([ev.values(features) for ev, _, _ in request_rows], dtype=np.float64)
    return fit_logistic(x, y)


def report_rows(request_rows: list[Row]) -> dict[str, list[int]]:
    """Rows per kind: [answerable, no-match]."""
    kinds: dict[str, list[int]] = {}
    for _, label, tag in request_rows:
        kind = kinds.setdefault(tag.split(":")[0].split("@")[0] + ":" + tag.split(":")[-1], [0, 0])
        kind[0 if label else 1] += 1
    return kinds
