"""The site style tree (SST): the pages of a site merged into one tree of styles.

Yi, Liu & Li, "Eliminating Noisy Information in Web Pages for Data Mining" (KDD 2003),
section 3.2. Names follow the paper:

* a **style node** ``S = (Es, n)``: a sequence of element nodes and the number of pages
  that have this presentation style at this place (:class:`StyleNode`);
* an **element node** ``E = (TAG, Attr, Ss)``: a tag with its display attributes and the
  set of style nodes below it (:class:`ElementNode`). Leaf element nodes also carry
  their *actual content* (words, image sources, link targets), pooled over the pages
  that have them, as the statistics eq. 4/5 need.

Pages come in as page style trees (:mod:`.page_style_tree`); the SST's JSON form is in
:mod:`.style_tree_json`.

Site style tree (:class:`SiteStyleTree`, :meth:`SiteStyleTree.add_page`) merges pages
top-down as in 3.2, without recursion (an explicit stack of (element node, page node)
pairs). ``match="exact"`` is the paper: a child sequence matches a style node only when
it is the same sequence of (TAG, Attr). ``match="tolerant"`` aligns the page's child
sequence to each existing style node by longest common subsequence over the keys
(:func:`lcs_pairs`) and accepts the best one when (see :func:`tolerant_accept`)

* at least one child aligns, and
* either at most one child is unaligned on each side (page side: count; style side: the
  style's elements weighted by how often they occur in it), or both the page's share of
  aligned children and the style's weighted share are at least ``tolerance`` (0.6).

A tolerantly matched style node becomes the union of its pages' sequences (the
unaligned page children are inserted at their aligned position as new element nodes,
with per-position occurrence counts ``occ``), so an optional ad slot is one more
element node seen on fewer pages instead of a new branch that copies the whole subtree.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Optional

from sst_cleaner.engine.methods.sst.page_style_tree import ROOT_KEY, PageNode, key_attr, key_tag

#: above this many DP cells the LCS middle part is left unaligned (prefix/suffix still are)
_MAX_LCS_CELLS = 60_000


class ElementNode:
    """``E = (TAG, Attr, Ss)`` plus what the importance measures need.

    ``m``: pages containing E. ``leaf_n``: pages on which E was a leaf (its content then
    went into ``feats``; if some pages had children here instead, those pages are in
    ``styles`` and the leaf pages count as one more, empty, style: the sum of the page
    counts of E's styles is always ``m``). ``feats``: ``{feature: [S, T, df]}`` with
    ``S`` the feature's total count over the pages, ``T = sum_j c_j ln c_j`` and ``df``
    the number of pages having it: eq. 5's entropy is ``(ln S - T/S) / ln m``, so these
    three numbers are all it needs and they add up as pages come. Features over the cap
    are folded into ``rest_n`` (how many) and ``rest_num`` (their summed ``ln S - T/S``).
    """

    __slots__ = (
        "key",
        "styles",
        "style_index",
        "m",
        "leaf_n",
        "feats",
        "rest_n",
        "rest_num",
        "fwd",
        "dirty",
        "comp",
        "node_imp",
        "leaf_comp",
        "noisy",
        "has_noisy",
        "meaningful",
        "charset",
        "__weakref__",
    )

    def __init__(self, key: str):
        self.key = key
        self.styles: list[StyleNode] = []
        self.style_index: dict[tuple, StyleNode] = {}
        self.m = 0
        self.leaf_n = 0
        self.feats: dict[str, list] = {}
        self.rest_n = 0
        self.rest_num = 0.0
        self.fwd: Optional[ElementNode] = None  # set when merged into another node (3.6)
        self.dirty = True
        self.comp = 1.0
        self.node_imp = 1.0
        self.leaf_comp: Optional[float] = None
        self.noisy = False
        self.has_noisy = False
        self.meaningful = True
        #: cached 3.6 characteristic feature set (valid while the node is not dirty)
        self.charset: Optional[frozenset] = None

    @property
    def tag(self) -> str:
        return key_tag(self.key)

    @property
    def attr(self) -> str:
        return key_attr(self.key)

    def __repr__(self) -> str:
        return (
            f"ElementNode({self.key!r}, m={self.m}, styles={len(self.styles)}, "
            f"leaf_n={self.leaf_n}, comp={self.comp:.3f})"
        )


#: bumped by every 3.6 merge; a style node re-resolves its elements only after one
MERGE_EPOCH = [0]


def resolve(e: ElementNode) -> ElementNode:
    """Follow 3.6 merge forwarding (``e1`` and ``e2`` become pointers to the merged node)."""
    while e.fwd is not None:
        e = e.fwd
    return e


class StyleNode:
    """``S = (Es, n)``; ``occ[i]``: pages of this style on which element ``i`` was present
    (always ``n`` with exact matching; smaller for optional slots with tolerant matching)."""

    __slots__ = ("elements", "n", "occ", "keys", "_counter", "_epoch")

    def __init__(self, elements: list, n: int = 0, occ: Optional[list] = None):
        self.elements: list[ElementNode] = elements
        self.n = n
        self.occ: list[int] = occ if occ is not None else [n] * len(elements)
        self.keys: tuple = tuple(e.key for e in elements)
        self._counter: Optional[Counter] = None
        self._epoch = -1

    def resolved(self) -> list:
        """The element nodes, with merge forwarding followed (and written back)."""
        els = self.elements
        epoch = MERGE_EPOCH[0]
        if self._epoch != epoch:
            for i, e in enumerate(els):
                if e.fwd is not None:
                    els[i] = resolve(e)
            self._epoch = epoch
        return els

    def counter(self) -> Counter:
        if self._counter is None:
            self._counter = Counter(self.keys)
        return self._counter

    def set_elements(self, elements: list, occ: list) -> None:
        self.elements = elements
        self.occ = occ
        self.keys = tuple(e.key for e in elements)
        self._counter = None
        self._epoch = -1

    def __repr__(self) -> str:
        return f"StyleNode({'-'.join(key_tag(k) for k in self.keys)}, n={self.n})"


def lcs_pairs(a: tuple, b: tuple) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b`` (equal items).

    The common prefix and suffix are taken first (page sequences mostly differ in the
    middle); the rest is a plain dynamic programme, skipped (left unaligned) when it
    would exceed ``_MAX_LCS_CELLS`` cells so that hostile pages stay linear.
    """
    na, nb = len(a), len(b)
    lo = 0
    while lo < na and lo < nb and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = na, nb
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    pairs = [(i, i) for i in range(lo)]
    ma, mb = hi_a - lo, hi_b - lo
    if ma and mb and ma * mb <= _MAX_LCS_CELLS:
        mid_a = a[lo:hi_a]
        mid_b = b[lo:hi_b]
        # table of LCS lengths of suffixes, then a forward walk reads the pairs
        table = [[0] * (mb + 1) for _ in range(ma + 1)]
        for i in range(ma - 1, -1, -1):
            row, nxt = table[i], table[i + 1]
            ai = mid_a[i]
            for j in range(mb - 1, -1, -1):
                if ai == mid_b[j]:
                    row[j] = nxt[j + 1] + 1
                else:
                    x, y = nxt[j], row[j + 1]
                    row[j] = x if x >= y else y
        i = j = 0
        while i < ma and j < mb:
            if mid_a[i] == mid_b[j]:
                pairs.append((lo + i, lo + j))
                i += 1
                j += 1
            elif table[i + 1][j] >= table[i][j + 1]:
                i += 1
            else:
                j += 1
    pairs.extend((hi_a + k, hi_b + k) for k in range(na - hi_a))
    return pairs


def tolerant_accept(n_page: int, style: StyleNode, pairs: list, tolerance: float) -> Optional[float]:
    """The tolerant matching rule; returns a score (higher = better) or None.

    Page side: ``a`` of the page's ``n_page`` children aligned. Style side: each element
    of the style weighs ``occ/n`` (how regularly it is there), aligned weight over total.
    Accepted when something aligns and either at most one child is missing on each side
    (one optional slot never forks) or both shares reach ``tolerance``.
    """
    a = len(pairs)
    if a == 0:
        return None
    n = style.n or 1
    occ = style.occ
    total_w = sum(min(1.0, o / n) for o in occ) or 1.0
    aligned_w = sum(min(1.0, occ[i] / n) for i, _ in pairs)
    page_cov = a / n_page
    style_cov = aligned_w / total_w
    if (n_page - a <= 1 and total_w - aligned_w <= 1.0 + 1e-9) or (page_cov >= tolerance and style_cov >= tolerance):
        return page_cov + style_cov
    return None


# the alignment is Any: it is None exactly when the style node is, which callers rely on
# (a union of the two tuples would not narrow through their unpacking)
def find_style(E: ElementNode, keys: tuple, match: str, tolerance: float) -> tuple[Optional[StyleNode], Any]:
    """The style node of ``E`` a page child sequence ``keys`` maps to, with the
    alignment: ``(S, [element index in S or None for each page child])`` or ``(None, None)``."""
    S = E.style_index.get(keys)
    if S is not None and S.keys == keys:
        return S, list(range(len(keys)))
    if match != "tolerant" or not keys or not E.styles:
        return None, None
    need = Counter(keys)
    n_page = len(keys)
    cands = []
    for S in E.styles:
        if not S.keys:
            continue
        c = S.counter()
        upper = sum(min(v, c.get(k, 0)) for k, v in need.items())
        if upper == 0:
            continue
        cands.append((upper, S.n, S))
    cands.sort(key=lambda x: (-x[0], -x[1]))
    best = None
    best_score = -1.0
    for upper, _, S in cands:
        # a bound on page_cov + style_cov: upper/n_page + 1
        if best is not None and upper / n_page + 1.0 < best_score:
            break
        pairs = lcs_pairs(S.keys, keys)
        score = tolerant_accept(n_page, S, pairs, tolerance)
        if score is not None and (score > best_score or (score == best_score and S.n > best[0].n)):  # type: ignore[index]
            best = (S, pairs)
            best_score = score
    if best is None:
        return None, None
    S, pairs = best
    align: list = [None] * n_page
    for i, j in pairs:
        align[j] = i
    return S, align


class SiteStyleTree:
    """The SST of one site: a virtual root element node and the pages merged into it.

    ``match``: ``"exact"`` (the paper) or ``"tolerant"`` (see the module docstring);
    ``tolerance``: the tolerant rule's share; ``max_features``: features kept per leaf
    element node (the rest folded into summary numbers, see :class:`ElementNode`).
    """

    def __init__(self, match: str = "exact", tolerance: float = 0.6, max_features: int = 400, principal: bool = False):
        if match not in ("exact", "tolerant"):
            raise ValueError(f"match must be 'exact' or 'tolerant', not {match!r}")
        self.match = match
        #: keys use the first class name only (pages must be built the same way)
        self.principal = bool(principal)
        self.tolerance = float(tolerance)
        self.max_features = int(max_features)
        self.root = ElementNode(ROOT_KEY)
        self.n_pages = 0
        #: bumped on every change; importance is recomputed when it differs
        self.version = 0
        self.computed_version = -1
        #: the threshold / attenuating factor the importance was computed with
        self.t: Optional[float] = None
        self.gamma: Optional[float] = None

    # -- building (3.2) -----------------------------------------------------------------
    def add_page(self, page_root: PageNode) -> None:
        """Merge one page style tree into the SST, top-down, iteratively."""
        self.n_pages += 1
        self.version += 1
        tolerant = self.match == "tolerant"
        stack: list[tuple[ElementNode, PageNode]] = [(self.root, page_root)]
        while stack:
            E, T = stack.pop()
            E.m += 1
            E.dirty = True
            E.charset = None
            if T.leaf:
                E.leaf_n += 1
                self._add_feats(E, T.feats)  # type: ignore[arg-type]
                continue
            keys = T.child_keys()
            S, align = find_style(E, keys, self.match, self.tolerance)
            kids = T.children
            if S is None:
                els = [ElementNode(k) for k in keys]
                S = StyleNode(els, 1)
                E.styles.append(S)
                E.style_index.setdefault(S.keys, S)
                for e, t in zip(els, kids):
                    stack.append((e, t))
                continue
            S.n += 1
            els = S.resolved()
            if tolerant and None in align:
                align = self._union(E, S, kids, align)
                els = S.elements
            occ = S.occ
            for j, i in enumerate(align):
                occ[i] += 1
                stack.append((els[i], kids[j]))

    def _union(self, E: ElementNode, S: StyleNode, kids: list, align: list) -> list:
        """Insert the page's unaligned children into ``S`` at their aligned places and
        return the new alignment (every page child now has an element node)."""
        old_els, old_occ = S.elements, S.occ
        new_els: list = []
        new_occ: list = []
        new_align: list = [0] * len(kids)
        pos_map = {}
        si = 0
        for j, i in enumerate(align):
            if i is None:
                new_align[j] = len(new_els)
                new_els.append(ElementNode(kids[j].key))
                new_occ.append(0)
                continue
            while si <= i:
                pos_map[si] = len(new_els)
                new_els.append(old_els[si])
                new_occ.append(old_occ[si])
                si += 1
            new_align[j] = pos_map[i]
        while si < len(old_els):
            new_els.append(old_els[si])
            new_occ.append(old_occ[si])
            si += 1
        if E.style_index.get(S.keys) is S:
            del E.style_index[S.keys]
        S.set_elements(new_els, new_occ)
        E.style_index.setdefault(S.keys, S)
        return new_align

    def _add_feats(self, E: ElementNode, feats: Counter) -> None:
        table = E.feats
        for f, c in feats.items():
            st = table.get(f)
            clc = c * math.log(c) if c > 1 else 0.0
            if st is None:
                table[f] = [c, clc, 1]
            else:
                st[0] += c
                st[1] += clc
                st[2] += 1
        if len(table) > 2 * self.max_features:
            prune_features(E, self.max_features)

    # -- helpers ------------------------------------------------------------------------
    def iter_elements(self) -> Iterable[ElementNode]:
        """Every element node once (pre-order, DAG-aware)."""
        seen = set()
        stack = [self.root]
        while stack:
            e = resolve(stack.pop())
            if id(e) in seen:
                continue
            seen.add(id(e))
            yield e
            for S in reversed(e.styles):
                stack.extend(reversed(S.resolved()))

    def size(self) -> tuple[int, int]:
        """(element nodes, style nodes)."""
        ne = ns = 0
        for e in self.iter_elements():
            ne += 1
            ns += len(e.styles)
        return ne, ns


def feature_num(st: list) -> float:
    """``ln S - T/S``: eq. 5's entropy of a feature times ``ln m``."""
    s = st[0]
    if s <= 0:
        return 0.0
    v = math.log(s) - st[1] / s
    return v if v > 0.0 else 0.0


def prune_features(E: ElementNode, cap: int) -> None:
    """Keep the ``cap`` features with the highest document frequency (the ones that can
    be template); the others are summarised in ``rest_n``/``rest_num`` so that eq. 4's
    mean entropy is unchanged."""
    table = E.feats
    if len(table) <= cap:
        return
    ranked = sorted(table.items(), key=lambda kv: (-kv[1][2], -kv[1][0], kv[0]))
    for f, st in ranked[cap:]:
        E.rest_n += 1
        E.rest_num += feature_num(st)
    E.feats = dict(ranked[:cap])
