"""Second views of each tool as learned-ranker features, computed offline by the fit and
evaluation scripts (bench/fit/ranker.py ``--extra``, bench/ranking.py ``--candidate``).

    python bench/fit/peer_view.py [--sources metatool gorilla_apibench bfcl] [--max-dev 600]

prints each single view's hit@3 over the whole catalog on the dev requests (what the features
below are for).

The legs see a tool through toolscout's document text; the same-model baselines see it through
the plain *peer text* (bench/quality.py ``peer_text``), and on some sets that cosine alone beats
every toolscout system. These features give the ranker that view, and two more, per candidate
(the cosine of the whole request to the tool's document vector, measured here first, is now one
of the product's features: search/rank.py ``whole_*``):

* ``peer``: cosine of the whole request to the tool's peer text embedded by the same model,
  its gap to the best candidate, z-score and rank among the candidates;
* ``peer_intents``: the same with the request's intents' rows (the best of them, as the
  vector leg takes);
* ``namedesc``: the whole request's cosine against ``name: description``, and its gap;
* ``fields``: BM25 of the request's stemmed words against the tool's name (split), its
  description and its parameters (names and descriptions), each in IDF units.

Only the candidates the ranker re-scores are read, as a store would serve them.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bm25s
import numpy as np
import Stemmer
from numpy.typing import NDArray

from quality import peer_text
from toolscout.embed.base import Embedder
from toolscout.models import Scored
from toolscout.search.forest import parse_lightgbm
from toolscout.search.hybrid import HybridSearcher
from toolscout.search.rank import FEATURES, META_FILE, MODEL_FILE, Legs, Ranker, rerank
from toolscout.search.text import split_identifier

#: Feature names and monotone directions of each group, in column order.
GROUPS: dict[str, tuple[tuple[str, int], ...]] = {
    "peer": (("peer_cosine", 1), ("peer_gap", 1), ("peer_z", 1), ("peer_rank", -1)),
    "peer_intents": (("pi_cosine", 1), ("pi_gap", 1), ("pi_z", 1), ("pi_rank", -1)),
    "namedesc": (("namedesc_cosine", 1), ("namedesc_gap", 1)),
    "fields": (("bm25_name", 1), ("bm25_description", 1), ("bm25_parameters", 1)),
}
FIELDS = ("name", "description", "parameters")


def extra_names(groups: Sequence[str]) -> tuple[str, ...]:
    return tuple(name for g in groups for name, _ in GROUPS[g])


def extra_monotone(groups: Sequence[str]) -> tuple[int, ...]:
    return tuple(m for g in groups for _, m in GROUPS[g])


def namedesc_text(tool: Any) -> str:
    return f"{tool.name}: {tool.description}"


def field_texts(tool: Any) -> tuple[str, str, str]:
    params: list[str] = []
    for name, schema in ((tool.input_schema or {}).get("properties") or {}).items():
        params.append(" ".join(split_identifier(str(name))))
        if isinstance(schema, dict) and isinstance(schema.get("description"), str):
            params.append(schema["description"])
    name = f"{tool.name} {' '.join(split_identifier(tool.name))}"
    return name, tool.description, " ".join(params)


class _FieldIndex:
    """BM25 (k1 1.5, b 0.75, as bm25s) over one field of every tool: stemmed words, English
    stopwords dropped; a tool whose field is empty scores 0."""

    def __init__(self, texts: list[str], stemmer: Stemmer.Stemmer):
        self.stemmer = stemmer
        self.docs = [Counter(words) for words in self._words(texts)]
        self.lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.mean_length = max(float(self.lengths.mean()), 1e-9) if self.docs else 1.0
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def _words(self, texts: list[str]) -> list[list[str]]:
        out = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, return_ids=False,
                             show_progress=False)  # fmt: skip
        return [list(words) for words in out]

    def scores(self, text: str, docs: NDArray[np.int64]) -> NDArray[np.float64]:
        """BM25 of ``text`` against the tools at positions ``docs``."""
        words = [w for w in set(self._words([text])[0]) if w in self.idf]
        out = np.zeros(docs.size)
        k1, b = 1.5, 0.75
        for i, doc in enumerate(docs):
            tf, norm = self.docs[doc], k1 * (1 - b + b * self.lengths[doc] / self.mean_length)
            out[i] = sum(self.idf[w] * tf[w] * (k1 + 1) / (tf[w] + norm) for w in words if w in tf)
        return out


@dataclass
class ToolViews:
    """One catalog's second views: peer-text and ``name: description`` vectors, field indexes."""

    ids: list[str]
    peer: NDArray[np.float32]
    namedesc: NDArray[np.float32]
    fields: list[_FieldIndex]

    @property
    def position(self) -> dict[str, int]:
        return {tid: i for i, tid in enumerate(self.ids)}


