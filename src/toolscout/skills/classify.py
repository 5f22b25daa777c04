"""Assigning tools to skills: the Classifier protocol, the offline classifier, batch runs.

The offline classifier needs no LLM. It compares a tool's stored vector with each active
skill's *profile* vector (the embedding of its name, description, keywords and example tools)
and turns the similarities into confidences with a logistic model of two features:

* ``sim``    - cosine similarity of tool and skill profile;
* ``margin`` - ``sim`` minus the best similarity among the *other* skills (positive only for
  the top skill; how clearly it wins).

``confidence = sigmoid(A*sim + B*margin + C)``, with A, B, C fitted for the default embedding
model and kept in the ``skills`` section of ``search/calibration.json`` (``search/skillfit.py``:
the model's hash, the data, the date; refit with ``python bench/fit/skill_scores.py --write``),
or for another model on the indexed catalog (``skills/catalogfit.py``).
The fit reads the training tools of ``data/natural`` and labels each (tool, skill) pair with
the share of the tool's training requests that are closest to that skill's profile: a tool
belongs where the requests it serves point.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.errors import ToolscoutError
from toolscout.models import ClassifyProgress, ClassifyReport, SkillAssignment, Tool
from toolscout.search.skillfit import Logistic, SkillFit, packaged_skill_fit
from toolscout.skills.centroid import recompute_centroids, refresh_profiles
from toolscout.store.base import IndexEntry, Store
from toolscout.store.roles import Classified, SkillStore

log = logging.getLogger("toolscout.skills")

Vector = NDArray[np.float32]

#: A tool keeps at most this many skills ...
MAX_SKILLS = 3
#: ... each at least as confident as the fit's ``keep_floor`` (``search/skillfit.py``, chosen
#: with the skill scores); the most confident one is always kept.
#: The primary skill must reach this confidence; otherwise the tool is ``uncategorized``.
PRIMARY_FLOOR = 0.5
CHUNK = 256


@dataclass(frozen=True)
class ProposedSkill:
    """A skill a classifier thinks is missing from the catalog."""

    id: str
    name: str
    description: str
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """A classifier's answer for one tool: (skill id, confidence) best first."""

    confidences: tuple[tuple[str, float], ...]
    classifier: str
    proposal: ProposedSkill | None = None


class Classifier(Protocol):
    """Classifies one tool given its stored vector. Thread-safe: batch runs call ``classify``
    from worker threads after one ``prepare``."""

    @property
    def name(self) -> str: ...

    def prepare(self) -> None:
        """Load what the classifier needs (skill vectors); called once per run."""
        ...

    def classify(self, tool: Tool, vector: Vector | None) -> Verdict:
        """Raises: ToolscoutError when the tool cannot be classified."""
        ...


def calibrated(sims: NDArray[np.float32], model: Logistic | None = None) -> NDArray[np.float64]:
    """Confidences for a row of similarities (one per skill), by ``model`` (default: the
    packaged classifier fit)."""
    s = sims.astype(np.float64)
    if len(s) == 0:
        return s
    order = np.argsort(-s)
    best_other = np.full_like(s, s[order[0]])
    if len(s) > 1:
        best_other[order[0]] = s[order[1]]
    else:
        best_other[order[0]] = 0.0
    fitted = model if model is not None else packaged_skill_fit().classifier
    return fitted(np.stack([s, s - best_other], axis=1))


class OfflineClassifier:
    """Embedding similarity to skill profiles, calibrated (no LLM, no network)."""

    name = "offline"

    def __init__(self, skills: SkillStore, embedder: Embedder, fit: SkillFit | None = None) -> None:
        self.skills = skills
        self.embedder = embedder
        #: The fitted confidence map (the packaged one unless given).
        self.fit = fit if fit is not None else packaged_skill_fit()
        self._ids: list[str] = []
        self._matrix: Vector = np.zeros((0, embedder.dim), dtype=np.float32)

    def prepare(self) -> None:
        refresh_profiles(self.skills, self.embedder)
        active = {s.id for s in self.skills.list_skills(include_inactive=False)}
        profiles = self.skills.skill_profiles()
        self._ids = sorted(i for i in profiles if i in active)
        self._matrix = (
            np.stack([profiles[i][1] for i in self._ids])
            if self._ids
            else np.zeros((0, self.embedder.dim), dtype=np.float32)
        )

    def classify(self, tool: Tool, vector: Vector | None) -> Verdict:
        if vector is None:
            raise ToolscoutError(f"tool {tool.id!r} has no vector in the index; re-index it")
        if not self._ids:
            return Verdict((), self.name)
        conf = calibrated(self._matrix @ vector, self.fit.classifier)
        order = np.argsort(-conf, kind="stable")[:MAX_SKILLS]
        return Verdict(tuple((self._ids[i], float(conf[i])) for i in order), self.name)


def to_assignments(
    tool_id: str, verdict: Verdict, keep_floor: float | None = None
) -> tuple[SkillAssignment, ...]:
    """1-3 skills: the most confident always, others at least ``keep_floor`` (default: the
    packaged fit's); the first is primary when it reaches PRIMARY_FLOOR (otherwise the tool is
    uncategorized: no primary)."""
    if keep_floor is None:
        keep_floor = packaged_skill_fit().keep_floor
    ranked = sorted(verdict.confidences, key=lambda p: (-p[1], p[0]))[:MAX_SKILLS]
    kept = [p for i, p in enumerate(ranked) if i == 0 or p[1] >= keep_floor]
    return tuple(
        SkillAssignment(
            tool_id, sid, round(min(1.0, max(0.0, c)), 6), i == 0 and c >= PRIMARY_FLOOR
        )
        for i, (sid, c) in enumerate(kept)
    )


