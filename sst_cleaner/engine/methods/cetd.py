"""CETD: Content Extraction via Text Density (page-level, no site model needed).

Song, Sun & Liao, "A hybrid approach for content extraction with text density and
visual importance of DOM nodes" (KAIS 2013), sections 3.2, 3.3 and 3.5 (the SIGIR 2011
paper's CETD-DS / CECTD-DS). The visual-importance part (3.4) needs a renderer and is
not implemented. Names follow the paper so the code can be read beside it:

* ``C_i``  CharNumber: characters of text under element ``i``;
* ``T_i``  TagNumber: tags under ``i``. As in the paper's Example 3.2 (``<div main>``
  holds 4 tags below it and gets Tags=4) the element itself is not counted, which is why
  a leaf's 0 needs the paper's pseudo-count 1;
* ``LC_i`` LinkCharNumber, ``LT_i`` LinkTagNumber: the same restricted to hyperlinks;
  "buttons and drop-down lists are treated as hyperlinks" (4.1.3), and tags nested in a
  hyperlink are hyperlink tags too, so a subtree of links only gets CTD 0 (3.3);
* ``TD_i = C_i / T_i`` (Eq. 1);
* ``CTD_i = C_i/T_i * log_base((C_i/LC_i) * (T_i/LT_i))`` with
  ``base = ln((C_i/nLC_i) * LC_i + (LC_b/C_b) * C_i + e)``, ``nLC_i = C_i - LC_i`` and ``b``
  the BODY (Eq. 2); a zero denominator counts as 1;
* ``DensitySum_N`` = the sum of the densities of N's children (Eq. 5). The DOM children
  of an element are its element children *and* its text nodes (3.1.2: "tags are internal
  nodes and the detailed text and images are leaf nodes"), so each run of text directly
  inside N is a child with ``C`` = its length, ``T`` = 0 -> 1, no links. Without this a
  ``<div>`` of ``<br>``-separated text would have a DensitySum of zero. ``text_nodes=False`` sums element children only.

Extraction (3.5.2 and Algorithm 2): the element with the largest DensitySum in the page
is found; the threshold is the smallest density on the path from it up to BODY; then
from BODY down, every element whose density reaches the threshold marks the element of
largest DensitySum in its own subtree as a content root, and its children are visited in
turn (subtrees already marked are not visited again).

Everything is computed from ONE iterative pre-order walk over the tree that fills
flat per-element arrays; the rest works on the arrays, so pages with
100,000 elements or 100,000 levels of nesting cost linear time and no Python stack.
"""

from __future__ import annotations

import math
from itertools import compress
from typing import Any, Callable, Iterable, Optional

from lxml import etree

from sst_cleaner.engine._dom import BLOCK_TAGS, PreparedPage
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult
from sst_cleaner.engine._segment import text_blocks
from sst_cleaner.engine._tree_table import ElementTable, child_indices

#: tags counted as hyperlinks (4.1.3: "buttons and drop-down lists are treated as hyperlinks")
LINK_TAGS = frozenset({"a", "button", "select"})
#: the two densities of the paper this module implements
DENSITIES = ("ctd", "td")

_E = math.e
_log = math.log

IgnoreFn = Callable[[etree._Element], bool]


