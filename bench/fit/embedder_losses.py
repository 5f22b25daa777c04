"""The optional loss terms of bench/fit/train_embedder.py beside its ranking loss.

* Distillation (``--teacher SPEC``): a stronger embedder's vectors of every training request
  and tool, computed once (:func:`teacher_vectors`, kept between runs with ``--teacher-cache``);
  the training loop compares the teacher's softmax over a batch's documents with the student's.
* The absolute cut-off (``--absolute W``, :func:`absolute_loss`): gold tools above one learnt
  cosine, the batch's closest wrong tool below it.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from embedder_data import Pair

#: The scale of every similarity a loss reads (the ranking loss's softmax included).
SCALE = 20.0


def copies_mask(batch: list[Pair], doc_ids: list[str]) -> Any:
    """``[i, j]`` is true when document ``j`` is request ``i``'s gold tool or a numbered copy of
    it (BFCL's ``Name#5`` rewordings of one function), which must not count as a wrong tool."""
    import torch

    def base(tool_id: str) -> str:
        return tool_id.split("#")[0]

    return torch.tensor([[base(t) == base(p.tool) for t in doc_ids] for p in batch])


def gold_and_closest_wrong(cos: Any, same: Any) -> tuple[Any, Any]:
    """Each request's cosine to its gold tool, and to the batch's closest wrong tool."""
    return cos.diagonal(), cos.masked_fill(same, -1.0).max(dim=1).values


def midpoint(cos: Any, same: Any) -> float:
    pos, neg = gold_and_closest_wrong(cos, same)
    return float(((pos + neg) / 2).mean())


def absolute_loss(cos: Any, same: Any, cutoff: Any) -> Any:
    """Make the raw cosine answer "does any tool fit?" on its own, across requests.

    The ranking loss only orders a request's candidates; abstention compares the closest
    tool's cosine with one cut-off for every request. So, for each request, its gold tool should
    lie above a shared cut-off and the closest *wrong* tool of the batch (what the request would
    find if its tool were not indexed) below it: a logistic loss on ``SCALE * (cos - cutoff)``,
    the cut-off learnt with the weights.
    """
    import torch

    softplus = torch.nn.functional.softplus
    pos, neg = gold_and_closest_wrong(cos, same)
    return (softplus(SCALE * (cutoff - pos)) + softplus(SCALE * (neg - cutoff))).mean() / 2


def teacher_vectors(
    args: argparse.Namespace, pairs: list[Pair], texts: dict[str, str]
) -> dict[str, np.ndarray]:
    """The teacher's vectors of every training request (keyed by text) and every training tool
    (keyed by ``"\\0" + tool id``), computed once before training."""
    from toolscout.embed.base import open_embedder

    queries = sorted({p.query for p in pairs})
    tools = sorted(texts)
    cache = args.teacher_cache
    if cache is not None and cache.exists():
        saved = np.load(cache)
        keys = [str(k) for k in saved["keys"]]
        same_teacher = "teacher" in saved.files and str(saved["teacher"]) == args.teacher
        if same_teacher and keys == queries + ["\0" + t for t in tools]:
            print(f"teacher vectors from {cache}", flush=True)
            return dict(zip(keys, saved["vectors"], strict=True))
    teacher = open_embedder(args.teacher, threads=args.threads)
    out = dict(
        zip(queries, np.asarray(teacher.embed_query(queries), dtype=np.float32), strict=True)
    )
    docs = np.asarray(teacher.embed([texts[t] for t in tools]), dtype=np.float32)
    out.update({"\0" + t: v for t, v in zip(tools, docs, strict=True)})
    if cache is not None:
        keys = queries + ["\0" + t for t in tools]
        np.savez(
            cache,
            teacher=np.array(args.teacher),
            keys=np.array(keys),
            vectors=np.stack([out[k] for k in keys]),
        )
    return out
