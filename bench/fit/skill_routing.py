"""Stage-1 routing as bench/fit/skill_scores.py measures it (and bench/skills.py reports it).

A request is routed when a skill holding one of its gold tools is among the skills a rule
matches: stage 1's scores in order (ties by id), until the coverage model reaches its target,
at most ``limit`` skills, each scoring at least ``threshold``. :func:`routed` reads each
request's stage-1 evidence once; :func:`routing` applies any rule to it; :func:`catalog_share`
says how much of a catalog the matched skills hold; :func:`strategies` runs direct and
hierarchical searches for hit@3 and fallbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolscout.engine import Engine
from toolscout.eval.metrics import mean, score_query
from toolscout.models import SearchRequest
from toolscout.search.skillfit import COVERAGE_TEMPERATURE, Logistic
from toolscout.search.skillstage import Evidence, coverage_features, matched_count

THRESHOLD, LIMIT = 0.4, 3  # the rule stage 1 is chosen on (the previous default)
DEFAULTS = SearchRequest("x")  # the served rule: skill_coverage, skill_limit, skill_threshold
#: Requests and their gold tool ids.
Pairs = list[tuple[str, tuple[str, ...]]]


@dataclass
class Routed:
    """One request's stage-1 evidence (``features``: a row per skill) and which skills hold a
    gold tool."""

    features: np.ndarray
    gold: np.ndarray
    evidence: Evidence


@dataclass
class Routing:
    """A rule's routing over requests: the share routed, skills matched on average, and the
    skill ids matched per request."""

    share: float
    matched: float
    chosen: list[list[str]]


def routed(engine: Engine, pairs: Pairs) -> list[Routed]:
    """Stage-1 features of each request and its gold skills, over the engine's catalog."""
    hs = engine.search_service.hierarchical
    out: list[Routed] = []
    for text, gold in pairs:
        vectors = hs.searcher.embed_query(text)
        ev = hs.stage1.evidence(vectors, engine.store.state())
        assigned = engine.store.skills.assignments(list(gold))
        held = {a.skill_id for rows in assigned.values() for a in rows}
        out.append(Routed(ev.rows, np.array([s.id in held for s in ev.index.skills]), ev))
    return out


def prefixes(stage1: Logistic, r: Routed) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The request's stage-1 scores, its skills in score order (ties by id), the coverage
    features of each prefix of that order and whether the prefix holds a gold tool's skill."""
    ev = r.evidence
    scores = stage1(r.features)
    order = np.lexsort((np.array([s.id for s in ev.index.skills]), -scores))
    x = coverage_features(
        scores, order, ev.neighbours, ev.memberships, ev.index.position, COVERAGE_TEMPERATURE
    )
    return scores, order, x, np.cumsum(r.gold[order]) > 0


def routing(
    stage1: Logistic,
    rows: list[Routed],
    coverage: Logistic | None = None,
    *,
    limit: int = LIMIT,
    threshold: float = THRESHOLD,
    target: float = 1.0,
) -> Routing:
    """Share of requests with a gold skill among the matched ones (``stage1`` scores, then
    the served rule: in score order until ``coverage`` reaches ``target``, at most ``limit``,
    each at least ``threshold``), skills matched on average, and which."""
    hits, matched, chosen = [], [], []
    for r in rows:
        scores, order, x, held = prefixes(stage1, r)
        covered = coverage(x) if coverage is not None else None
        n = matched_count(scores[order], covered, limit=limit, threshold=threshold, coverage=target)
        hits.append(bool(n and held[n - 1]))
        matched.append(n)
        chosen.append([r.evidence.index.skills[i].id for i in order[:n]])
    return Routing(float(np.mean(hits)), float(np.mean(matched)), chosen)


def catalog_share(engine: Engine) -> Callable[[list[str]], float]:
    """The share of the engine's tools that hold one of the given skills."""
    ids = [t.id for t in engine.store.tools.list_tools(limit=1_000_000)]
    holders: dict[str, set[str]] = {}
    for tool_id, rows in engine.store.skills.assignments(ids).items():
        for a in rows:
            holders.setdefault(a.skill_id, set()).add(tool_id)

    def share(skills: list[str]) -> float:
        return len(set().union(*(holders.get(s, set()) for s in skills))) / max(1, len(ids))

    return share


def strategies(engine: Engine, pairs: Pairs) -> dict[str, float]:
    """hit@3 of direct and hierarchical (limit 10) and how often hierarchical fell back."""
    scores: dict[str, list[dict[str, float]]] = {"direct": [], "hierarchical": []}
    fell = 0
    for text, gold in pairs:
        for strategy in scores:
            res = engine.find(SearchRequest(text, limit=10, tool_threshold=0.0, strategy=strategy))
            scores[strategy].append(score_query([h.tool.id for h in res.tools], gold))
            fell += strategy == "hierarchical" and res.metadata["skill_ids_used"] is None
    return {
        "direct_hit@3": mean(scores["direct"])["hit@3"],
        "hierarchical_hit@3": mean(scores["hierarchical"])["hit@3"],
        "fallback": fell / max(1, len(pairs)),
    }
