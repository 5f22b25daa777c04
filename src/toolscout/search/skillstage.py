"""Stage 1 of the two-stage search: the active skills scored against a request.

Skill score: a logistic model (``search/skillfit.py``) of how close the request is to the
skill's vector - the centroid of its tools, or for a skill without tools the embedding of its own
description; best over the query rows (whole query, then each clause of a multi-request query) -
and of what the request's nearest tools say: whether one of them belongs to the skill, how close
it is, and how many of them do. Its constants are fitted for the default embedding model on the
training requests of ``data/natural`` and kept in ``calibration.json`` with that model's hash
(``python bench/fit/skill_scores.py --write``); for another model, on the indexed catalog
(``skills/catalogfit.py``), kept in the store's meta and read again whenever the data version
moves.

How many skills match is adaptive: skills are added in score order until a second fitted model,
the probability that the skills so far hold the request's tool, reaches the request's
``skill_coverage``; at most ``skill_limit`` skills, each scoring at least ``skill_threshold``. A
clear request matches one or two skills, a vague one more (docs/BENCHMARKS.md §3).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.models import Skill, SkillMatch
from toolscout.search.skillfit import Logistic, SkillFit, resolve_skill_fit
from toolscout.store.base import IndexState, Store

Vectors = NDArray[np.float32]
Memberships = Mapping[str, Sequence[tuple[str, float]]]


def stage1_features(
    sims: NDArray[np.float32],
    neighbours: Sequence[tuple[str, float]],
    memberships: Memberships,
    position: Mapping[str, int],
) -> NDArray[np.float64]:
    """One row of ``skillfit.STAGE1_FEATURES`` per skill: ``sims`` (the request's best cosine
    to each skill's vector), ``neighbours`` (the request's nearest tools and cosines, best
    first), ``memberships`` (tool id -> (skill id, confidence)), ``position`` (skill id -> row)."""
    s = sims.astype(np.float64)
    n = len(s)
    if n < 2:
        margin = s.copy()
    else:
        first, second = np.sort(s)[-1], np.sort(s)[-2]
        margin = s - np.where(s >= first, second, first)
    floor = neighbours[-1][1] if neighbours else 0.0
    top = neighbours[0][1] if neighbours else 0.0
    near = np.full(n, floor, dtype=np.float64)
    votes = np.zeros(n, dtype=np.float64)
    for rank, (tool_id, cosine) in enumerate(neighbours, 1):
        for skill_id, confidence in memberships.get(tool_id, ()):
            row = position.get(skill_id)
            if row is not None:
                near[row] = max(near[row], cosine)
                votes[row] += confidence / rank
    # The skill's own vector counts as one of its tools: a skill whose tools are all far (or
    # that has none yet) still stands out when its description fits the request.
    near = np.maximum(near, s)
    return np.stack([s, margin, near, near - top, votes], axis=1)


def coverage_features(
    scores: NDArray[np.float64],
    order: NDArray[np.intp],
    neighbours: Sequence[tuple[str, float]],
    memberships: Memberships,
    position: Mapping[str, int],
    temperature: float,
) -> NDArray[np.float64]:
    """One row of ``skillfit.COVERAGE_FEATURES`` per prefix of ``order`` (the skills' rows,
    best first): row ``k - 1`` describes its first ``k`` skills; ``neighbours`` best first."""
    n = len(order)
    ranked = scores[order]
    total = float(ranked.sum())
    share = np.cumsum(ranked) / total if total > 0 else np.ones(n)
    following = np.append(ranked[1:], 0.0)
    # Each nearest tool's softmax weight counts from the first prefix holding one of its skills.
    place = np.empty(n, dtype=np.intp)
    place[order] = np.arange(n)
    entered = np.zeros(n, dtype=np.float64)
    if neighbours:
        cosines = np.array([c for _, c in neighbours], dtype=np.float64)
        weights = np.exp((cosines - cosines.max()) / temperature)
        weights /= weights.sum()
        for (tool_id, _), weight in zip(neighbours, weights, strict=True):
            rows = [position[s] for s, _ in memberships.get(tool_id, ()) if s in position]
            if rows:
                entered[int(place[rows].min())] += weight
    mass = np.cumsum(entered)
    log_k = np.log(np.arange(1, n + 1, dtype=np.float64))
    # How close the request comes to any tool at all: a request far from everything (a short,
    # conversational one) is one whose nearest tools' skills say less, so it needs more skills.
    top = np.full(n, neighbours[0][1] if neighbours else 0.0, dtype=np.float64)
    return np.stack([share, following, mass, log_k, top], axis=1)


def matched_count(
    ranked: NDArray[np.float64],
    covered: NDArray[np.float64] | None,
    *,
    limit: int,
    threshold: float,
    coverage: float,
) -> int:
    """How many of the skills in score order (``ranked``: their scores, best first) match: the
    first prefix whose ``covered`` probability reaches ``coverage`` (all when none does, or
    without a coverage model), at most ``limit``, each scoring at least ``threshold``."""
    n = min(limit, int(np.count_nonzero(ranked >= threshold)))
    if covered is not None and n:
        reached = np.flatnonzero(covered[:n] >= coverage)
        if reached.size:
            n = int(reached[0]) + 1
    return n


@dataclass(frozen=True)
class Evidence:
    """What stage 1 read for one request: the active skills, one row of stage-1 features per
    skill, the request's nearest tools (best first) and their skills."""

    index: SkillIndex
    rows: NDArray[np.float64]
    neighbours: list[tuple[str, float]]
    memberships: dict[str, list[tuple[str, float]]]


