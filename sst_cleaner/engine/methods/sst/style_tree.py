"""Style trees: the page style tree (PST) of one page and the site style tree (SST).

Yi, Liu & Li, "Eliminating Noisy Information in Web Pages for Data Mining" (KDD 2003),
section 3.2, with the segment rules of the informative-sentences paper (3.1) and the
second point of 3.6. Names follow the paper:

* a **style node** ``S = (Es, n)``: a sequence of element nodes and the number of pages
  that have this presentation style at this place (:class:`StyleNode`);
* an **element node** ``E = (TAG, Attr, Ss)``: a tag with its display attributes and the
  set of style nodes below it (:class:`ElementNode`). Leaf element nodes also carry
  their *actual content* (words, image sources, link targets), pooled over the pages
  that have them, as the statistics eq. 4/5 need.

Page style tree (:func:`build_page_tree`), built once per page in one iterative
post-order walk:

* a virtual root (``#root``, no attributes) sits above BODY (3.1);
* ``Attr`` for today's web (:func:`element_key`): ``class``/``id``/``role`` and the old
  presentational attributes, lower-cased, tokens sorted, digit runs replaced
  (``post-12345`` -> ``post-#``) so that per-page ids do not make every page a style;
  BODY's attributes are ignored (one per page, its classes name the page: slug, author,
  category; with them every page of a WordPress site would be its own style);
* the *leaf element nodes* are the parents of the actual leaf tags (3.6, point 2): an
  element whose element children have no children of their own is a leaf and its
  children's text is its content ("they tend to overly fragment the page" otherwise);
* segment rules (informative-sentences 3.1): runs of sibling leaves with the same tag
  (and ``Attr``: unlike the paper, ``div.byline`` and ``div.body`` stay apart) are
  merged into one (so a list of 7 links and one of 9 are one style), and an element with
  a single child absorbs it (wrapper chains ``div > div > div`` fold into the outer one);
* text directly inside an internal element is a ``#text`` leaf child (the paper's DOM has
  texts as leaves, Fig. 2); elements with no text, image or link under them (spacers,
  ``<br>``, empty ``<div>``) are left out: there is nothing in them to clean and they
  only split styles.

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
from typing import Iterable, Optional

from lxml import etree

from sst_cleaner.engine._text import features, words

#: attributes that describe an element's presentation: today's (class, id, role) and
#: the HTML 3/4 presentational attributes the paper's ``Attr`` meant (bgcolor, width...)
STYLE_ATTRS = frozenset(
    """class id role bgcolor width height align valign border cellpadding cellspacing
    face size color background""".split()
)
#: elements there is one of per page: their class names say which page it is (WordPress
#: and co. put the post slug, author and category on BODY), not how it is laid out
_BARE_TAGS = frozenset(("body", "html"))
ROOT_KEY = "#root"
TEXT_KEY = "#text"
#: longest attribute value looked at (class lists of CSS frameworks can be very long)
_MAX_ATTR_CHARS = 200
#: longest link target / image source kept as a feature
_MAX_REF_CHARS = 200
#: above this many DP cells the LCS middle part is left unaligned (prefix/suffix still are)
_MAX_LCS_CELLS = 60_000

_norm_cache: dict[str, str] = {}


def normalise_attr_value(value: str) -> str:
    """Public name of the (TAG, Attr) value normaliser, shared with ``site_stats``."""
    return _norm_value(value)


def _norm_value(value: str) -> str:
    """Lower-case, split into tokens, digit runs -> ``#``, sorted unique tokens."""
    hit = _norm_cache.get(value)
    if hit is not None:
        return hit
    toks = set()
    for tok in value[:_MAX_ATTR_CHARS].lower().split():
        buf = []
        in_digits = False
        for ch in tok:
            if ch.isdigit():
                if not in_digits:
                    buf.append("#")
                in_digits = True
            else:
                buf.append(ch)
                in_digits = False
        toks.add("".join(buf))
    out = " ".join(sorted(toks))
    if len(_norm_cache) > 200_000:
        _norm_cache.clear()
    _norm_cache[value] = out
    return out