def build_views(tools: Sequence[Any], embedder: Embedder, cache: Path | None = None) -> ToolViews:
    """Every tool's second views; the vectors are cached in ``cache`` keyed by the texts and
    the model's name."""
    ids = [t.id for t in tools]
    texts = [peer_text(t) for t in tools], [namedesc_text(t) for t in tools]
    key = hashlib.sha256(json.dumps([embedder.name, *texts]).encode("utf-8")).hexdigest()[:16]
    path = cache / f"views_{key}.npz" if cache else None
    if path is not None and path.is_file():
        saved = np.load(path)
        peer, nd = saved["peer"], saved["namedesc"]
    else:
        peer, nd = embedder.embed(texts[0]), embedder.embed(texts[1])
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, peer=peer, namedesc=nd)
    stemmer = Stemmer.Stemmer("english")
    per_field = list(zip(*(field_texts(t) for t in tools), strict=True))
    fields = [_FieldIndex(list(col), stemmer) for col in per_field]
    return ToolViews(ids, peer, nd, fields)


@dataclass(frozen=True)
class Request:
    """What the extra features read of one request: its text, its intents' rows (the vector
    leg's query rows) and the whole request's row."""

    text: str
    rows: NDArray[np.float32]
    whole: NDArray[np.float32]


def _cosine_block(sims: NDArray[np.float64], with_rank: bool) -> list[NDArray[np.float64]]:
    best = float(sims.max()) if sims.size else 0.0
    cols = [sims, sims - best]
    if with_rank:
        sd = float(sims.std()) if sims.size > 1 else 1.0
        order = np.argsort(-sims, kind="stable")
        rank = np.empty(sims.size)
        rank[order] = np.arange(1, sims.size + 1)
        cols += [(sims - sims.mean()) / max(sd, 1e-6), np.log1p(rank)]
    return cols


def extra_features(
    views: ToolViews, groups: Sequence[str], request: Request, candidates: Sequence[str]
) -> NDArray[np.float64]:
    """One row of the groups' features per candidate."""
    where = views.position
    idx = np.array([where.get(tid, -1) for tid in candidates], dtype=np.int64)
    known = idx >= 0
    cols: list[NDArray[np.float64]] = []
    text = request.text
    for group in groups:
        if group in ("peer", "peer_intents", "namedesc"):
            matrix = views.namedesc if group == "namedesc" else views.peer
            query = request.rows if group == "peer_intents" else request.whole[None, :]
            sims = np.zeros(len(candidates))
            sims[known] = (matrix[idx[known]] @ np.asarray(query, dtype=np.float32).T).max(axis=1)
            cols += _cosine_block(sims, with_rank=group != "namedesc")
        else:
            idf = math.log(len(views.ids) + 1.0)
            for index in views.fields:
                col = np.zeros(len(candidates))
                col[known] = index.scores(text, idx[known]) / idf
                cols.append(col)
    return np.column_stack(cols) if cols else np.zeros((len(candidates), 0))


class PeerSearcher(HybridSearcher):
    """The hybrid searcher with the learned ranker reading the extra features too (bench only:
    the product's searcher reads :data:`toolscout.search.rank.FEATURES`)."""

    views: ToolViews
    groups: tuple[str, ...] = ()
    last_rows: NDArray[np.float32] | None = None
    last_whole: NDArray[np.float32] | None = None
    last_text: str = ""

    def embed_request(
        self, query: str, whole: bool
    ) -> tuple[NDArray[np.float32], NDArray[np.float32] | None]:
        rows = super().embed_request(query, whole)
        self.last_rows, self.last_whole, self.last_text = rows[0], rows[1], query
        return rows

    def _rerank(
        self, ranker: Ranker, legs: Legs, tokens: list[str], version: Hashable | None = None
    ) -> tuple[list[Scored], dict[str, float]]:
        ids, x = self.candidate_features(legs, tokens, version)
        assert self.last_rows is not None
        request = self.request(self.last_text, self.last_rows)
        extra = extra_features(self.views, self.groups, request, ids)
        return rerank(ranker, legs, ids, np.hstack([x, extra]))

    def request(self, text: str, rows: NDArray[np.float32]) -> Request:
        """The request as the extra features read it (the whole text's row: the one embedded
        beside the intents, or embedded again)."""
        whole = self.last_whole if text == self.last_text else None
        if whole is None:
            whole = rows if rows.shape[0] == 1 else self.embedder.embed_query([text.strip()])
        return Request(text, rows, whole[0])


