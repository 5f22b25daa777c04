"""Skill vectors: the embedding of a skill's own text, and the centroid of its tools.

* The **profile** vector embeds what people wrote (name, description, keywords, example tool
  names). The classifier compares tools with it, and stage 1 uses it for skills with no tools.
* The **centroid** is the confidence-weighted, normalised mean of the member tools' vectors.
  It is recomputed for exactly the skills whose membership changed, when it changed (no timer).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import NDArray

from toolscout.embed.base import Embedder
from toolscout.models import Skill
from toolscout.search.document import readable_name
from toolscout.store.base import Store
from toolscout.store.roles import SkillStore

Vector = NDArray[np.float32]


def profile_text(skill: Skill) -> str:
    """The text embedded for a skill (tool-description-like, so it lands near its tools)."""
    parts = [f"{skill.name}: {skill.description}".strip()]
    if skill.keywords:
        parts.append("Keywords: " + ", ".join(skill.keywords) + ".")
    if skill.examples:
        parts.append("Tools: " + ", ".join(readable_name(e) for e in skill.examples) + ".")
    return " ".join(parts)


def profile_hash(skill: Skill) -> str:
    return hashlib.sha256(profile_text(skill).encode("utf-8")).hexdigest()


def refresh_profiles(skills: SkillStore, embedder: Embedder) -> int:
    """Embed every skill whose profile text changed since it was last embedded (one batch).

    Returns how many were embedded. Raises: EmbedError, StoreError.
    """
    known = skills.skill_profiles()
    stale = [
        s
        for s in skills.list_skills()
        if s.id not in known
        or known[s.id][0] != profile_hash(s)
        or known[s.id][1].shape != (embedder.dim,)
    ]
    if not stale:
        return 0
    vectors = embedder.embed([profile_text(s) for s in stale])
    for skill, vector in zip(stale, vectors, strict=True):
        skills.set_skill_profile(skill.id, vector, profile_hash(skill))
    return len(stale)


def weighted_centroid(
    members: Iterable[tuple[str, float]], vectors: Mapping[str, Vector]
) -> Vector | None:
    """Confidence-weighted mean of the members' vectors, L2-normalised; None without members."""
    rows: list[Vector] = []
    weights: list[float] = []
    for tool_id, confidence in members:
        vec = vectors.get(tool_id)
        if vec is not None and confidence > 0:
            rows.append(vec)
            weights.append(confidence)
    if not rows:
        return None
    mean = np.average(np.stack(rows), axis=0, weights=np.asarray(weights, dtype=np.float32))
    norm = float(np.linalg.norm(mean))
    if norm == 0.0:
        return None
    return (mean / norm).astype(np.float32)


def recompute_centroids(store: Store, skill_ids: Iterable[str]) -> int:
    """Recompute and store the centroids of ``skill_ids``; returns how many were written.

    Raises: StoreError.
    """
    ids = sorted(set(skill_ids))
    if not ids:
        return 0
    members = store.skills.skill_members(ids)
    tool_ids = sorted({t for rows in members.values() for t, _ in rows})
    vectors = store.vectors(tool_ids)
    store.skills.set_skill_vectors({sid: weighted_centroid(members[sid], vectors) for sid in ids})
    return len(ids)