_key_cache: dict[tuple, str] = {}


def element_key(el: etree._Element, principal: bool = False) -> str:
    """The paper's (TAG, Attr) pair as one string: ``tag`` or ``tag|name=value;...``.

    ``principal=True`` keeps only the *first* class name as written (normalised): blog
    engines append the post's author, categories and tags to the classes of the post
    and comment wrappers (``entry entry-author-jane entry-category-travel``), which
    makes the full class list different on every page; the first name is the role."""
    attrib = el.attrib
    tag = el.tag
    if not attrib or tag in _BARE_TAGS:
        return tag
    raw = (tag, principal, tuple(attrib.items()))
    hit = _key_cache.get(raw)
    if hit is not None:
        return hit
    parts = []
    for name, value in raw[2]:
        if name in STYLE_ATTRS and value and value.strip():
            if principal and name == "class":
                value = value.split()[0]
            parts.append(f"{name}={_norm_value(value)}")
    if parts:
        parts.sort()
        key = tag + "|" + ";".join(parts)
    else:
        key = tag
    if len(_key_cache) > 200_000:
        _key_cache.clear()
    _key_cache[raw] = key
    return key


def key_tag(key: str) -> str:
    cut = key.find("|")
    return key if cut < 0 else key[:cut]


def key_attr(key: str) -> str:
    cut = key.find("|")
    return "" if cut < 0 else key[cut + 1 :]


# --------------------------------------------------------------------------------------
# page style tree
# --------------------------------------------------------------------------------------
class PageNode:
    """One node of a page style tree (a DOM node after the segment rules).

    ``tops``: the DOM elements this node stands for (the element, the wrappers folded
    into it, every member of a merged run); their subtrees inherit the node's label.
    ``owner``: for a ``#text`` node, the element whose direct text it is.
    ``feats``: leaf content, ``Counter`` of features (words, ``a:``link, ``img:``src).
    ``actual``: an actual leaf tag of the DOM (no element children).
    """

    __slots__ = ("key", "tag", "children", "feats", "tops", "actual", "owner", "leaf")

    def __init__(
        self,
        key: str,
        tag: str,
        children: Optional[list] = None,
        feats: Optional[Counter] = None,
        tops: Optional[list] = None,
        actual: bool = False,
        owner=None,
    ):
        self.key = key
        self.tag = tag
        self.children: list[PageNode] = children if children is not None else []
        self.feats = feats
        self.tops = tops if tops is not None else []
        self.actual = actual
        self.owner = owner
        self.leaf = feats is not None

    def child_keys(self) -> tuple:
        return tuple(c.key for c in self.children)

    def __repr__(self) -> str:
        kind = "leaf" if self.leaf else f"{len(self.children)} children"
        return f"PageNode({self.key!r}, {kind})"


#: leaf features include link targets and image sources (the paper's "link references,
#: image files"); switchable for experiments
REF_FEATURES = True


def _add_refs(el: etree._Element, feats: Counter) -> None:
    if not REF_FEATURES:
        return
    tag = el.tag
    if tag == "a":
        href = el.get("href")
        if href:
            href = href.strip().split("#", 1)[0][:_MAX_REF_CHARS]
            if href:
                feats["a:" + href] += 1
    elif tag == "img":
        src = el.get("src")
        if src:
            src = src.strip()[:_MAX_REF_CHARS]
            if src:
                feats["img:" + src] += 1


_tok_cache: dict[str, tuple] = {}


def fast_features(text: str) -> list[str]:
    """``text.features`` with a per-token cache: the same list (features() treats every
    token on its own), without re-testing each character for CJK on every page."""
    out: list[str] = []
    cache = _tok_cache
    for tok in words(text):
        f = cache.get(tok)
        if f is None:
            if len(cache) > 500_000:
                cache.clear()
            f = cache[tok] = tuple(features(tok))
        out.extend(f)
    return out


