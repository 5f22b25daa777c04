"""Skill constants fitted on the indexed catalog, for a model the packaged ones were not fitted for.

The packaged constants (``search/skillfit.py``) are fitted on labelled requests that the package
does not ship. For another embedding model the same three logistic maps are fitted on what an
index holds: each of up to ``MAX_TOOLS`` tools (every n-th by id) gives up to three
pseudo-requests, its name split into words ("send email"), the first sentence of its
description and a fragment of that sentence, whose answer is the tool and so its skills.

* **classifier**: one row per (tool, skill), the tool's cosine to the skill's profile and its
  margin; soft label: the share of the tool's pseudo-requests whose closest profile is that
  skill (as the packaged fit labels by real requests). The tools are then re-classified with it
  (only when the offline classifier files them; an LLM's assignments do not depend on cosines).
* **stage 1**: one row per (pseudo-request, skill), the features as served, except that the
  request's nearest tools leave its own tool out (a pseudo-request is a view of that tool, so it
  would be every request's perfect first neighbour); label: the skill holds the tool. Positive
  rows weigh ``POSITIVE_WEIGHT``, the weight the packaged fit chose on dev routing.
* **coverage**: the first ``COVERAGE_DEPTH`` prefixes of each pseudo-request's skills in stage-1
  order; label: the prefix holds one of the tool's skills.

``near_depth``, ``keep_floor`` and the coverage temperature are the packaged fit's. Cost: one
embedding of at most ``3 * MAX_TOOLS`` short texts, one nearest-tools search per pseudo-request,
and a re-classification of the catalog (docs/BENCHMARKS.md §3).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.models import Tool
from toolscout.search.calibration import embedder_identity, fit_logistic
from toolscout.search.document import readable_name
from toolscout.search.skillfit import (
    CATALOG,
    CLASSIFIER_FEATURES,
    COVERAGE_FEATURES,
    META_KEY,
    STAGE1_FEATURES,
    Logistic,
    SkillFit,
    packaged_skill_fit,
    stored_skill_fit,
)
from toolscout.search.skillstage import SkillIndex, SkillStage, coverage_features, stage1_features
from toolscout.skills.centroid import profile_hash, refresh_profiles
from toolscout.store.base import Store

#: Tools read per fit (every n-th by id): up to three pseudo-requests each.
MAX_TOOLS = 600
#: Fewer tools with skills than this: no fit (the packaged constants stay, approximate).
MIN_TOOLS = 20
#: Weight of the positive stage-1 rows (the packaged fit's choice on dev routing).
POSITIVE_WEIGHT = 30.0
#: Prefixes per pseudo-request for the coverage fit (as the packaged fit).
COVERAGE_DEPTH = 12
#: The catalog may grow or shrink by this factor before its fit is redone.
GROWTH = 2.0
#: Part of what a fit was fitted on: a change to this recipe refits every index once.
RECIPE = 2
_CHUNK = 64
_SENTENCE = re.compile(r"(?<=[.!?])\s+")

Reclassify = Callable[[SkillFit], None]


def pseudo_requests(tool: Tool) -> list[str]:
    """The tool's name split into words, the first sentence of its description, and a fragment
    of that sentence (its second to sixth words, when it has more than three): distinct,
    non-empty, at most 300 characters each. The fragment is a terse request that shares only
    part of the tool's words; without it the pseudo-requests are easier than real ones and the
    coverage model stops too early (docs/BENCHMARKS.md §3)."""
    name = readable_name(tool.name).strip()
    sentence = _SENTENCE.split(tool.description.strip(), maxsplit=1)[0].strip()[:300]
    words = sentence.split()
    fragment = " ".join(words[1:6]) if len(words) > 3 else ""
    return list(dict.fromkeys(t for t in (name, sentence, fragment) if t))


def skill_set(store: Store) -> str:
    """A fingerprint of the active skills, their profiles and ``RECIPE`` (changes when the
    skills are rebuilt).

    Raises: StoreError."""
    active = store.skills.list_skills(include_inactive=False)
    skills = sorted((s.id, profile_hash(s)) for s in active)
    return hashlib.sha256(json.dumps([RECIPE, skills]).encode("utf-8")).hexdigest()[:16]


def fit_due(store: Store, embedder: Embedder) -> bool:
    """Whether this index needs a catalog fit: the packaged constants are for another model and
    the stored fit (if any) is for another model, another skill set, or a catalog of less than
    half or more than twice today's tools.

    Raises: StoreError."""
    if packaged_skill_fit().matches(embedder):
        return False
    stored = stored_skill_fit(store)
    if stored is None or not stored.matches(embedder) or stored.skill_set != skill_set(store):
        return True
    tools = store.count()
    return not stored.tools / GROWTH <= tools <= stored.tools * GROWTH


@dataclass(frozen=True)
class Sample:
    """The tools a fit reads, their skills, and their pseudo-requests' vectors."""

    tools: list[Tool]
    #: Per pseudo-request: its tool's row in ``tools`` and its vector.
    owner: NDArray[np.intp]
    vectors: NDArray[np.float32]


