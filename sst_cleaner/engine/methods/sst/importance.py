"""Importance of SST element nodes and noise detection (Yi, Liu & Li, KDD 2003, 3.3-3.6).

* :func:`node_importance` eq. 1: ``NodeImp(E) = -sum_i p_i log_m p_i`` over E's ``l``
  child style nodes, ``p_i = n_i / m``, ``m`` = pages containing E; 1 when ``m = 1``.
* :func:`style_importance` eq. 3: ``CompImp(S)`` = mean CompImp of S's element nodes.
* :func:`composite_importance` eq. 2: ``(1 - gamma^l) NodeImp(E) + gamma^l sum_i p_i
  CompImp(S_i)`` for internal nodes; :func:`leaf_importance` eq. 4/5 for leaves:
  1 when ``m = 1``, else ``1 - sum_i H(a_i) / l`` over the ``l`` features of E with
  ``H(a_i) = -sum_j p_ij log_m p_ij`` (``p_ij``: share of a_i's occurrences in E that
  are on page j). An element node that was a leaf on some pages and had children on
  others gets its leaf pages as one more (empty) style whose CompImp is eq. 4.
* :func:`mark_noise` Fig. 5 (noisy: E and all its descendants have CompImp <= t) and
  :func:`mark_meaningful` (no noisy descendant), each returning the *maximal* nodes;
  :func:`simplified_sst` (Fig. 6) cuts the SST below them.
* 3.6 enhancements: :func:`merge_siblings` merges element nodes of sibling style nodes
  with equal (TAG, Attr) whose characteristic feature sets (document frequency >= 0.85)
  overlap (Jaccard >= 0.85); :func:`locally_noisy_features`. The paper says "locally noisy
  features whose information entropy is smaller than epsilon", but by its own eq. 5 a
  small entropy means the feature sits on few pages (content), and its example ("Home",
  "Product Guides" are noise because they "appear too frequently in E") is the opposite
  case; we read it as ``1 - H(a) < epsilon`` for a feature present on every page of E,
  i.e. spread evenly over all of them.

:func:`refresh` runs merge + CalcCompImp + MarkNoise + MarkMeaningful in one pass over
the *dirty* part of the tree (the paths the pages added since the last refresh went
through; every quantity here depends only on a node's subtree), so an SST that grows by
``partial_fit`` is rescored in time proportional to the new page, not to the site.
All walks are iterative.
"""

from __future__ import annotations

import math
from typing import Iterator

from sst_cleaner.engine.methods.sst.site_style_tree import (
    MERGE_EPOCH,
    ElementNode,
    SiteStyleTree,
    StyleNode,
    feature_num,
    resolve,
)

#: attenuating factor of eq. 2 (the paper's value)
GAMMA = 0.9
#: noise threshold; the KDD paper tunes it per site by eye, the SST baseline of the
#: informative-sentences paper (section 5.2) runs with t = 0.4
T_DEFAULT = 0.4
#: 3.6: characteristic features have document frequency >= MERGE_FREQ within the node,
#: and two nodes merge when the Jaccard similarity of those sets is >= MERGE_SIM
MERGE_FREQ = 0.85
MERGE_SIM = 0.85
EPSILON = 0.01
#: 3.6 merge: comparisons of candidate pairs below one element node, and nodes visited
#: to collect one characteristic set (bounds the cost on pathological sites)
_MAX_PAIRS_PER_NODE = 300
_CHARSET_BUDGET = 4000


# --------------------------------------------------------------------------------------
# per-node measures
# --------------------------------------------------------------------------------------
def _style_counts(E: ElementNode) -> list[int]:
    counts = [S.n for S in E.styles]
    if E.styles and E.leaf_n:
        counts.append(E.leaf_n)
    return counts


def node_importance(E: ElementNode) -> float:
    """Eq. 1: entropy of the page distribution over E's child style nodes, base m."""
    m = E.m
    if m <= 1:
        return 1.0
    counts = _style_counts(E)
    total = sum(counts) or 1
    h = 0.0
    for n in counts:
        if n > 0:
            p = n / total
            h -= p * math.log(p)
    return min(1.0, max(0.0, h / math.log(m)))


def leaf_importance(E: ElementNode) -> float:
    """Eq. 4: 1 for a leaf seen on one page, else 1 - mean feature entropy (eq. 5).

    A leaf with no feature at all (only digits or punctuation) has nothing that could be
    diverse: 0 when it is on more than one page."""
    m = E.leaf_n
    if m <= 1:
        return 1.0
    l = len(E.feats) + E.rest_n
    if l == 0:
        return 0.0
    num = E.rest_num
    for st in E.feats.values():
        num += feature_num(st)
    return min(1.0, max(0.0, 1.0 - num / math.log(m) / l))