@dataclass(frozen=True)
class SkillIndex:
    """Active skills and the vectors stage 1 compares queries with (one row per skill)."""

    skills: tuple[Skill, ...]
    counts: dict[str, int]
    matrix: Vectors

    @property
    def position(self) -> dict[str, int]:
        return {s.id: i for i, s in enumerate(self.skills)}


class SkillStage:
    """Scores the active skills of a store against a request's vectors; the skills and their
    vectors are read once per data version."""

    def __init__(self, store: Store, embedder: Embedder, fit: SkillFit | None = None) -> None:
        self.store = store
        self.embedder = embedder
        #: The vectors' dimension (an index without skill vectors is an empty matrix of it).
        self.dim = embedder.dim
        self._pinned = fit is not None
        self._fit = fit if fit is not None else resolve_skill_fit(store, embedder)
        #: ``"fitted"``, or how, or why skill scores are approximate (warned once at start).
        self.fit_status = self._fit.check(embedder)
        self._index: tuple[Hashable | None, SkillIndex] | None = None

    @property
    def fit(self) -> SkillFit:
        """The fitted constants: given, or resolved for the model (``resolve_skill_fit``) at
        start and whenever the data version moves."""
        return self._fit

    def serve(self, fit: SkillFit | None) -> None:
        """Serve ``fit`` from now on (a benchmark comparing fits: the store's are not read
        again); None: the constants resolved for the model, again."""
        self._pinned = fit is not None
        self._fit = fit if fit is not None else resolve_skill_fit(self.store, self.embedder)
        self.fit_status = self._fit.status(self.embedder)

    def _refresh_fit(self) -> None:
        if not self._pinned:
            self._fit = resolve_skill_fit(self.store, self.embedder)
            self.fit_status = self._fit.status(self.embedder)

    def index(self, version: Hashable | None) -> SkillIndex:
        """The active skills with their vectors, cached until the store's data version (read
        by the caller) moves."""
        if version is not None and self._index is not None and self._index[0] == version:
            return self._index[1]
        self._refresh_fit()
        centroids = self.store.skills.skill_vectors()
        profiles = self.store.skills.skill_profiles()
        counts = self.store.skills.skill_tool_counts()
        rows: list[Vectors] = []
        skills: list[Skill] = []
        for skill in self.store.skills.list_skills(include_inactive=False):
            vec = centroids.get(skill.id)
            if vec is None and skill.id in profiles:
                vec = profiles[skill.id][1]
            if vec is not None:
                skills.append(skill)
                rows.append(vec)
        matrix = np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)
        index = SkillIndex(tuple(skills), counts, matrix)
        self._index = (version, index)
        return index

    def evidence(self, vectors: Vectors, state: IndexState) -> Evidence:
        """The active skills, one row of stage-1 features per skill and the nearest tools
        they were read from, for ``vectors`` at index ``state``."""
        index = self.index(state.version)
        if not index.skills:
            return Evidence(index, np.zeros((0, len(self.fit.stage1.features))), [], {})
        sims = (vectors @ index.matrix.T).max(axis=0)
        best: dict[str, float] = {}
        for row in self.store.nearest_many(vectors, limit=self.fit.near_depth, state=state):
            for hit in row:
                best[hit.id] = max(best.get(hit.id, -1.0), hit.score)
        neighbours = sorted(best.items(), key=lambda p: (-p[1], p[0]))[: self.fit.near_depth]
        assigned = self.store.skills.assignments([tool_id for tool_id, _ in neighbours])
        memberships = {
            tool_id: [(a.skill_id, a.confidence) for a in rows]
            for tool_id, rows in assigned.items()
        }
        rows = stage1_features(sims, neighbours, memberships, index.position)
        return Evidence(index, rows, neighbours, memberships)

    def features(
        self, vectors: Vectors, state: IndexState
    ) -> tuple[SkillIndex, NDArray[np.float64]]:
        """The active skills and one row of stage-1 features per skill for ``vectors``, at
        index ``state``."""
        ev = self.evidence(vectors, state)
        return ev.index, ev.rows

    def covered(
        self, ev: Evidence, scores: NDArray[np.float64], order: NDArray[np.intp]
    ) -> NDArray[np.float64] | None:
        """Per prefix of ``order``, the fitted probability that its skills hold the request's
        tool (None without a coverage model)."""
        model: Logistic | None = self.fit.coverage
        if model is None:
            return None
        rows = coverage_features(
            scores, order, ev.neighbours, ev.memberships, ev.index.position, self.fit.temperature
        )
        return model(rows)

    def match(
        self,
        vectors: Vectors,
        state: IndexState,
        *,
        limit: int,
        threshold: float,
        coverage: float = 1.0,
    ) -> list[SkillMatch]:
        """The skills that fit, best first (ties by id): added in score order until they
        hold the request's tool with probability ``coverage`` (1: never stop early), at most
        ``limit``, each scoring at least ``threshold``."""
        ev = self.evidence(vectors, state)
        skills = ev.index.skills
        if not skills:
            return []
        scores = self.fit.stage1(ev.rows)
        order = np.lexsort((np.array([s.id for s in skills]), -scores))
        n = matched_count(
            scores[order],
            self.covered(ev, scores, order),
            limit=limit,
            threshold=threshold,
            coverage=coverage,
        )
        counts = ev.index.counts
        return [
            SkillMatch(skills[i], round(float(scores[i]), 6), counts.get(skills[i].id, 0))
            for i in order[:n]
        ]