class _NoContent(Counter):
    """Stand-in content of a page tree built for mapping only (no features needed)."""

    def update(self, *args, **kwds) -> None:  # merged runs stay empty
        return None


_NO_CONTENT = _NoContent()


def _leaf_content(text: str, refs: Iterable[etree._Element], content: bool) -> tuple[Counter, bool]:
    """(features of a leaf, whether it has anything at all: text, a link or an image)."""
    has_text = bool(text) and not text.isspace()
    if not content:
        nonempty = has_text
        if not nonempty:
            for el in refs:
                if (el.tag == "a" and el.get("href")) or (el.tag == "img" and el.get("src")):
                    nonempty = True
                    break
        return _NO_CONTENT, nonempty
    feats = Counter(fast_features(text)) if has_text else Counter()
    for el in refs:
        _add_refs(el, feats)
    return feats, has_text or bool(feats)


def build_page_tree(root: etree._Element, content: bool = True, principal: bool = False) -> PageNode:
    """The page style tree of the subtree under ``root`` (normally BODY), below a virtual
    root. One iterative post-order walk (``etree.iterwalk``), so depth does not matter;
    the texts, tails and links a node needs from its children are handed up during the
    walk (no second pass over children). ``content=False`` skips the leaf features (all
    MapSST needs is the structure). ``principal``: keys with the first class name only
    (see :func:`element_key`)."""
    # frame = [kept child PageNodes, all kept children are actual leaves, has element
    #          child, tails of children, texts+tails of children in order, a/img children]
    frames: list[list] = [[[], True, False, [], [], []]]
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if event == "start":
            frames[-1][2] = True
            frames.append([[], True, False, [], [], []])
            continue
        kids, all_actual, has_child, tails, pieces, refs = frames.pop()
        text = el.text
        node = _make_node(el, tag, text, kids, all_actual, has_child, tails, pieces, refs, content, principal)
        parent = frames[-1]
        if node is not None:
            parent[0].append(node)
            if not node.actual:
                parent[1] = False
        tail = el.tail
        if not has_child:
            if text:
                parent[4].append(text)
            if tag == "a" or tag == "img":
                parent[5].append(el)
        if tail:
            parent[3].append(tail)
            parent[4].append(tail)
    top = frames[0][0]
    return PageNode(ROOT_KEY, ROOT_KEY, children=top, tops=[])


def _make_node(
    el,
    tag: str,
    text: Optional[str],
    kids: list,
    all_actual: bool,
    has_child: bool,
    tails: list,
    pieces: list,
    refs: list,
    content: bool = True,
    principal: bool = False,
) -> Optional[PageNode]:
    key = element_key(el, principal)
    if not has_child:
        # an actual leaf tag: its text, link target or image is its content
        feats, nonempty = _leaf_content(text or "", (el,), content)
        if not nonempty:
            return None
        return PageNode(key, tag, feats=feats, tops=[el], actual=True)
    if all_actual:
        # 3.6: the parent of actual leaf tags is the (virtual) leaf; children are content
        full = (text or "") + "".join(pieces)
        refs.append(el)
        feats, nonempty = _leaf_content(full, refs, content)
        if not nonempty:
            return None
        return PageNode(key, tag, feats=feats, tops=[el], actual=False)
    # internal element: direct text becomes a #text leaf child
    direct = (text or "") + "".join(tails)
    children: list[PageNode] = []
    if direct and not direct.isspace():
        feats, _ = _leaf_content(direct, (), content)
        children.append(PageNode(TEXT_KEY, TEXT_KEY, feats=feats, owner=el, actual=True))
    # segment rule: a run of sibling leaves with the same tag is one node. Same (TAG,
    # Attr), not only TAG: a byline <div class=byline> next to the article's
    # <div class=body> must stay two nodes (lists of <li>/<p> still merge)
    for k in kids:
        if k.leaf and children:
            prev = children[-1]
            if prev.leaf and prev.key == k.key and k.tag != TEXT_KEY:
                if len(k.feats) > len(prev.feats):  # type: ignore[arg-type]
                    k.feats.update(prev.feats)
                    prev.feats = k.feats
                else:
                    prev.feats.update(k.feats)  # type: ignore[union-attr]
                prev.tops.extend(k.tops)
                prev.actual = prev.actual and k.actual
                continue
        children.append(k)
    if len(children) == 1 and children[0].tag != TEXT_KEY:
        # segment rule: a node with one child absorbs it (the outer key names the chain)
        c = children[0]
        c.key = key
        c.tag = tag
        c.tops.append(el)
        c.actual = False
        return c
    return PageNode(key, tag, children=children, tops=[el], actual=False)