def style_importance(S: StyleNode) -> float:
    """Eq. 3: mean CompImp of the style node's element nodes (assumed computed)."""
    els = S.resolved()
    if not els:
        return 0.0
    return sum(e.comp for e in els) / len(els)


def composite_importance(E: ElementNode, gamma: float = GAMMA) -> float:
    """Eq. 2 for an internal node (children's CompImp assumed computed), eq. 4 for a leaf."""
    leaf_comp = leaf_importance(E) if E.leaf_n else None
    if not E.styles:
        return leaf_comp if leaf_comp is not None else 0.0
    m = sum(_style_counts(E)) or 1
    l = len(E.styles) + (1 if E.leaf_n else 0)
    acc = 0.0
    for S in E.styles:
        acc += (S.n / m) * style_importance(S)
    if leaf_comp is not None:
        acc += (E.leaf_n / m) * leaf_comp
    g = gamma**l
    return (1.0 - g) * node_importance(E) + g * acc


def locally_noisy_features(E: ElementNode, epsilon: float = EPSILON) -> frozenset:
    """Features of a leaf element node that are on every one of its pages and spread
    evenly over them (``1 - H(a) < epsilon``, see the module docstring)."""
    m = E.leaf_n
    if m < 2:
        return frozenset()
    lm = math.log(m)
    floor = 1.0 - epsilon
    return frozenset(f for f, st in E.feats.items() if st[2] >= m and feature_num(st) / lm >= floor)


# --------------------------------------------------------------------------------------
# walks
# --------------------------------------------------------------------------------------
def _children(E: ElementNode) -> Iterator[ElementNode]:
    for S in E.styles:
        yield from S.resolved()


def _postorder(root: ElementNode, only_dirty: bool) -> list[ElementNode]:
    """Element nodes children-first, each once (the SST is a DAG after 3.6 merges)."""
    out: list[ElementNode] = []
    seen: set[int] = set()
    stack: list[tuple[ElementNode, bool]] = [(root, False)]
    while stack:
        e, expanded = stack.pop()
        if expanded:
            out.append(e)
            continue
        e = resolve(e)
        if id(e) in seen or (only_dirty and not e.dirty):
            continue
        seen.add(id(e))
        stack.append((e, True))
        for c in _children(e):
            stack.append((c, False))
    return out


def _score_node(E: ElementNode, t: float, gamma: float) -> None:
    E.leaf_comp = leaf_importance(E) if E.leaf_n else None
    E.node_imp = node_importance(E)
    E.comp = composite_importance(E, gamma)
    _flag_node(E, t)


def _flag_node(E: ElementNode, t: float) -> None:
    """Fig. 5 / MarkMeaningful for one node, children already flagged."""
    if not E.styles:
        E.noisy = E.comp <= t
        E.has_noisy = False
    else:
        leaf_noisy = E.leaf_n > 0 and (E.leaf_comp if E.leaf_comp is not None else 1.0) <= t
        all_noisy = True
        any_noisy = leaf_noisy
        for c in _children(E):
            if not c.noisy:
                all_noisy = False
            if c.noisy or c.has_noisy:
                any_noisy = True
        E.noisy = all_noisy and E.comp <= t and (E.leaf_n == 0 or leaf_noisy)
        E.has_noisy = any_noisy
    E.meaningful = not E.noisy and not E.has_noisy


def calc_comp_imp(sst: SiteStyleTree, gamma: float = GAMMA) -> None:
    """CalcCompImp over the whole SST (post-order)."""
    for E in _postorder(sst.root, only_dirty=False):
        E.leaf_comp = leaf_importance(E) if E.leaf_n else None
        E.node_imp = node_importance(E)
        E.comp = composite_importance(E, gamma)


def _maximal(sst: SiteStyleTree, attr: str) -> list[ElementNode]:
    out, seen = [], set()
    stack = [sst.root]
    while stack:
        e = resolve(stack.pop())
        if id(e) in seen:
            continue
        seen.add(id(e))
        if getattr(e, attr):
            out.append(e)
            continue
        stack.extend(reversed(list(_children(e))))
    return out


def mark_noise(sst: SiteStyleTree, t: float = T_DEFAULT) -> list[ElementNode]:
    """Fig. 5 over the whole SST (CompImp must be computed); returns the maximal noisy
    element nodes."""
    for E in _postorder(sst.root, only_dirty=False):
        _flag_node(E, t)
    return _maximal(sst, "noisy")