class Densities:
    """Per-element CETD statistics of one page, in flat arrays indexed in pre-order.

    ``elements[i]`` is the element, ``parent[i]`` its parent's index (-1 for the root),
    ``size[i]`` the number of elements in its subtree (itself included), ``C``, ``T``,
    ``LC``, ``LT`` the paper's raw counts (``T`` before the zero -> 1 pseudo-count),
    ``TD``/``CTD`` the two densities, ``runs[i]`` the lengths of the text nodes directly
    inside element ``i`` (negative for text inside a hyperlink), ``ignored`` the indices of
    the outermost elements the ``ignore`` callable matched. ``index`` maps an element to
    its position.
    """

    __slots__ = (
        "elements",
        "index",
        "parent",
        "size",
        "C",
        "T",
        "LC",
        "LT",
        "runs",
        "ignored",
        "TD",
        "CTD",
        "_ds",
        "_best",
    )

    def __init__(
        self,
        elements: list,
        parent: list[int],
        size: list[int],
        C: list[int],
        T: list[int],
        LC: list[int],
        LT: list[int],
        runs: list,
        ignored: Iterable[int] = (),
        index: Optional[dict] = None,
    ) -> None:
        self.elements: list = elements
        #: (``index``: the same map, when the walk that made ``elements`` made it already)
        self.index: dict = index if index is not None else {el: i for i, el in enumerate(elements)}
        self.parent: list[int] = parent
        self.size: list[int] = size
        self.C: list[int] = C
        self.T: list[int] = T
        self.LC: list[int] = LC
        self.LT: list[int] = LT
        self.runs: list = runs
        self.ignored: list[int] = list(ignored)
        self.TD: list[float] = []
        self.CTD: list[float] = []
        self._ds: dict = {}
        self._best: dict = {}
        self._compute_densities()

    # -- Eq. 1 and Eq. 2 -------------------------------------------------------------
    @property
    def C_b(self) -> int:
        return self.C[0] if self.C else 0

    @property
    def LC_b(self) -> int:
        return self.LC[0] if self.LC else 0

    @property
    def link_ratio(self) -> float:
        """``LC_b / C_b``: the page-wide share of link text (the balancing term of Eq. 2)."""
        return self.LC_b / (self.C_b or 1)

    def _compute_densities(self) -> None:
        ratio = self.link_ratio
        # A page whose (non-ignored) text holds no link at all makes every base of Eq. 2
        # ln(e) = 1, and a logarithm to base 1 is undefined: the paper notes such a page
        # gets "an infinite density" everywhere and would be kept whole. We keep the
        # ranking usable instead: without links CTD carries no more information than TD,
        # so CTD falls back to TD on such a page.
        no_links = ratio == 0.0
        C, T, LC, LT = self.C, self.T, self.LC, self.LT
        TD = [0.0] * len(C)
        CTD = [0.0] * len(C)
        for i, c in enumerate(C):
            if c == 0:
                continue  # no text: density 0 (the 0/0 of an empty subtree)
            t = T[i] or 1
            td = c / t
            TD[i] = td
            if no_links:
                CTD[i] = td
                continue
            lc = LC[i]
            lt = LT[i] or 1
            if lc == c and lt == t:
                # links only (all its text and tags): Eq. 2's logarithm is log(1) = 0,
                # so CTD is 0 (3.3): menus and link lists, a large share of a page
                continue
            nlc = (c - lc) or 1
            arg = (c / (lc or 1)) * (t / lt)
            base = _log((c / nlc) * lc + ratio * c + _E)
            CTD[i] = td * _log(arg) / _log(base)
        self.TD = TD
        self.CTD = CTD

    def density(self, kind: str = "ctd") -> list[float]:
        if kind == "ctd":
            return self.CTD
        if kind == "td":
            return self.TD
        raise ValueError(f"density must be one of {DENSITIES}, not {kind!r}")

    def text_node_density(self, length: int, kind: str = "ctd") -> float:
        """Density of one text node of ``length`` characters (negative: inside a link).

        A text node is a DOM leaf: ``T`` = 0 -> 1 and no link tags below it; inside a link
        all its characters are link characters, so its CTD is ``log(1) = 0``.
        """
        return self._run_density(kind)(length)

    def _run_density(self, kind: str) -> Callable[[int], float]:
        """:meth:`text_node_density` for one ``kind`` on this page, its page-wide terms
        read once (it is asked of every text node of the page)."""
        if kind == "td":
            return lambda n: float(-n if n < 0 else n)
        ratio = self.link_ratio
        if ratio == 0.0:
            return lambda n: 0.0 if n < 0 else float(n)
        # Eq. 2 with C = nLC = c, LC = 0, T = LT = 0 -> 1
        return lambda n: 0.0 if n < 0 else n * _log(n) / _log(_log(ratio * n + _E))

    # -- Eq. 5 -----------------------------------------------------------------------
    def density_sum(self, kind: str = "ctd", text_nodes: bool = True) -> list[float]:
        """DensitySum of every element: the sum of its children's densities (Eq. 5)."""
        key = (kind, text_nodes)
        ds = self._ds.get(key)
        if ds is not None:
            return ds
        dens = self.density(kind)
        parent = self.parent
        ds = [0.0] * len(dens)
        for i in range(1, len(dens)):
            ds[parent[i]] += dens[i]
        if text_nodes:
            run_density = self._run_density(kind)
            runs = self.runs
            for i in compress(range(len(runs)), runs):  # the elements with text of their own
                ds[i] += sum(map(run_density, runs[i]))
        self._ds[key] = ds
        return ds

    def max_density_sum(self, kind: str = "ctd", text_nodes: bool = True) -> list[int]:
        """For every element, the index of the element of largest DensitySum in its subtree.

        Ties go to the first in document order (an ancestor before its descendants), as a
        pre-order search would find it. Descendants have larger pre-order indices than
        their ancestors, so one backward sweep over the arrays settles every subtree.
        """
        key = (kind, text_nodes)
        best = self._best.get(key)
        if best is not None:
            return best
        ds = self.density_sum(kind, text_nodes)
        parent = self.parent
        best = list(range(len(ds)))
        for i in range(len(ds) - 1, 0, -1):
            p = parent[i]
            bi, bp = best[i], best[p]
            if ds[bi] > ds[bp] or (ds[bi] == ds[bp] and bi < bp):
                best[p] = bi
        self._best[key] = best
        return best

    def __len__(self) -> int:
        return len(self.elements)