def iter_page_nodes(root: PageNode) -> Iterable[PageNode]:
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


# --------------------------------------------------------------------------------------
# site style tree
# --------------------------------------------------------------------------------------
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

    @property
    def is_leaf(self) -> bool:
        return not self.styles

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


def find_style(E: ElementNode, keys: tuple, match: str, tolerance: float):
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


# --------------------------------------------------------------------------------------
# JSON form
# --------------------------------------------------------------------------------------
TREE_FORMAT = "sst-site-style-tree"
TREE_VERSION = 1


class TreeFormatError(ValueError):
    """The stored SST is malformed."""


def tree_to_dict(sst: SiteStyleTree) -> dict:
    """The SST as plain JSON data (no importance: it is recomputed after loading)::

        {"format": "sst-site-style-tree", "version": 1,
         "match": "exact"|"tolerant", "tolerance": 0.6, "max_features": 400,
         "n_pages": N, "principal": false,
         "keys": ["#root", "body|class=home", "div|id=main", ...],   # (TAG, Attr) keys
         "elements": [[key, m, leaf_n, [style, ...], {feature: [S, T, df]}, rest_n, rest_num], ...],
         "styles":   [[n, [element, ...], [occ, ...]], ...]}

    Element 0 is the virtual root; ``key``, ``style`` and ``element`` are indices into
    the lists. An element node shared by two style nodes (3.6 merge) is listed once.
    Features: ``S`` total count, ``T`` = sum c ln c, ``df`` pages (see ElementNode);
    at most ``max_features`` per element (highest df kept, the rest summarised in
    ``rest_n``/``rest_num``).
    """
    keys: dict[str, int] = {}
    el_index: dict[int, int] = {}
    st_index: dict[int, int] = {}
    elements: list = []
    styles: list = []
    order: list[ElementNode] = []
    stack = [resolve(sst.root)]
    # assign indices in pre-order (iterative)
    while stack:
        e = resolve(stack.pop())
        if id(e) in el_index:
            continue
        el_index[id(e)] = len(order)
        order.append(e)
        for S in reversed(e.styles):
            if id(S) not in st_index:
                st_index[id(S)] = len(styles)
                styles.append(S)
            stack.extend(reversed(S.resolved()))
    for e in order:
        if len(e.feats) > sst.max_features:
            prune_features(e, sst.max_features)
        k = keys.setdefault(e.key, len(keys))
        feats = {f: [st[0], round(st[1], 6), st[2]] for f, st in e.feats.items()}
        elements.append([k, e.m, e.leaf_n, [st_index[id(S)] for S in e.styles], feats, e.rest_n, round(e.rest_num, 6)])
    style_rows = [[S.n, [el_index[id(resolve(x))] for x in S.elements], list(S.occ)] for S in styles]
    return {
        "format": TREE_FORMAT,
        "version": TREE_VERSION,
        "match": sst.match,
        "tolerance": sst.tolerance,
        "max_features": sst.max_features,
        "n_pages": sst.n_pages,
        "principal": sst.principal,
        "keys": list(keys),
        "elements": elements,
        "styles": style_rows,
    }


