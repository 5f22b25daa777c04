"""Isotonic regression (pool adjacent violators), the knots search/rankcal.py interpolates."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def pav(y: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[list[float], list[float]]:
    """The non-decreasing fit of ``y`` (already in order) with weights ``w``, as blocks: each
    block's value and how many of the rows it holds, in order."""
    values: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []  # rows per block
    for v, wt in zip(y.tolist(), w.tolist(), strict=True):
        values.append(v)
        weights.append(wt)
        sizes.append(1)
        while len(values) > 1 and values[-2] >= values[-1]:
            total = weights[-2] + weights[-1]
            merged = (values[-2] * weights[-2] + values[-1] * weights[-1]) / max(total, 1e-12)
            values[-2:] = [merged]
            weights[-2:] = [total]
            sizes[-2:] = [sizes[-2] + sizes[-1]]
    return values, [float(s) for s in sizes]


def isotonic_knots(
    p: NDArray[np.float64],
    y: NDArray[np.float64],
    w: NDArray[np.float64],
    *,
    min_weight: float = 30.0,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Knots ``(x, y)`` of the non-decreasing map from ``p`` to the weighted share of ``y`` = 1:
    each PAV block becomes one knot at its weighted mean ``p``. Rows are first pooled into bins of
    at least ``min_weight`` (neighbours in ``p``) so that a handful of rows at either end cannot
    pin the map to 0 or 1."""
    order = np.argsort(p, kind="stable")
    p, y, w = p[order], y[order], w[order]
    keep = w > 0
    p, y, w = p[keep], y[keep], w[keep]
    if p.size == 0:
        return (0.0, 1.0), (0.0, 1.0)
    # Bins of consecutive rows holding at least min_weight each.
    cum = np.cumsum(w)
    bin_of = np.minimum((cum // min_weight).astype(np.int64), int(cum[-1] // min_weight) - 1)
    bin_of = np.maximum(bin_of, 0)
    size = np.bincount(bin_of, weights=w)
    mean_y = np.bincount(bin_of, weights=w * y) / size
    mean_p = np.bincount(bin_of, weights=w * p) / size
    values, counts = pav(mean_y, size)
    # Map each bin to its block, then one knot per block at the block's weighted mean p.
    block = np.repeat(np.arange(len(values)), np.array(counts, dtype=np.int64))
    weight = np.bincount(block, weights=size)
    xs = np.bincount(block, weights=size * mean_p) / weight
    return tuple(float(v) for v in xs), tuple(float(v) for v in values)
