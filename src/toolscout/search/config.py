"""The ranking parameters of a hybrid search (search/hybrid.py): fusion, leg depths, the lexical
weight's logistic, intents, the learned ranker (toolscout/wiring.py builds one from Settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Fusion = Literal["adaptive", "rrf", "score"]
WholeRequest = Literal["embedded", "intents_mean"]

#: name, actions, enhanced, keywords, use_cases, domain, description, params
DEFAULT_FIELD_WEIGHTS: tuple[float, ...] = (3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0)


@dataclass(frozen=True)
class SearchConfig:
    """Ranking parameters. Defaults are the measured ones; all are configuration."""

    fusion: Fusion = "adaptive"
    rrf_k: int = 60
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    field_weights: tuple[float, ...] = DEFAULT_FIELD_WEIGHTS
    candidates: int = 100
    #: How deep the lexical leg ranks (at least the search's limit). 50 instead of 100 cost
    #: <= 0.1 nDCG@10 and let PostgreSQL's MaxScore skip common terms' postings: BM25 p95 at
    #: 100k tools 41 -> 28 ms (docs/BENCHMARKS.md section 7).
    lexical_candidates: int = 50
    vector_floor: float = 0.0
    #: The lexical weight's logistic (see the module docstring). Midpoint 3.5 / slope 0.25 was
    #: chosen for the default model on the dev rows of the natural-request sets (their dev
    #: splits, the paraphrase set's odd ids), ToolBench G1 and Seal-Tools dev: the hybrid is
    #: within a point of its better leg on every one of them (docs/BENCHMARKS.md, section 14).
    #: The steep slope matters on paraphrases: a stray shared word (evidence ~2) must not reorder
    #: vector hits whose cosines differ by hundredths.
    evidence_midpoint: float = 3.5
    evidence_slope: float = 0.25
    clause_split: bool = True
    #: Give every intent of a multi-intent request its share of the first places.
    intent_fusion: bool = True
    #: With the hand-set fusion, the vector leg of a request of several intents also reads
    #: the whole request's row (``whole_request``'s), and a tool keeps its best cosine over
    #: that row and the intents' rows: a false split then costs little (search/intents.py).
    #: The intents alone still own the tools their quotas count.
    whole_row: bool = False
    exact_name_boost: bool = True
    #: Re-score the first ``candidates`` fused hits of a hybrid search with the learned ranker
    #: (search/rank.py); off: the hand-set fusion's order stands. On by default: measured with
    #: bench/ranking.py it is significantly worse than the fusion on no dev set and 0.6 points
    #: of hit@3 better on average (held out it loses ToolBench's multi-tool requests); it runs
    #: only with the packaged embedding model and the adaptive fusion, else the fusion's order
    #: stands (docs/BENCHMARKS.md §16).
    learned_ranker: bool = True
    #: Where the learned ranker's row for the whole of a request of several intents comes from:
    #: ``intents_mean``, the intents' rows averaged by their lengths and normalised (what the
    #: packaged ranker learned from: no embedding beside the intents); ``embedded``, its text
    #: embedded beside its intents (a ranker must be fitted for the row it reads:
    #: bench/fit/ranker.py ``--whole``; docs/benchmarks/ranking.md).
    whole_request: WholeRequest = "intents_mean"
    #: Run the lexical and the vector leg at the same time on stores that gain from it (a
    #: search then costs about its slower leg: on PostgreSQL both legs run on the server,
    #: each on its own connection); on the others, run the lexical leg while the request is
    #: embedded.
    parallel_legs: bool = True
