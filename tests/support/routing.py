"""Routing of the single-intent set's dev half (odd ids) with a door's default skill settings."""

from __future__ import annotations

from pathlib import Path

from toolscout.engine import Engine
from toolscout.eval.run import load_queries
from toolscout.models import SearchRequest

SINGLE_INTENT = Path(__file__).resolve().parents[1] / "data" / "single_intent" / "queries.jsonl"


def route_dev_half(engine: Engine) -> tuple[float, float]:
    """The share of dev requests whose gold tool has a skill among the matched ones, and the
    mean number of skills matched."""
    dev = [q for q in load_queries(SINGLE_INTENT) if int(q.id.lstrip("si")) % 2 == 1]
    assert len(dev) == 62
    defaults = SearchRequest("x")
    hs = engine.search_service.hierarchical
    routed, matched = 0, 0
    for q in dev:
        skills = hs.stage1.match(
            hs.searcher.embed_query(q.text),
            engine.store.state(),
            limit=defaults.skill_limit,
            threshold=defaults.skill_threshold,
            coverage=defaults.skill_coverage,
        )
        assigned = engine.store.skills.assignments(list(q.gold))
        held = {a.skill_id for rows in assigned.values() for a in rows}
        routed += bool(held & {m.skill.id for m in skills})
        matched += len(skills)
    return routed / len(dev), matched / len(dev)
