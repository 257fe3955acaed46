"""The default method's learnt scorers: small boosted-tree ensembles stored as JSON
(never pickled), trained by ``benchmarks/train_default.py`` and evaluated with numpy.

A scorer file is data from outside the code: every tree is checked (indices in range,
depth bounded, no cycle) before it is used, and its feature names must be the ones this
version computes (:data:`~sst_cleaner.engine.methods.sitestats.hybrid.FEATURE_NAMES`).
"""

from __future__ import annotations

import json
import os
import struct
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Optional, Sequence

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

try:  # built beside the engine where Cython and a compiler were found
    from sst_cleaner.engine.methods.sitestats._trees import leaf_indices as _c_leaf_indices
except ImportError:
    _c_leaf_indices = None  # type: ignore[assignment]


def _feature_names() -> tuple:
    # imported when a scorer is built, not with this module: hybrid imports this module
    from sst_cleaner.engine.methods.sitestats.hybrid import FEATURE_NAMES

    return FEATURE_NAMES


class TreeEnsemble:
    """Additive regression trees on the feature vector, logistic link.

    JSON: ``{"features": [names], "baseline": b, "trees": [{"feature": [...],
    "threshold": [...], "left": [...], "right": [...], "leaf": [...], "value": [...]}]}``.
    A row goes left when ``x[feature] <= threshold`` (NaN never occurs: every feature is a
    number by construction). A tree's ``feature`` indexes the file's ``features``, which
    must be the names this version computes, in any order: each is placed by name.
    """

    #: deepest tree accepted (a scorer file is data: a cycle or a very deep tree is refused)
    MAX_DEPTH = 12

    def __init__(self, spec: dict, names: Optional[tuple] = None):
        import numpy as np

        if names is None:
            names = _feature_names()
        given = list(spec["features"])
        if len(given) != len(names) or set(given) != set(names):
            raise ValueError("scorer was trained on other features than this version computes")
        self.baseline = float(spec["baseline"])
        self.n_features = len(names)
        trees = [self._checked(t, len(names)) for t in spec["trees"]]
        column = {name: i for i, name in enumerate(names)}
        placed = [column[name] for name in given]  # the file's feature i -> the row's column
        trees = [([placed[f] for f in t[0]],) + t[1:] for t in trees]
        # Every tree is laid out as a *perfect* binary tree of the ensemble's depth D
        # (node i has children 2i+1, 2i+2; a leaf shallower than D is copied down, under
        # a split that sends everything left), so a batch walks all trees at once with
        # D gathers and no per-tree bookkeeping.
        depth = max((self._depth(t) for t in trees), default=0)
        n_internal, n_leaves = 2**depth - 1, 2**depth
        k = max(1, len(trees))
        feature = np.zeros((k, max(1, n_internal)), dtype=np.intp)
        threshold = np.full((k, max(1, n_internal)), np.inf)
        leaf_value = np.zeros((k, n_leaves))
        for ti, (feat, thr, left, right, leaf, value) in enumerate(trees):
            stack = [(0, 0, 0)]  # (node of the tree, slot in the perfect tree, level)
            while stack:
                node, slot, level = stack.pop()
                if level == depth:
                    leaf_value[ti, slot - n_internal] = value[node]
                elif leaf[node]:
                    # x > inf is never true: every row goes left, to the copy of the leaf
                    stack.append((node, 2 * slot + 1, level + 1))
                else:
                    feature[ti, slot] = feat[node]
                    threshold[ti, slot] = thr[node]
                    stack.append((left[node], 2 * slot + 1, level + 1))
                    stack.append((right[node], 2 * slot + 2, level + 1))
        self.depth = depth
        self.n_trees = k
        self.n_internal = n_internal
        self._stride = max(1, n_internal)  # row length of the internal-node arrays
        self._feature = feature.ravel()
        self._threshold = threshold.ravel()
        self._leaf_value = leaf_value.ravel()
        self._n_leaves = n_leaves

    @staticmethod
    def _checked(t: dict, n_features: int) -> tuple:
        feat, thr = list(map(int, t["feature"])), list(map(float, t["threshold"]))
        left, right = list(map(int, t["left"])), list(map(int, t["right"]))
        leaf, value = list(map(bool, t["leaf"])), list(map(float, t["value"]))
        n = len(feat)
        if n == 0 or not all(len(a) == n for a in (thr, left, right, leaf, value)):
            raise ValueError("malformed tree")
        for i in range(n):  # leaves too: a file with any index out of range is corrupt
            if not 0 <= feat[i] < n_features:
                raise ValueError("tree feature index out of range")
            if not (0 <= left[i] < n and 0 <= right[i] < n):
                raise ValueError("tree child index out of range")
        return feat, thr, left, right, leaf, value

    @classmethod
    def _depth(cls, t: tuple) -> int:
        """Depth of the deepest leaf; a tree deeper than MAX_DEPTH (or a cycle) is refused."""
        _feat, _thr, left, right, leaf, _value = t
        deepest = 0
        stack = [(0, 0)]
        while stack:
            node, level = stack.pop()
            if level > cls.MAX_DEPTH:
                raise ValueError(f"tree deeper than {cls.MAX_DEPTH} levels (or cyclic)")
            if leaf[node]:
                deepest = max(deepest, level)
            else:
                stack.append((left[node], level + 1))
                stack.append((right[node], level + 1))
        return deepest

    def predict(self, X: npt.ArrayLike) -> np.ndarray:
        """Probability for each row of ``X`` (rows = sentences, columns = FEATURE_NAMES).

        A row goes left when ``x[feature] <= threshold`` (NaN never occurs: every feature
        is a number by construction).
        """
        import numpy as np

        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or not len(X):
            return np.zeros(0)
        return self._walk(X.ravel(), *X.shape)

    def predict_rows(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        """:meth:`predict` of plain rows of equal length, read into one flat array
        without the nested-list conversion (the method scores every sentence of every
        page): each row is packed as C doubles in one call (the same doubles numpy
        reads, without its per-value iteration) and the rows' bytes are joined."""
        import numpy as np

        n = len(rows)
        if not n:
            return np.zeros(0)
        n_cols = len(rows[0])
        if _c_leaf_indices is not None and n_cols == self.n_features:
            # the compiled walk reads the rows as they are (see _trees.pyx)
            leaf = np.empty((n, self.n_trees), dtype=np.intp)
            _c_leaf_indices(
                rows if type(rows) is list else list(rows),
                n_cols,
                self._feature,
                self._threshold,
                self.n_trees,
                self._stride,
                self.depth,
                self._n_leaves,
                self.n_internal,
                leaf,
            )
            return self._probability(leaf)
        pack = _row_packer(n_cols)
        return self._walk(np.frombuffer(b"".join([pack(*row) for row in rows]), float, n * n_cols), n, n_cols)

    def _walk(self, flat_x: np.ndarray, n: int, n_cols: int) -> np.ndarray:
        import numpy as np

        k = self.n_trees
        row_base = np.arange(0, n * n_cols, n_cols, dtype=np.intp)[:, None]
        tree_base = np.arange(0, k * self._stride, self._stride, dtype=np.intp)
        # ``at`` is a node's index in the flat arrays, tree_base + slot; slot -> 2 slot +
        # 1 + right is at -> 2 at + (1 - tree_base) + right, without leaving the flat index
        down = 1 - tree_base
        feature, threshold = self._feature, self._threshold
        at = np.broadcast_to(tree_base, (n, k))
        if self.depth:
            # every row starts at the roots: their features are columns, read in one gather
            roots = tree_base
            go_right = flat_x.reshape(n, n_cols).take(feature.take(roots), axis=1) > threshold.take(roots)
            at = 2 * roots + down + go_right
        for _ in range(self.depth - 1):
            idx = feature.take(at)
            idx += row_base
            go_right = flat_x.take(idx) > threshold.take(at)
            at *= 2  # in place: ``at`` is this walk's own array from the first level on
            at += down
            at += go_right
        # the leaf of slot s of tree t sits at t * n_leaves + s - n_internal
        leaf = at + (np.arange(k, dtype=np.intp) * (self._n_leaves - self._stride) - self.n_internal)
        return self._probability(leaf)

    def _probability(self, leaf: np.ndarray) -> np.ndarray:
        """The logistic link of the baseline plus the values of each row's leaves
        (``leaf``: rows x trees, indices into the flat leaf values)."""
        import numpy as np

        z = self.baseline + self._leaf_value.take(leaf).sum(axis=1)
        return 1.0 / (1.0 + np.exp(-z))


@lru_cache(maxsize=8)
def _row_packer(n_cols: int) -> Callable[..., bytes]:
    """Packs a row of ``n_cols`` numbers as native doubles (a row of another length is
    refused by struct)."""
    return struct.Struct(f"={n_cols}d").pack


_SCORER_CACHE: dict = {}


class Scorers:
    """The default method's learnt scorers: one for pages whose site has evidence, one for
    pages judged alone (a file with only the first serves both)."""

    def __init__(self, spec: dict):
        self.site = TreeEnsemble(spec["stage1"])
        self.page = TreeEnsemble(spec["page"]) if "page" in spec else self.site

    def predict(self, rows: list, alone: bool) -> list[float]:
        """The probability of each row, as plain floats: the method compares and sums
        them one by one, where numpy scalars are slow."""
        return (self.page if alone else self.site).predict_rows([r[2] for r in rows]).tolist()


def load_scorer(path: Optional[str] = None) -> Scorers:
    """The learnt scorers shipped with the package (``data/default_scorer.json``)."""
    if path is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "default_scorer.json")
    hit = _SCORER_CACHE.get(path)
    if hit is None:
        with open(path, "r", encoding="utf-8") as fh:
            hit = Scorers(json.load(fh))
        _SCORER_CACHE[path] = hit
    return hit