def mark_meaningful(sst: SiteStyleTree) -> list[ElementNode]:
    """The maximal meaningful element nodes (flags set by :func:`mark_noise`)."""
    return _maximal(sst, "meaningful")


# --------------------------------------------------------------------------------------
# 3.6: merging element nodes of sibling style nodes
# --------------------------------------------------------------------------------------
def characteristic_features(E: ElementNode, freq: float = MERGE_FREQ) -> frozenset:
    """``I = {a : freq(a) >= freq}``: the features of E's actual contents (its leaves)
    whose document frequency within E is at least ``freq``. A descendant on fewer than
    ``freq * m`` pages cannot hold such a feature, so only the regular part of the
    subtree is visited. (For an internal node the document frequency of a feature is
    taken as its largest frequency in one leaf: a lower bound of the subtree's.)"""
    floor = freq * max(E.m, 1)
    out: set = set()
    seen: set = set()
    stack = [E]
    budget = _CHARSET_BUDGET
    while stack and budget > 0:
        x = resolve(stack.pop())
        if id(x) in seen or x.m < floor:
            continue
        seen.add(id(x))
        budget -= 1
        if x.leaf_n:
            for f, st in x.feats.items():
                if st[2] >= floor:
                    out.add(f)
        for c in _children(x):
            stack.append(c)
    return frozenset(out)


def merge_elements(keep: ElementNode, gone: ElementNode) -> ElementNode:
    """Merge ``gone`` into ``keep``: page counts and content statistics add up (their
    page sets are disjoint), child style nodes with the same sequence are merged pairwise
    (iteratively), the others move over. ``gone`` forwards to ``keep`` from then on."""
    pairs = [(keep, gone)]
    while pairs:
        a, b = pairs.pop()
        a, b = resolve(a), resolve(b)
        if a is b:
            continue
        b.fwd = a
        MERGE_EPOCH[0] += 1
        a.dirty = True
        a.charset = None
        a.m += b.m
        a.leaf_n += b.leaf_n
        for f, st in b.feats.items():
            mine = a.feats.get(f)
            if mine is None:
                a.feats[f] = list(st)
            else:
                mine[0] += st[0]
                mine[1] += st[1]
                mine[2] += st[2]
        a.rest_n += b.rest_n
        a.rest_num += b.rest_num
        for Sb in b.styles:
            Sa = a.style_index.get(Sb.keys)
            if Sa is None or Sa.keys != Sb.keys:
                a.styles.append(Sb)
                a.style_index[Sb.keys] = Sb
                continue
            Sa.n += Sb.n
            Sa.occ = [x + y for x, y in zip(Sa.occ, Sb.occ)]
            for ea, eb in zip(Sa.resolved(), Sb.resolved()):
                pairs.append((ea, eb))
        b.styles = []
        b.style_index = {}
        b.feats = {}
    return resolve(keep)


class _Charsets:
    """Characteristic feature sets for one :func:`_merge_below`: a clean node keeps its
    set on itself (valid while it does not change, so later refreshes reuse it); a dirty
    node's is only good until it changes, so it is kept here, for this call."""

    __slots__ = ("freq", "cache")

    def __init__(self, freq: float):
        self.freq = freq
        self.cache: dict[int, frozenset] = {}

    def get(self, x: ElementNode) -> frozenset:
        if not x.dirty and x.charset is not None:
            return x.charset
        got = self.cache.get(id(x))
        if got is None:
            got = self.cache[id(x)] = characteristic_features(x, self.freq)
            if not x.dirty:
                x.charset = got
        return got

    def forget(self, x: ElementNode) -> None:
        """``x`` is about to take another node's statistics: its set is no longer its own."""
        self.cache.pop(id(x), None)


def _merge_below(E: ElementNode, freq: float, sim: float) -> int:
    groups: dict[str, list] = {}
    for si, S in enumerate(E.styles):
        for e in S.resolved():
            groups.setdefault(e.key, []).append((si, e))
    merged = 0
    budget = _MAX_PAIRS_PER_NODE
    charsets = _Charsets(freq)
    for items in groups.values():
        if len({si for si, _ in items}) < 2 or not any(e.dirty for _, e in items):
            continue
        done, budget = _merge_group(items, charsets, sim, budget)
        merged += done
    if merged:
        for S in E.styles:
            S.resolved()
    return merged