def compute_densities(
    root: etree._Element,
    ignore: Optional[IgnoreFn] = None,
    inline_tags: bool = True,
    table: Optional[ElementTable] = None,
) -> Densities:
    """Count ``C``, ``T``, ``LC``, ``LT`` for every element under ``root`` (usually BODY)
    from the pre-order arrays of its :class:`ElementTable` and one backward sweep over
    them, then derive TD and CTD.

    ``ignore(el) -> bool`` marks elements whose text (their whole subtree's) counts as zero
    characters, e.g. site-template nodes found by a site model: the elements stay (their
    tags still count), their words no longer attract the density.

    ``inline_tags=False`` (an adaptation for today's markup, not in the paper): only
    block-level tags and hyperlink tags count in ``T``, so the ``<span>``/``<em>``/``<br>``
    formatting inside a paragraph does not dilute its density the way the
    "highly formatted" noise the paper targets does.

    ``table``: the :class:`ElementTable` of ``root`` when the caller has one (made here
    otherwise): its order, parents and subtree sizes are the arrays' layout.
    """
    if table is None:
        table = ElementTable(root)
    tags = table.nodes()[0]
    parent = table.parent
    in_link = _in_link(tags, parent)
    ignored: list[int] = []
    skipped = None
    if ignore is not None:
        ignored = _outermost(table, ignore)
        skipped = _subtrees_marked(table.size, ignored)
    C, LC, runs = _own_counts(table, in_link, skipped)
    check_budget()
    n = len(parent)
    # per element, what it adds to its parent's T
    if inline_tags:
        t_step = b"\x01" * n
    else:
        t_step = bytes(1 if link or tag in BLOCK_TAGS else 0 for tag, link in zip(tags, in_link))
    # Descendants have larger pre-order indices than their ancestors: one backward sweep
    # folds every subtree into its parent (integer sums, so the order does not matter).
    T = [0] * n
    LT = [0] * n
    for i in range(n - 1, 0, -1):
        p = parent[i]
        C[p] += C[i]
        LC[p] += LC[i]
        T[p] += T[i] + t_step[i]
        LT[p] += LT[i] + in_link[i]
    return Densities(table.elements, parent, table.size, C, T, LC, LT, runs, ignored, table.index)


