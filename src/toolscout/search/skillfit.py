"""Fitted skill constants: stage-1 skill scores and the offline classifier's confidences.

They live in the ``"skills"`` section of ``search/calibration.json``, beside the hit scores and
the ``no_match`` thresholds, so that every constant learned from data sits in one packaged file
with the embedding model it was fitted for (name and graph sha256), the data it was fitted on and
the date. ``python bench/fit/calibrate.py --write`` refits the whole file;
``python bench/fit/skill_scores.py --write`` refits this section alone.

Both maps are logistic models over features of cosine similarities:

* **classifier** (``skills/classify.py``): a tool against each skill's profile vector - ``sim``
  and ``margin`` (``sim`` minus the best ``sim`` of the other skills); with ``keep_floor``, the
  confidence a tool's second and third skills need;
* **stage 1** (``search/skillstage.py``): a request against each skill - ``sim`` and
  ``margin`` against the skill's vector (the centroid of its tools), and what the request's
  ``near_depth`` nearest tools say about the skill: ``near`` (the best cosine of one of its
  tools among them, or of the skill's own vector when that is closer; the last neighbour's
  cosine when neither is), ``near_gap`` (``near`` minus the
  first neighbour's cosine) and ``votes`` (the neighbours in the skill, each counted
  ``confidence / rank``);
* **coverage** (``search/skillstage.py``): the probability that the first ``k`` skills in
  stage-1 order hold the request's tool - ``share`` (their share of the summed stage-1 scores),
  ``next`` (the score of skill ``k + 1``), ``mass`` (the share of the request's nearest tools,
  weighted ``softmax(cosine / temperature)``, that belong to one of them), ``log_k`` and
  ``top`` (the request's cosine to its nearest tool: a request close to no tool, often a short
  conversational one, is one whose neighbours say less about where its tool is filed).
  Stage 1 adds skills in score order until this reaches the request's ``skill_coverage``.

**Another model.** Cosines of another embedding model mean something else, and the labelled
requests the packaged fit reads are not shipped with the package. So for another model the
constants are fitted on the indexed catalog itself (``skills/catalogfit.py``): each tool's name,
first sentence and a fragment of it serve as pseudo-requests whose answer is the tool's skills.
That fit is kept in the store's meta row ``skill_fit`` with the model's name and sha256 and what
it was fitted on (the skill set and the tool count), so a restart does not refit; it is redone
when the skills change or the catalog doubles or halves. Until an index has one (before tools
are next indexed or classified), the engine logs one warning and keeps the packaged constants:
skills still rank by the same evidence, but their 0..1 scores are approximate. With the model
they were fitted for, the packaged constants win over a catalog fit (docs/BENCHMARKS.md §3).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.errors import ConfigError
from toolscout.search.calibration import CALIBRATION_FILE, embedder_identity
from toolscout.store.base import Store

log = logging.getLogger("toolscout.skills")

STAGE1_FEATURES = ("sim", "margin", "near", "near_gap", "votes")
CLASSIFIER_FEATURES = ("sim", "margin")
COVERAGE_FEATURES = ("share", "next", "mass", "log_k", "top")
#: Softmax temperature over the nearest tools' cosines for the coverage model's ``mass``.
COVERAGE_TEMPERATURE = 0.05
REFIT = "python bench/fit/skill_scores.py --write"
#: The store's meta row that holds a catalog fit (JSON, :meth:`SkillFit.to_dict`).
META_KEY = "skill_fit"
PACKAGED = "packaged"
CATALOG = "catalog"
_WARNED: set[str] = set()


@dataclass(frozen=True)
class Logistic:
    """``sigmoid(features @ coef + intercept)`` over the named features."""

    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float

    def __call__(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """Probabilities for rows of ``x`` (one column per feature, in ``features`` order)."""
        z = x @ np.asarray(self.coef, dtype=np.float64) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "coef": [round(c, 6) for c in self.coef],
            "intercept": round(self.intercept, 6),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], expected: tuple[str, ...], what: str) -> Logistic:
        """Raises: ConfigError when the features differ from what this code computes."""
        features = tuple(str(f) for f in data["features"])
        if features != expected:
            raise ConfigError(
                f"calibration.json: skills.{what} uses features {list(features)}, this code "
                f"computes {list(expected)}; refit with `{REFIT}`"
            )
        coef = tuple(float(c) for c in data["coef"])
        if len(coef) != len(features):
            raise ConfigError(f"calibration.json: skills.{what}: {len(coef)} coefficients")
        return cls(features, coef, float(data["intercept"]))


@dataclass(frozen=True)
class SkillFit:
    """The fitted skill maps and what they were fitted for and on."""

    stage1: Logistic
    classifier: Logistic
    #: How many nearest tools stage 1 reads (``near``, ``near_gap``, ``votes``).
    near_depth: int
    #: A tool's second and third skills are kept when at least this confident.
    keep_floor: float
    fitted_for: str
    model_sha256: str | None
    #: The command, data and choices of the fit.
    provenance: str
    #: When it was fitted (ISO date).
    fitted_at: str
    #: P(the first k skills hold the request's tool); None (an older file): no early stop.
    coverage: Logistic | None = None
    #: Softmax temperature of the coverage model's ``mass`` feature.
    temperature: float = COVERAGE_TEMPERATURE
    #: ``PACKAGED`` (calibration.json) or ``CATALOG`` (fitted on an index's own tools).
    origin: str = PACKAGED
    #: A catalog fit's pseudo-requests (0 for the packaged fit).
    requests: int = 0
    #: What a catalog fit was fitted on: the skill set's fingerprint ...
    skill_set: str = ""
    #: ... and the number of tools.
    tools: int = 0

    def matches(self, embedder: Embedder) -> bool:
        """Whether these constants were fitted for ``embedder`` (same name, same graph)."""
        name, digest = embedder_identity(embedder)
        same_graph = self.model_sha256 is None or digest is None or digest == self.model_sha256
        return name == self.fitted_for and same_graph

    def status(self, embedder: Embedder) -> str:
        """``"fitted"`` (the packaged fit, for this model), ``"fitted for this model on N
        pseudo-requests"`` (a catalog fit), or what the constants were fitted for instead."""
        if self.matches(embedder):
            if self.origin == CATALOG:
                return f"fitted for this model on {self.requests} pseudo-requests"
            return "fitted"
        name, digest = embedder_identity(embedder)
        mine = f"{self.fitted_for} sha256 {(self.model_sha256 or '?')[:12]}"
        return f"approximate: fitted for {mine}, active {name} sha256 {(digest or '?')[:12]}"

    def check(self, embedder: Embedder) -> str:
        """:meth:`status`, logging a warning (once per process and case) when not fitted."""
        status = self.status(embedder)
        if not self.matches(embedder) and status not in _WARNED:
            _WARNED.add(status)
            log.warning(
                "skill scores are %s: skills still rank by closeness but their scores (and "
                "skill_threshold) are approximate until they are fitted on this catalog, "
                "which happens when tools are next indexed or classified "
                "(`toolscout skills classify`)",
                status,
            )
        return status

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "fitted_for": self.fitted_for,
            "model_sha256": self.model_sha256,
            "fitted_at": self.fitted_at,
            "provenance": self.provenance,
            "near_depth": self.near_depth,
            "keep_floor": self.keep_floor,
            "stage1": self.stage1.to_dict(),
            "classifier": self.classifier.to_dict(),
        }
        if self.coverage is not None:
            out["coverage"] = {**self.coverage.to_dict(), "temperature": self.temperature}
        if self.origin != PACKAGED:
            out["origin"] = self.origin
            out["basis"] = {
                "requests": self.requests,
                "skill_set": self.skill_set,
                "tools": self.tools,
            }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SkillFit:
        """Raises: ConfigError when the section is missing, malformed or of other features."""
        try:
            digest = data.get("model_sha256")
            cov = data.get("coverage")
            temperature = float(cov.get("temperature", COVERAGE_TEMPERATURE)) if cov else 0.0
            basis = data.get("basis") or {}
            return cls(
                Logistic.from_dict(data["stage1"], STAGE1_FEATURES, "stage1"),
                Logistic.from_dict(data["classifier"], CLASSIFIER_FEATURES, "classifier"),
                int(data["near_depth"]),
                float(data["keep_floor"]),
                str(data["fitted_for"]),
                str(digest) if digest else None,
                str(data.get("provenance", "")),
                str(data.get("fitted_at", "")),
                Logistic.from_dict(cov, COVERAGE_FEATURES, "coverage") if cov else None,
                temperature or COVERAGE_TEMPERATURE,
                str(data.get("origin", PACKAGED)),
                int(basis.get("requests", 0)),
                str(basis.get("skill_set", "")),
                int(basis.get("tools", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"calibration.json: the skills section is malformed: {exc}") from exc


def load_skill_fit(path: Path | None = None) -> SkillFit:
    """The ``skills`` section of the packaged calibration file (or of the file at ``path``).

    Raises:
        ConfigError: missing or malformed file or section.
    """
    if path is None:
        return packaged_skill_fit()
    return _parse(path.read_text(encoding="utf-8") if path.exists() else "", str(path))


@cache
def packaged_skill_fit() -> SkillFit:
    """The packaged fit, read once per process. Raises: ConfigError."""
    text = resources.files("toolscout.search").joinpath(CALIBRATION_FILE).read_text("utf-8")
    return _parse(text, CALIBRATION_FILE)


def _parse(text: str, where: str) -> SkillFit:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON: {exc}") from exc
    section = data.get("skills") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: no skills section; refit with `{REFIT}`")
    return SkillFit.from_dict(section)


def stored_skill_fit(store: Store) -> SkillFit | None:
    """The catalog fit kept in ``store``'s meta row, or None (none, or unreadable: logged).

    Raises: StoreError."""
    raw = store.get_meta(META_KEY)
    if raw is None:
        return None
    try:
        return SkillFit.from_dict(json.loads(raw))
    except (ConfigError, json.JSONDecodeError, AttributeError) as exc:
        log.warning("ignoring the stored skill fit (it is refitted at the next index run): %s", exc)
        return None


def resolve_skill_fit(store: Store, embedder: Embedder) -> SkillFit:
    """The constants to serve for ``embedder`` over ``store``: the packaged ones when they were
    fitted for it, else the store's catalog fit when it was, else the packaged ones
    (approximate). Reads the store only for another model than the packaged fit's.

    Raises: ConfigError (packaged file), StoreError."""
    packaged = packaged_skill_fit()
    if packaged.matches(embedder):
        return packaged
    stored = stored_skill_fit(store)
    return stored if stored is not None and stored.matches(embedder) else packaged