def _int(v, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise TreeFormatError(f"expected an integer >= {lo}, got {v!r}")
    return v


def _num(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TreeFormatError(f"expected a number, got {v!r}")
    return float(v)


def tree_from_dict(data) -> SiteStyleTree:
    """Rebuild an SST from :func:`tree_to_dict` output, validating everything (the data
    may come from an untrusted file): indices in range, counts non-negative, and the
    element/style graph acyclic."""
    if not isinstance(data, dict) or data.get("format") != TREE_FORMAT:
        raise TreeFormatError("not a stored site style tree")
    if data.get("version") != TREE_VERSION:
        raise TreeFormatError(f"unsupported SST version {data.get('version')!r}")
    match = data.get("match")
    if match not in ("exact", "tolerant"):
        raise TreeFormatError(f"bad match {match!r}")
    keys, elements, styles = data.get("keys"), data.get("elements"), data.get("styles")
    if not isinstance(keys, list) or not isinstance(elements, list) or not isinstance(styles, list):
        raise TreeFormatError("keys, elements and styles must be lists")
    if not elements or not all(isinstance(k, str) for k in keys):
        raise TreeFormatError("bad keys or no elements")
    sst = SiteStyleTree(
        match, _num(data.get("tolerance", 0.6)), _int(data.get("max_features", 400), 1), data.get("principal") is True
    )
    sst.n_pages = _int(data.get("n_pages", 0))
    nodes: list[ElementNode] = []
    style_refs: list[list[int]] = []
    for row in elements:
        if not isinstance(row, list) or len(row) != 7:
            raise TreeFormatError("bad element row")
        k = _int(row[0])
        if k >= len(keys):
            raise TreeFormatError("key index out of range")
        e = ElementNode(keys[k])
        e.m, e.leaf_n = _int(row[1]), _int(row[2])
        if not isinstance(row[3], list) or not isinstance(row[4], dict):
            raise TreeFormatError("bad element row")
        style_refs.append([_int(i) for i in row[3]])
        for f, st in row[4].items():
            if not isinstance(st, list) or len(st) != 3:
                raise TreeFormatError("bad feature statistics")
            e.feats[f] = [_int(st[0]), _num(st[1]), _int(st[2])]
        e.rest_n, e.rest_num = _int(row[5]), _num(row[6])
        nodes.append(e)
    built: list[StyleNode] = []
    for row in styles:
        if (
            not isinstance(row, list)
            or len(row) != 3
            or not isinstance(row[1], list)
            or not isinstance(row[2], list)
            or len(row[1]) != len(row[2])
        ):
            raise TreeFormatError("bad style row")
        idx = [_int(i) for i in row[1]]
        if any(i >= len(nodes) or i == 0 for i in idx):
            raise TreeFormatError("element index out of range")
        built.append(StyleNode([nodes[i] for i in idx], _int(row[0]), [_int(o) for o in row[2]]))
    for e, refs in zip(nodes, style_refs):
        for i in refs:
            if i >= len(built):
                raise TreeFormatError("style index out of range")
            S = built[i]
            e.styles.append(S)
            e.style_index.setdefault(S.keys, S)
    # the element/style graph must be acyclic (a cycle would make every walk endless)
    state: dict[int, int] = {}
    stack: list[tuple[ElementNode, bool]] = [(nodes[0], False)]
    while stack:
        e, done = stack.pop()
        if done:
            state[id(e)] = 2
            continue
        s = state.get(id(e))
        if s == 2:
            continue
        if s == 1:
            raise TreeFormatError("the stored tree has a cycle")
        state[id(e)] = 1
        stack.append((e, True))
        for S in e.styles:
            for c in S.elements:
                cs = state.get(id(c))
                if cs == 1:
                    raise TreeFormatError("the stored tree has a cycle")
                if cs is None:
                    stack.append((c, False))
    sst.root = nodes[0]
    sst.version = 1
    return sst