def _in_link(tags: list, parent: list[int]) -> bytearray:
    """1 for every element that is a hyperlink or lies inside one, else 0."""
    in_link = bytearray(len(tags))
    for i, tag in enumerate(tags):
        # (the root's parent is -1: the last element, not marked yet)
        if tag in LINK_TAGS or in_link[parent[i]]:
            in_link[i] = 1
    return in_link


def _outermost(table: ElementTable, ignore: IgnoreFn) -> list[int]:
    """The elements ``ignore`` matches, in document order, none inside another (it is
    not asked about the elements below a match)."""
    size = table.size
    found = []
    end = 0
    for i, el in enumerate(table.elements):
        if i >= end and ignore(el):
            found.append(i)
            end = i + size[i]
    return found


def _subtrees_marked(size: list[int], heads: list[int]) -> bytearray:
    """1 for every element inside the subtree of one of ``heads`` (ascending, none
    inside another), else 0."""
    marked = bytearray(len(size))
    for i in heads:
        marked[i : i + size[i]] = b"\x01" * size[i]
    return marked


def _own_counts(table: ElementTable, in_link: bytearray, skipped: Optional[bytearray]) -> tuple:
    """Every element's own ``C`` and ``LC``: its text and its children's tails (a tail
    lies in the parent's context), and ``runs``: the lengths of those text nodes in
    document order (negative inside a hyperlink; None for none). ``skipped``: 1 for the
    elements whose text counts as zero.

    A text node's characters are counted with whitespace collapsed and trimmed, as the
    paper counts them (Example 3.2: "Though the value of the company was" is 35)."""
    # each array is made by one comprehension over the table: one Python loop per
    # element with every branch in it cost more than these passes together
    _tags, texts, tails = table.nodes()
    parent = table.parent
    if skipped is None:
        C = [len(" ".join(text.split())) if text else 0 for text in texts]
        tail_chars = [len(" ".join(tail.split())) if tail else 0 for tail in tails]
    else:  # text that counts as zero is not even read (a site's template is most of it)
        C = [len(" ".join(text.split())) if text and not skip else 0 for text, skip in zip(texts, skipped)]
        tail_chars = [len(" ".join(tail.split())) if tail and not skipped[p] else 0 for tail, p in zip(tails, parent)]
    tail_chars[0] = 0  # the root's tail lies outside it
    LC = [n if link else 0 for n, link in zip(C, in_link)]
    runs: list = [([-n] if link else [n]) if n else None for n, link in zip(C, in_link)]
    # in document order, so each element's runs follow its text in its children's order
    for i in compress(range(len(tail_chars)), tail_chars):
        n = tail_chars[i]
        p = parent[i]
        C[p] += n
        if in_link[p]:
            LC[p] += n
            n = -n
        r = runs[p]
        if r is None:
            runs[p] = [n]
        else:
            r.append(n)
    return C, LC, runs


def comment_like(el: etree._Element) -> bool:
    """True for an element whose id or class names it as user comments ("comments",
    "commentlist", "comment-form"...).

    Not in the paper: an adaptation for today's blogs and news pages, where the comment
    thread under an article is often longer and denser than the article itself, so the
    max-DensitySum element is the thread. Whether comments are content is a convention
    (CleanEval gold keeps some, Dragnet gold drops them), hence opt-in
    (``CETDMethod(skip_comments=True)``, or pass this as ``ignore``).
    """
    attrib = el.attrib
    ident = attrib.get("id")
    cls = attrib.get("class")
    if not ident and not cls:
        return False
    return "comment" in f"{ident or ''} {cls or ''}".lower()


def threshold_of(d: Densities, density: str = "ctd", text_nodes: bool = True) -> float:
    """3.5.2: the smallest density on the path from the max-DensitySum element to BODY."""
    if not len(d):
        return 0.0
    dens = d.density(density)
    j = d.max_density_sum(density, text_nodes)[0]
    t = dens[j]
    while j > 0:
        j = d.parent[j]
        if dens[j] < t:
            t = dens[j]
    return t


