"""LightGBM's text model, evaluated with numpy: the learned ranker's trees (search/rank.py).

Each tree's exit leaf is found from bit masks, as QuickScorer does (Lucchese et al., SIGIR
2015): number a tree's leaves left to right; a split whose test fails (the value is above its
threshold, so the walk goes right) rules out every leaf of its left subtree; the exit leaf is
the leftmost leaf no failed test rules out. The tests that fail for a value of feature f are
those of f's splits with a threshold below it, a prefix of f's splits sorted by threshold, so
the masks of every prefix are combined once at load (:attr:`Forest.table`) and a row needs one
binary search per feature, one gather of a row of masks per feature, one AND across features,
and the lowest set bit of each tree's mask: about a third of the time of walking the same
trees level by level (docs/benchmarks/ranking.md). The masks are combined as 64-bit words, four
trees a word, and columns that every row shares (a request's own features, the same for all
its candidates) are searched and combined once for all rows. A column that repeats another in
every row (a request of one intent's whole-request columns are its vector leg's) is searched
with it once, among both features' splits merged, and gathered as one row of masks made for
the pair when first asked.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from toolscout.errors import ConfigError

#: Index of the lowest set bit of every 16-bit mask (0 for 0, which never occurs: some leaf is
#: always reached).
_LOWEST = np.array([(m & -m).bit_length() - 1 if m else 0 for m in range(1 << 16)], np.uint8)
_SEARCH = np.ndarray.searchsorted


@dataclass(frozen=True)
class Forest:
    """A forest packed for mask evaluation (see the module docstring)."""

    #: The features some split reads, and for each its split thresholds in ascending order.
    features: tuple[int, ...]
    thresholds: tuple[NDArray[np.float64], ...]
    #: Where each feature's rows start in :attr:`table`.
    offsets: NDArray[np.int64]
    #: One row per prefix of each feature's sorted splits (the empty prefix first): per tree, the
    #: leaves (bit j: the j-th from the left) those failed tests leave possible.
    table: NDArray[np.uint16]
    #: Leaf values, ``leaves`` per tree, left to right (unused places 0).
    values: NDArray[np.float64]
    leaves: int
    #: Where each tree's leaves start in :attr:`values`.
    starts: NDArray[np.int64]

    @property
    def size(self) -> int:
        """How many trees the forest holds."""
        return self.values.size // self.leaves

    @cached_property
    def _wide(self) -> NDArray[np.uint64]:
        """:attr:`table` with its rows padded to whole 64-bit words (four trees a word, the
        padding's leaves all possible), read as words: one AND covers four trees."""
        pad = (-self.table.shape[1]) % 4
        table = np.pad(self.table, ((0, 0), (0, pad)), constant_values=0xFFFF)
        return np.ascontiguousarray(table).view(np.uint64)

    @cached_property
    def _all_leaves(self) -> NDArray[np.uint64]:
        """One row of :attr:`_wide` with every leaf possible (no test failed yet)."""
        return np.full(self._wide.shape[1], np.uint64(0xFFFFFFFFFFFFFFFF))

    @cached_property
    def _cuts(self) -> tuple[list[float], ...]:
        """:attr:`thresholds` as lists, for a value every row shares (one bisection, no array)."""
        return tuple(c.tolist() for c in self.thresholds)

    @cached_property
    def _plans(self) -> dict[tuple[int, Copies], _Plan]:
        """:class:`_Plan` per count of shared columns and copied columns, made when first
        asked."""
        return {}

    def predict(
        self, x: NDArray[np.float64], shared: int = 0, copies: Copies = ()
    ) -> NDArray[np.float64]:
        """The sum of the trees' leaf values for each row of ``x`` (LightGBM's, except that it
        reads a value within 1e-35 of 0 as 0, which no ranker feature takes). ``shared``: the
        first ``shared`` columns hold one value for every row (the request's own features),
        read from the first row once. ``copies``: pairs (column, original) whose columns hold
        the same values in every row; each pair is searched once, in both features' splits
        merged, and gathered as one row of masks."""
        n = x.shape[0]
        if n == 0:
            return np.zeros(0)
        if not self.features:
            return np.full(n, self.values.reshape(-1, self.leaves)[:, 0].sum())
        plan = self._plans.get((shared, copies))
        if plan is None:
            plan = self._plans[shared, copies] = _plan(self, shared, copies)
        table = plan.table
        if plan.own.size:
            # One row per feature: the bisections read them in turn (the array's method, by
            # map: np.searchsorted adds a Python frame per call).
            columns = x.T[plan.run] if plan.run is not None else x.T[plan.own]
            rows = np.array(list(map(_SEARCH, plan.cuts, columns)))
            rows += plan.offsets
            masks = np.bitwise_and.reduce(table.take(rows, axis=0), axis=0)
        else:
            masks = np.empty((n, table.shape[1]), dtype=np.uint64)
            masks[:] = self._all_leaves
        if plan.common:
            first = x[0].tolist()
            at = [o + bisect_left(self._cuts[j], first[f]) for j, f, o in plan.common]
            masks &= np.bitwise_and.reduce(table.take(at, axis=0), axis=0)
        # Each tree's exit leaf, as an index into the leaf values.
        leaf = np.add(_LOWEST.take(masks.view(np.uint16)[:, : self.size]), self.starts)
        # np.add.reduce is what ``.sum(axis=1)`` runs, without its Python wrapper.
        out: NDArray[np.float64] = np.add.reduce(self.values.take(leaf), axis=1)
        return out


#: Pairs (column, original) of columns that hold the same values in every row.
Copies = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Plan:
    """How :meth:`Forest.predict` reads rows with a given count of shared columns and copied
    columns: the table of masks it gathers from (the forest's, then a block per merged pair),
    the features the rows share (index among the forest's, column, first row in the table),
    and the columns read per row with their thresholds and first rows in the table."""

    table: NDArray[np.uint64]
    common: tuple[tuple[int, int, int], ...]
    own: NDArray[np.intp]
    #: ``own`` as a slice when its columns are consecutive (read without a copy).
    run: slice | None
    cuts: tuple[NDArray[np.float64], ...]
    offsets: NDArray[np.int64]


def _plan(forest: Forest, shared: int, copies: Copies) -> _Plan:
    """The :class:`_Plan` of rows whose first ``shared`` columns every row shares, and whose
    ``copies`` repeat other columns: a copied column that splits read beside its original is
    not searched; its original is searched in both features' splits."""
    wide, where = forest._wide, {f: j for j, f in enumerate(forest.features)}
    twin = {o: c for c, o in copies if min(c, o) >= shared and c in where and o in where}
    columns: list[int] = []
    cuts: list[NDArray[np.float64]] = []
    offsets: list[int] = []
    blocks = [wide]
    for j, f in enumerate(forest.features):
        if f < shared or f in twin.values():
            continue
        columns.append(f)
        if f in twin:
            c = where[twin[f]]
            pair = (forest.thresholds[j], forest.thresholds[c])
            merged, block = _merged(wide, pair, (int(forest.offsets[j]), int(forest.offsets[c])))
            cuts.append(merged)
            offsets.append(sum(len(b) for b in blocks))
            blocks.append(block)
        else:
            cuts.append(forest.thresholds[j])
            offsets.append(int(forest.offsets[j]))
    consecutive = bool(columns) and columns == list(range(columns[0], columns[-1] + 1))
    return _Plan(
        np.concatenate(blocks) if len(blocks) > 1 else wide,
        tuple((j, f, int(forest.offsets[j])) for j, f in enumerate(forest.features) if f < shared),
        np.array(columns, dtype=np.intp),
        slice(columns[0], columns[-1] + 1) if consecutive else None,
        tuple(cuts),
        np.array(offsets, dtype=np.int64)[:, None],
    )


def _merged(
    wide: NDArray[np.uint64],
    cuts: tuple[NDArray[np.float64], NDArray[np.float64]],
    offsets: tuple[int, int],
) -> tuple[NDArray[np.float64], NDArray[np.uint64]]:
    """Two features' splits merged, for a value both take, and one row of masks per prefix of
    them: a value's place among the merged thresholds says how many of each feature's lie
    below it (the first that many of the merged ones), so its row is the AND of both
    features' rows for those prefixes."""
    both = np.concatenate(cuts)
    order = np.argsort(both, kind="stable")
    firsts = np.concatenate([[0], np.cumsum(order < cuts[0].size)])
    seconds = np.arange(both.size + 1) - firsts
    return both[order], wide[offsets[0] + firsts] & wide[offsets[1] + seconds]


def parse_lightgbm(text: str) -> Forest:
    """Read LightGBM's text model (numerical splits only, as the fit script trains them; at most
    16 leaves per tree).

    Raises:
        ConfigError: the text is not such a model.
    """
    blocks = [b.strip() for b in text.split("\n\n") if b.strip().startswith("Tree=")]
    if not blocks:
        raise ConfigError("ranker model holds no trees")
    trees = [_tree(dict(ln.split("=", 1) for ln in b.splitlines() if "=" in ln)) for b in blocks]
    width = max(len(values) for _, values in trees)
    values = np.zeros((len(trees), width), dtype=np.float64)
    # (feature, threshold, tree, mask) of every split.
    splits: list[tuple[int, float, int, int]] = []
    for t, (tree_splits, leaf_values) in enumerate(trees):
        values[t, : len(leaf_values)] = leaf_values
        splits.extend((f, thr, t, mask) for f, thr, mask in tree_splits)
    features = sorted({f for f, _, _, _ in splits})
    table: list[NDArray[np.uint16]] = []
    cuts: list[NDArray[np.float64]] = []
    offsets: list[int] = []
    for f in features:
        mine = sorted((thr, t, mask) for g, thr, t, mask in splits if g == f)
        offsets.append(sum(len(c) + 1 for c in cuts))
        cuts.append(np.array([thr for thr, _, _ in mine], dtype=np.float64))
        row = np.full(len(trees), 0xFFFF, dtype=np.uint16)
        table.append(row.copy())
        for _, t, mask in mine:
            row[t] &= mask
            table.append(row.copy())
    return Forest(
        tuple(features),
        tuple(cuts),
        np.array(offsets, dtype=np.int64),
        np.vstack(table) if table else np.zeros((0, len(trees)), dtype=np.uint16),
        values.ravel(),
        width,
        np.arange(len(trees), dtype=np.int64) * width,
    )


def _tree(kv: dict[str, str]) -> tuple[list[tuple[int, float, int]], list[float]]:
    """One tree's splits as (feature, threshold, mask of the leaves still possible when the test
    fails) and its leaf values, leaves numbered left to right.

    Raises:
        ConfigError: categorical splits, or more than 16 leaves.
    """
    if any(int(d) & 1 for d in kv.get("decision_type", "").split()):
        raise ConfigError("ranker model has categorical splits; this code reads numerical ones")
    leaf_values = [float(v) for v in kv["leaf_value"].split()]
    if len(leaf_values) > 16:
        raise ConfigError(f"a ranker tree has {len(leaf_values)} leaves; this code reads <= 16")
    split = [int(v) for v in kv.get("split_feature", "").split()]
    left = [int(v) for v in kv.get("left_child", "").split()]
    right = [int(v) for v in kv.get("right_child", "").split()]
    threshold = [float(v) for v in kv.get("threshold", "").split()]
    if not split:
        return [], leaf_values

    def under(node: int) -> list[int]:
        """The leaves under ``node``, left to right (LightGBM's leaf j is child ``~j``)."""
        return [~node] if node < 0 else under(left[node]) + under(right[node])

    place = {leaf: j for j, leaf in enumerate(under(0))}
    out: list[tuple[int, float, int]] = []
    for node in range(len(split)):
        ruled_out = sum(1 << place[leaf] for leaf in under(left[node]))
        out.append((split[node], threshold[node], 0xFFFF & ~ruled_out))
    by_place = [0.0] * len(leaf_values)
    for leaf, j in place.items():
        by_place[j] = leaf_values[leaf]
    return out, by_place