def sample(store: Store, embedder: Embedder, limit: int = MAX_TOOLS) -> Sample | None:
    """Every n-th tool holding a skill (at most ``limit``) and its pseudo-requests, embedded as
    requests are; None when fewer than ``MIN_TOOLS`` tools hold a skill.

    Raises: StoreError, EmbedError."""
    tools = store.tools.list_tools(limit=10_000_000)
    assigned = store.skills.assignments([t.id for t in tools])
    skilled = [t for t in tools if assigned.get(t.id)]
    if len(skilled) < MIN_TOOLS:
        return None
    chosen = skilled[:: max(1, -(-len(skilled) // limit))]
    texts: list[str] = []
    owner: list[int] = []
    for row, tool in enumerate(chosen):
        for text in pseudo_requests(tool):
            texts.append(text)
            owner.append(row)
    vectors = np.concatenate(
        [embedder.embed_query(texts[i : i + _CHUNK]) for i in range(0, len(texts), _CHUNK)]
    )
    return Sample(chosen, np.asarray(owner, dtype=np.intp), vectors.astype(np.float32))


def fit_classifier(store: Store, embedder: Embedder, data: Sample) -> Logistic:
    """The classifier map: (sim, margin) of each sampled tool to each skill profile, labelled by
    the share of its pseudo-requests closest to that profile.

    Raises: StoreError, EmbedError."""
    refresh_profiles(store.skills, embedder)
    active = {s.id for s in store.skills.list_skills(include_inactive=False)}
    profiles = store.skills.skill_profiles()
    ids = sorted(i for i in profiles if i in active)
    if len(ids) < 2:
        return packaged_skill_fit().classifier
    matrix = np.stack([profiles[i][1] for i in ids])
    closest = np.argmax(data.vectors @ matrix.T, axis=1)
    votes = np.zeros((len(data.tools), len(ids)))
    np.add.at(votes, (data.owner, closest), 1.0)
    vectors = store.vectors([t.id for t in data.tools])
    xs, ys = [], []
    for row, tool in enumerate(data.tools):
        vec = vectors.get(tool.id)
        if vec is None:
            continue
        sims = (matrix @ vec).astype(np.float64)
        top = np.sort(sims)
        other = np.where(sims >= top[-1], top[-2], top[-1])
        xs.append(np.stack([sims, sims - other], axis=1))
        ys.append(votes[row] / votes[row].sum())
    if not xs:
        return packaged_skill_fit().classifier
    coef, intercept = fit_logistic(np.concatenate(xs), np.concatenate(ys))
    return Logistic(CLASSIFIER_FEATURES, coef, intercept)


Memberships = dict[str, list[tuple[str, float]]]


@dataclass(frozen=True)
class Routed:
    """One pseudo-request's stage-1 features (a row per skill), which skills hold its tool,
    its nearest tools (its own left out) and their skills."""

    features: NDArray[np.float64]
    gold: NDArray[np.bool_]
    neighbours: list[tuple[str, float]]
    members: Memberships


def routed(store: Store, index: SkillIndex, data: Sample, depth: int) -> list[Routed]:
    """Stage-1 evidence of every pseudo-request over ``index``'s skills.

    Raises: StoreError."""
    state = store.state()
    position = index.position
    own = store.skills.assignments([t.id for t in data.tools])
    sims = (data.vectors @ index.matrix.T).astype(np.float32)
    out: list[Routed] = []
    for start in range(0, len(data.owner), _CHUNK):
        found = store.nearest_many(
            data.vectors[start : start + _CHUNK], limit=depth + 1, state=state
        )
        assigned = store.skills.assignments(sorted({h.id for row in found for h in row}))
        members = {t: [(a.skill_id, a.confidence) for a in rows] for t, rows in assigned.items()}
        for offset, row in enumerate(found):
            k = start + offset
            tool_id = data.tools[int(data.owner[k])].id
            neighbours = [(h.id, h.score) for h in row if h.id != tool_id][:depth]
            held = {a.skill_id for a in own.get(tool_id, [])}
            gold = np.array([s.id in held for s in index.skills], dtype=np.bool_)
            features = stage1_features(sims[k], neighbours, members, position)
            out.append(Routed(features, gold, neighbours, members))
    return out


def fit_stage1(rows: Sequence[Routed]) -> Logistic:
    """The stage-1 map over every (pseudo-request, skill) row, positives weighted."""
    x = np.concatenate([r.features for r in rows])
    y = np.concatenate([r.gold for r in rows]).astype(np.float64)
    coef, intercept = fit_logistic(x, y, weights=np.where(y > 0, POSITIVE_WEIGHT, 1.0))
    return Logistic(STAGE1_FEATURES, coef, intercept)


def fit_coverage(
    stage1: Logistic, rows: Sequence[Routed], index: SkillIndex, temperature: float
) -> Logistic:
    """P(the first k skills in stage-1 order hold the request's tool), over the first
    ``COVERAGE_DEPTH`` prefixes of each pseudo-request."""
    ids = np.array([s.id for s in index.skills])
    position = index.position
    xs, ys = [], []
    for r in rows:
        scores = stage1(r.features)
        order = np.lexsort((ids, -scores))
        x = coverage_features(scores, order, r.neighbours, r.members, position, temperature)
        xs.append(x[:COVERAGE_DEPTH])
        ys.append((np.cumsum(r.gold[order]) > 0)[:COVERAGE_DEPTH])
    coef, intercept = fit_logistic(np.concatenate(xs), np.concatenate(ys).astype(np.float64))
    return Logistic(COVERAGE_FEATURES, coef, intercept)


def fit_catalog(
    store: Store,
    embedder: Embedder,
    reclassify: Reclassify | None,
    *,
    limit: int = MAX_TOOLS,
) -> SkillFit | None:
    """The three maps fitted on ``store``'s catalog for ``embedder``; ``reclassify`` files every
    tool again with a fit's classifier (None: the classifier is not refitted, an LLM files the
    tools). None when too few tools hold a skill. Nothing is stored here.

    Raises: StoreError, EmbedError."""
    base = packaged_skill_fit()
    data = sample(store, embedder, limit)
    if data is None:
        return None
    name, digest = embedder_identity(embedder)
    fit = replace(
        base,
        fitted_for=name,
        model_sha256=digest,
        origin=CATALOG,
        requests=len(data.owner),
        fitted_at=datetime.date.today().isoformat(),
    )
    if reclassify is not None:
        fit = replace(fit, classifier=fit_classifier(store, embedder, data))
        reclassify(fit)
    index = SkillStage(store, embedder, fit).index(None)
    if len(index.skills) < 2:
        return None
    rows = routed(store, index, data, fit.near_depth)
    stage1 = fit_stage1(rows)
    coverage = fit_coverage(stage1, rows, index, fit.temperature)
    provenance = (
        f"fitted on this catalog: {len(data.owner)} pseudo-requests (name in words, first "
        f"sentence of the description, a fragment of it) of {len(data.tools)} of its tools; "
        f"classifier "
        f"{'refitted' if reclassify is not None else 'kept (LLM classifier)'}; stage 1 with "
        f"the request's own tool left out of its nearest tools, positive rows weighted "
        f"{POSITIVE_WEIGHT:g}; coverage on the first {COVERAGE_DEPTH} prefixes"
    )
    return replace(
        fit,
        stage1=stage1,
        coverage=coverage,
        provenance=provenance,
        skill_set=skill_set(store),
        tools=store.count(),
    )


def store_fit(store: Store, fit: SkillFit) -> None:
    """Keep ``fit`` in the store's meta (one row, one write). Raises: StoreError."""
    store.set_meta(META_KEY, json.dumps(fit.to_dict(), sort_keys=True))