def select_content(d: Densities, density: str = "ctd", text_nodes: bool = True) -> list[int]:
    """Algorithm 2 (ExtractContent) from BODY, iteratively: indices of the content roots
    in document order."""
    if not len(d):
        return []
    dens = d.density(density)
    best = d.max_density_sum(density, text_nodes)
    threshold = threshold_of(d, density, text_nodes)
    content: set[int] = set()
    stack = [0]
    while stack:
        n = stack.pop()
        if n in content:
            continue  # MarkContent already took this subtree
        if dens[n] >= threshold:
            content.add(best[n])
            if best[n] == n:
                continue
            stack.extend(reversed(list(child_indices(d.size, n))))
    return sorted(content)


class ContentRoots(set):
    """The set of content-root elements :func:`extract_content` returns, carrying the
    :class:`Densities` it was computed from (``.densities``), so that
    :func:`label_blocks` can score blocks and honour ``ignore`` without a second walk."""

    densities: Optional[Densities] = None


def extract_content(
    root: etree._Element,
    ignore: Optional[IgnoreFn] = None,
    density: str = "ctd",
    text_nodes: bool = True,
    table: Optional[ElementTable] = None,
) -> ContentRoots:
    """The roots of the content subtrees of the page under ``root`` (CECTD-DS by default,
    ``density="td"`` for CETD-DS); ``table``: see :func:`compute_densities`."""
    d = compute_densities(root, ignore, table=table)
    check_budget()
    roots = ContentRoots(d.elements[i] for i in select_content(d, density, text_nodes))
    check_budget()
    roots.densities = d
    return roots


def covered_elements(content_roots: Iterable[etree._Element]) -> set:
    """Every element inside (or equal to) one of the content roots."""
    covered: set = set()
    for r in content_roots:
        covered.update(r.iter())
    return covered


def _inline_cover(d: Densities, roots: Iterable[int]) -> dict:
    """Characters of inline content roots, credited to the element of their text block.

    A content root can be an inline element (a ``<font>`` or ``<span>`` holding a whole
    article inside a ``<p>`` or ``<td>``): its text belongs to the text block of its
    nearest block-level ancestor, which is not inside the root. Returns ``{block element
    index: characters of inline content roots in it}``.
    """
    roots = [r for r in roots if d.elements[r].tag not in BLOCK_TAGS]
    if not roots:
        return {}
    elements, parent = d.elements, d.parent
    cover: dict[int, int] = {}
    for r in roots:
        j = parent[r]
        while j > 0 and elements[j].tag not in BLOCK_TAGS:
            j = parent[j]
        j = max(j, 0)
        cover[j] = cover.get(j, 0) + d.C[r]
    return cover


def label_blocks(
    page: PreparedPage,
    content_roots: Iterable[etree._Element],
    densities: Optional[Densities] = None,
    density: str = "ctd",
    inline_share: Optional[float] = 0.5,
) -> list[Block]:
    """Label every text block of the page: informative when its element is a content root
    or lies inside one, and not inside an element that ``densities`` was told to ignore.
    ``score`` is the element's density. ``densities`` defaults to the ones carried by
    ``content_roots`` when they come from :func:`extract_content` (so its ``ignore``
    holds here too), else they are computed.

    ``inline_share`` (an adaptation; ``None`` for the strict reading): a block that
    *contains* inline content roots is informative too when their characters make at
    least this share of the block's text. The authors' implementation keeps the
    ancestors of content roots with their own text, so a block-level reading of its
    output needs this for pages whose content sits in inline tags (old ``<font>``
    layouts).
    """
    if densities is None:
        densities = getattr(content_roots, "densities", None)
    d = densities if densities is not None else compute_densities(page.root)
    dens = d.density(density)
    index, size = d.index, d.size
    # covered[i] = 1 when element i lies in a content root: pre-order puts a subtree in
    # one slice of the arrays, so marking a root is one slice assignment
    covered = bytearray(len(d))
    root_idx: list[int] = []
    foreign: list = []  # roots that are not elements of this tree (no index): rare
    for r in content_roots:
        i = index.get(r)
        if i is None:
            foreign.append(r)
        else:
            root_idx.append(i)
            covered[i : i + size[i]] = b"\x01" * size[i]
    if foreign:
        for el in covered_elements(foreign):
            i = index.get(el)
            if i is not None:
                covered[i] = 1
    for i in d.ignored:  # text counted as zero is never content
        covered[i : i + size[i]] = bytes(size[i])
    cover: dict = {}
    if inline_share is not None:
        cover = _inline_cover(d, root_idx)
    out: list[Block] = []
    xpath_of = page.xpath_of
    blocks = text_blocks(page.root)
    check_budget()
    for bi, blk in enumerate(blocks):
        if not bi & 127:  # a clock read costs a microsecond: every so many blocks
            check_budget()
        el = blk.element
        i = index.get(el)
        score = dens[i] if i is not None else 0.0
        informative = i is not None and covered[i] == 1
        if not informative and cover and i in cover:
            informative = cover[i] >= inline_share * len(blk.text)  # type: ignore[operator]
        out.append(Block(xpath_of(el), blk.text, INFORMATIVE if informative else NOISE, float(score)))
    return out