def load_extended(folder: Path) -> tuple[Ranker, tuple[str, ...]]:
    """A refit whose features are :data:`FEATURES` and then extra groups' (as ranker.py
    ``--extra`` writes it), and those groups."""
    meta = json.loads((folder / META_FILE).read_text("utf-8"))
    groups = tuple(meta.get("extra_groups", ()))
    names = tuple(meta["features"])
    if names != FEATURES + extra_names(groups):
        raise SystemExit(f"{folder}: features {names} are not FEATURES + {groups}")
    text = (folder / MODEL_FILE).read_text("utf-8")
    cal = meta["calibration"]
    weights = tuple(float(v) for v in [*cal["coef"], cal["intercept"]])
    return Ranker(parse_lightgbm(text), names, weights, str(meta.get("provenance", ""))), groups


def views_hit3(sources: Sequence[str], max_dev: int) -> dict[str, dict[str, float]]:
    """hit@3 of each single view over the whole catalog, per source's dev requests: the
    document vectors (the vector leg's: best of the intents, or the whole request as one
    text) and the peer-text vectors (the same two ways)."""
    from dataclasses import replace

    from ranker_data import requests

    from natural import ROOT, datasets, open_index

    out: dict[str, dict[str, float]] = {}
    for source in sources:
        ds = datasets(ROOT / "data" / "natural")[source]
        engine, tools = open_index(ROOT / "bench" / "out" / "ranking" / "db" / f"{source}.db",
                                   ds.tools, source)  # fmt: skip
        views = build_views(tools, engine.embedder, ROOT / "bench" / "out" / "ranking" / "legs")
        searcher = HybridSearcher(
            engine.store, engine.embedder, replace(engine.searcher.config, learned_ranker=False)
        )
        hits: dict[str, list[bool]] = {}
        asked = requests(source, "dev", max_dev)
        for text, gold in asked:
            rows = searcher.embed_query(text.strip())
            whole = engine.embedder.embed_query([text.strip()])
            runs = {
                "document_intents": _best_of(engine.store.nearest_many(rows, limit=3)),
                "document_whole": [h.id for h in engine.store.nearest_many(whole, limit=3)[0]],
                "peer_intents": _top(views, (views.peer @ rows.T).max(axis=1)),
                "peer_whole": _top(views, views.peer @ whole[0]),
            }
            for name, top in runs.items():
                hits.setdefault(name, []).append(bool(set(top[:3]) & set(gold)))
            hits.setdefault("several_intents", []).append(rows.shape[0] > 1)
        out[source] = {k: round(100 * float(np.mean(v)), 1) for k, v in hits.items()}
        out[source]["requests"] = len(asked)
        out[source] |= tokens_per_tool(tools)
        print(source, out[source], flush=True)
        searcher.close()
        engine.close()
    return out


def tokens_per_tool(tools: Sequence[Any]) -> dict[str, float]:
    """Mean model tokens per tool (at most the model's limit, as embedded) of the document text
    the index embeds and of the peer text: what a second stored vector would add to the
    embedding work at index time."""
    from tokenizers import Tokenizer

    import toolscout.embed
    from toolscout.embed.local import MAX_TOKENS, TOOL_MODEL_DIR
    from toolscout.search.document import embed_text

    path = Path(toolscout.embed.__file__).parent / TOOL_MODEL_DIR / "tokenizer.json"
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def mean(texts: list[str]) -> float:
        counts = [min(len(tokenizer.encode(t).ids), MAX_TOKENS) for t in texts]
        return round(sum(counts) / max(1, len(counts)), 1)

    return {
        "document_tokens": mean([embed_text(t) for t in tools]),
        "peer_tokens": mean([peer_text(t) for t in tools]),
    }


def _best_of(runs: list[list[Scored]]) -> list[str]:
    best: dict[str, float] = {}
    for run in runs:
        for h in run:
            best[h.id] = max(best.get(h.id, -1.0), h.score)
    return sorted(best, key=lambda t: (-best[t], t))[:3]


def _top(views: ToolViews, sims: NDArray[np.floating[Any]]) -> list[str]:
    return [views.ids[i] for i in np.argsort(-sims, kind="stable")[:3]]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="hit@3 of each single view on the dev splits")
    parser.add_argument("--sources", nargs="+", default=["metatool", "gorilla_apibench", "bfcl"])
    parser.add_argument("--max-dev", type=int, default=600)
    args = parser.parse_args()
    views_hit3(args.sources, args.max_dev)