def _merge_group(items: list, charsets: _Charsets, sim: float, budget: int) -> tuple[int, int]:
    """Merge the element nodes of one (TAG, Attr) below an element node, ``items`` being
    ``(style index, element node)`` pairs; two nodes in the same style node are never
    merged. Returns (merges done, comparisons left of ``budget``)."""
    merged = 0
    # pairs of nodes untouched since the last refresh were compared then (same
    # statistics, same answer): clean nodes only stand as candidates, dirty ones seek
    items.sort(key=lambda it: (it[1].dirty, it[0]))
    reps: list[list] = []  # [element node, set of style indices it sits in]
    by_id: dict[int, list] = {}
    for si, e in items:
        e = resolve(e)
        placed = False
        if not e.dirty:
            rep = by_id.get(id(e))
            if rep is not None:
                rep[1].add(si)
            else:
                rep = [e, {si}]
                reps.append(rep)
                by_id[id(e)] = rep
            continue
        for rep in reps:
            r = resolve(rep[0])
            if r is e:
                rep[1].add(si)
                placed = True
                break
            if si in rep[1] or budget <= 0:
                continue
            budget -= 1
            i1, i2 = charsets.get(r), charsets.get(e)
            if not i1 or not i2:
                continue
            inter = len(i1 & i2)
            if inter and inter / (len(i1) + len(i2) - inter) >= sim:
                charsets.forget(r)
                rep[0] = merge_elements(r, e)
                rep[1].add(si)
                merged += 1
                placed = True
                break
        if not placed:
            reps.append([e, {si}])
    return merged, budget


def merge_siblings(
    sst: SiteStyleTree, freq: float = MERGE_FREQ, sim: float = MERGE_SIM, only_dirty: bool = True
) -> int:
    """3.6, first point, top-down over the (dirty part of the) SST; returns merges done."""
    total = 0
    seen: set[int] = set()
    stack = [sst.root]
    while stack:
        E = resolve(stack.pop())
        if id(E) in seen or (only_dirty and not E.dirty):
            continue
        seen.add(id(E))
        if len(E.styles) >= 2:
            total += _merge_below(E, freq, sim)
        for c in _children(E):
            stack.append(c)
    return total


# --------------------------------------------------------------------------------------
def refresh(
    sst: SiteStyleTree,
    t: float = T_DEFAULT,
    gamma: float = GAMMA,
    merge: bool = True,
    merge_freq: float = MERGE_FREQ,
    merge_sim: float = MERGE_SIM,
) -> None:
    """Bring importance and noise flags up to date after pages were added (lazy)."""
    if sst.t != t or sst.gamma != gamma:
        for E in sst.iter_elements():  # scored with other parameters: everything again
            E.dirty = True
        sst.computed_version = -1
    if sst.computed_version == sst.version:
        return
    if merge:
        merge_siblings(sst, merge_freq, merge_sim, only_dirty=True)
    for E in _postorder(sst.root, only_dirty=True):
        _score_node(E, t, gamma)
        E.dirty = False
    sst.t, sst.gamma = t, gamma
    sst.computed_version = sst.version


def simplified_sst(sst: SiteStyleTree) -> SiteStyleTree:
    """Fig. 6: a copy of the (scored) SST without the descendants of maximal noisy and
    maximal meaningful element nodes. Read-only: it cannot take more pages."""
    out = SiteStyleTree(sst.match, sst.tolerance, sst.max_features, sst.principal)
    out.n_pages = sst.n_pages
    out.version = out.computed_version = 1
    out.t, out.gamma = sst.t, sst.gamma
    copies: dict[int, ElementNode] = {}

    def copy_of(e: ElementNode) -> tuple[ElementNode, bool]:
        c = copies.get(id(e))
        if c is not None:
            return c, False
        c = ElementNode(e.key)
        for name in (
            "m",
            "leaf_n",
            "rest_n",
            "rest_num",
            "comp",
            "node_imp",
            "leaf_comp",
            "noisy",
            "has_noisy",
            "meaningful",
        ):
            setattr(c, name, getattr(e, name))
        c.feats = {f: list(st) for f, st in e.feats.items()}
        c.dirty = False
        copies[id(e)] = c
        return c, True

    root, _ = copy_of(resolve(sst.root))
    out.root = root
    stack = [(resolve(sst.root), root)]
    while stack:
        e, c = stack.pop()
        if e.noisy or e.meaningful:
            continue
        for S in e.styles:
            els = []
            for child in S.resolved():
                cc, fresh = copy_of(child)
                els.append(cc)
                if fresh:
                    stack.append((child, cc))
            NS = StyleNode(els, S.n, list(S.occ))
            c.styles.append(NS)
            c.style_index.setdefault(NS.keys, NS)
    return out