@register_method("cetd")
class CETDMethod:
    """CETD as a ``SiteCleaner`` method: page-level only, so fitting just counts pages.

    Parameters (DEV F1 in page mode, portal / sites-dev / single-dev / docs-dev, are in
    ``benchmarks/cetd_check.py``'s output and the commit log):

    * ``density``: ``"ctd"`` (CECTD-DS, the paper's best on its broad corpora, Table 2)
      or ``"td"`` (CETD-DS);
    * ``text_nodes``: text nodes are children in DensitySum (default True);
    * ``inline_share``: blocks holding inline content roots (see :func:`label_blocks`),
      ``None`` for the strict reading; default 0.5;
    * ``inline_tags``: count inline formatting tags in ``T`` (default True, as the paper);
    * ``skip_comments``: treat comment threads (:func:`comment_like`) as ignored text
      (default False: a gold-standard convention, not part of the paper).
    """

    def __init__(
        self,
        density: str = "ctd",
        text_nodes: bool = True,
        inline_share: Optional[float] = 0.5,
        inline_tags: bool = True,
        skip_comments: bool = False,
    ):
        if density not in DENSITIES:
            raise ValueError(f"density must be one of {DENSITIES}, not {density!r}")
        self.density = density
        self.text_nodes = bool(text_nodes)
        self.inline_share = None if inline_share is None else float(inline_share)
        self.inline_tags = bool(inline_tags)
        self.skip_comments = bool(skip_comments)
        self.n_pages = 0

    def fit(self, pages: list[PreparedPage]) -> None:
        self.n_pages = len(pages)

    def partial_fit(self, page: PreparedPage) -> None:
        self.n_pages += 1

    def clean(self, page: PreparedPage) -> CleanResult:
        d = compute_densities(page.root, comment_like if self.skip_comments else None, inline_tags=self.inline_tags)
        check_budget()
        blocks = content_blocks(page, d, self.density, self.text_nodes, self.inline_share)
        check_budget()
        return CleanResult.from_blocks(blocks, "cetd", page.title)

    def to_dict(self) -> dict:
        return {"n_pages": self.n_pages}

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "CETDMethod":
        obj = cls(**params)
        obj.n_pages = saved_page_count(state)
        return obj


def content_blocks(
    page: PreparedPage, d: Densities, density: str, text_nodes: bool, inline_share: Optional[float]
) -> list[Block]:
    """The page's blocks labelled from the content roots :func:`select_content` picks on
    ``d`` by ``density`` (CETD's ``td``/``ctd``, or any density ``d`` carries, such as
    CEHTD's ``htd``)."""
    roots = [d.elements[i] for i in select_content(d, density, text_nodes)]
    return label_blocks(page, roots, d, density, inline_share)


def saved_page_count(state: Any) -> int:
    """The ``n_pages`` of a saved page-level model (``to_dict``'s), 0 when it is not a
    count: a model file is untrusted."""
    n = state.get("n_pages", 0) if isinstance(state, dict) else 0
    return n if isinstance(n, int) and n >= 0 else 0