def select_tools(store: Store, *, everything: bool, ids: Sequence[str] | None = None) -> list[str]:
    """Tool ids to classify: those never classified, failed, or changed since (all with
    ``everything``), restricted to ``ids`` when given."""
    hashes = store.tools.hashes()
    if ids is not None:
        hashes = {i: hashes[i] for i in ids if i in hashes}
    if everything:
        return sorted(hashes)
    state = store.skills.classification_state()
    return sorted(
        tid for tid, (content, _) in hashes.items() if state.get(tid) != (content, "done")
    )


def _classify_one(
    classifier: Classifier, tool: Tool, vector: Vector | None
) -> tuple[Tool, Verdict | Exception]:
    try:
        return tool, classifier.classify(tool, vector)
    except Exception as exc:  # one bad tool must not stop the batch
        return tool, exc


def run_batch(
    store: Store,
    classifier: Classifier,
    tool_ids: Sequence[str],
    *,
    concurrency: int = 4,
    progress: Callable[[ClassifyProgress], None] | None = None,
    on_proposal: Callable[[str, ProposedSkill], object] | None = None,
    keep_floor: float | None = None,
) -> ClassifyReport:
    """Classify ``tool_ids`` with ``concurrency`` worker threads; write assignments per chunk
    (one transaction each) and recompute the centroids of skills whose membership changed.

    A tool that fails is logged and recorded as failed; the next run retries it.
    Raises: StoreError.
    """
    total, done, failed = len(tool_ids), 0, []
    classifier.prepare()
    changed: set[str] = set()
    if progress:
        progress(ClassifyProgress(0, total, 0))

    def tick(tool_id: str, ok: bool) -> None:
        nonlocal done
        done += 1
        if not ok:
            failed.append(tool_id)
        if progress:
            progress(ClassifyProgress(done, total, len(failed)))

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for start in range(0, total, CHUNK):
            chunk = list(tool_ids[start : start + CHUNK])
            tools = store.tools.get_many(chunk)
            vectors = store.vectors(chunk)
            present = [tools[t] for t in chunk if t in tools]
            done += len(chunk) - len(present)  # deleted meanwhile: nothing to do
            pairs = [(t, vectors.get(t.id)) for t in present]
            job = Classification(store, classifier, pool, keep_floor, on_proposal)
            changed |= job.run(pairs, tick)
    recompute_centroids(store, changed)
    return ClassifyReport(done, total, len(failed), failed)


@dataclass(frozen=True)
class Classification:
    """Classifies tools on a pool and stores their assignments, one transaction a call."""

    store: Store
    classifier: Classifier
    pool: ThreadPoolExecutor
    keep_floor: float | None = None
    on_proposal: Callable[[str, ProposedSkill], object] | None = None

    def run(
        self,
        pairs: Sequence[tuple[Tool, Vector | None]],
        tick: Callable[[str, bool], None] | None = None,
    ) -> set[str]:
        """Classify each (tool, its vector) and store the verdicts; a tool that fails is
        logged and recorded as failed. ``tick`` hears of each tool (its id, whether it was
        classified). Returns the skills whose membership changed (their centroids are the
        caller's to recompute). Raises: StoreError."""
        outcomes = self.pool.map(
            _classify_one,
            [self.classifier] * len(pairs),
            [t for t, _ in pairs],
            [v for _, v in pairs],
        )
        batch: list[Classified] = []
        for tool, outcome in outcomes:
            if isinstance(outcome, Exception):
                log.warning("classifying %s failed: %s", tool.id, outcome)
                self.store.skills.mark_classify_failed(tool.id, tool.content_hash, str(outcome))
            else:
                assigned = to_assignments(tool.id, outcome, self.keep_floor)
                batch.append(Classified(tool.id, tool.content_hash, outcome.classifier, assigned))
                if outcome.proposal is not None and self.on_proposal is not None:
                    self.on_proposal(tool.id, outcome.proposal)
            if tick:
                tick(tool.id, not isinstance(outcome, Exception))
        return self.store.skills.replace_assignments(batch)


class WrittenClassifier:
    """Classifies tools as an index run writes them (``IndexWriter.write``'s ``written``
    hook): each chunk once its transaction has committed, with the vectors in hand, while the
    next chunk embeds. The skills whose membership changed are collected in ``changed``; their
    centroids are left to the end of the run (once, not once a chunk). A tool classified here
    is one the run's repair (``SkillService.after_index``) then finds classified."""

    def __init__(
        self,
        store: Store,
        classifier: Classifier,
        *,
        concurrency: int,
        keep_floor: float | None,
        on_proposal: Callable[[str, ProposedSkill], object] | None,
    ) -> None:
        self.changed: set[str] = set()
        self._args = (store, classifier, max(1, concurrency), keep_floor, on_proposal)
        self._job: Classification | None = None

    def __call__(self, entries: Sequence[IndexEntry]) -> None:
        """Raises: StoreError, EmbedError (loading the skill profiles)."""
        if self._job is None:
            store, classifier, workers, keep_floor, on_proposal = self._args
            classifier.prepare()
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolscout-skills")
            self._job = Classification(store, classifier, pool, keep_floor, on_proposal)
        self.changed |= self._job.run([(e.tool, e.vector) for e in entries])

    def close(self) -> None:
        if self._job is not None:
            self._job.pool.shutdown()
