"""CEHTD-DS: Content Extraction via Hybrid Text Density with DensitySum.

Song, Sun & Liao, "A hybrid approach for content extraction with text density and
visual importance of DOM nodes" (KAIS 2013), section 3.4: CECTD-DS
(:mod:`~sst_cleaner.engine.methods.cetd`, whose counts, DensitySum and extraction this
module reuses) with each leaf's characters weighted by its *visual importance*. It needs
the page's rendered layout, read from the attributes a render wrote into its HTML
(:mod:`sst_cleaner.engine._layout`, :mod:`sst_cleaner.render`). One function per
definition, named as in the paper:

* :func:`content_column`: ``Node_L``, the node with the longest horizontal span under the
  root, and its boundaries ``x_L1``, ``x_L2``;
* :func:`visual_importance`: ``VI_i`` (Definition 3.3, Eq. 3), the integral over the
  node's extent ``[x_1, x_2]`` of the density of ``N(mu, sigma^2)``, ``mu = (x_L1+x_L2)/2``,
  ``sigma = (x_L2-x_L1)/2``; 0 for a hidden node;
* :func:`hybrid_char_number`: ``HC_i = VI_i * C_i`` for a leaf; an element's HC is the sum
  of its sons' (:func:`hybrid_char_numbers`);
* :func:`hybrid_text_density`: ``HTD_i`` (Definition 3.4, Eq. 4): Eq. 2 with ``C_i`` and
  ``C_b`` replaced by ``HC_i`` and ``HC_b``, and the paper's adaption ``T_i = HC_i / C_i``
  where ``T_i`` is 0;
* DensitySum (Eq. 5) on HTD: :meth:`HybridDensities.density_sum`.

Readings of the paper where it is not explicit (each one documented in docs/methods.md):

* Leaves. The paper's leaf is "an innermost tag encompassing text only"; as in
  :mod:`~sst_cleaner.engine.methods.cetd`, the leaves here are the text nodes, and a text
  node's horizontal extent is the box of the element it lies directly in (a text node has
  no attributes to carry a box of its own). An element without a box (the parser of the
  engine made it, or the page came from a driver that skipped it) takes its nearest
  ancestor's box.
* ``Node_L`` is the widest visible element of BODY's subtree, BODY included (ties: the
  first in document order).
* Hidden text. A node the browser did not show gets ``VI = 0`` (the paper); its
  characters are also left out of ``C`` (as :func:`~sst_cleaner.engine.methods.cetd.
  compute_densities`' ``ignore`` does), so hidden text is never labelled content even
  inside a content root, as the engine already does for text hidden by inline styles.
* Negative densities. Eq. 4's logarithm is negative when ``HC_i`` is smaller than the
  link share allows (``(HC_i/LC_i)(T_i/LT_i) < 1``, which Eq. 2 cannot reach since
  ``C_i >= LC_i``); the paper designs its adaption "to avoid the Hybrid Text Density
  being negative", so such a density counts as 0. A page without links makes every
  base of Eq. 4 ``ln(e) = 1``: as CECTD falls back to TD there, HTD falls back to
  ``HC_i / T_i``.

Without layout attributes ``SiteCleaner(method="cehtd")`` cleans the page with CECTD-DS
and says so: ``result.method == "cetd"``, ``result.status == "no_layout"``, a count
(``pages_without_layout``) and a warning in the log for the first such page. (A page
without layout is not an error: a saved model is checked at load on a page that has
none, and a crawl goes on; callers that need the layout check ``result.status``.)
"""

from __future__ import annotations

import logging
import math
from typing import Any, Optional

from lxml import etree

from sst_cleaner.engine._dom import PreparedPage
from sst_cleaner.engine._layout import ATTR_VISIBLE, element_box, has_layout
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import STATUS_NO_LAYOUT, CleanResult
from sst_cleaner.engine.methods.cetd import (
    CETDMethod,
    Densities,
    comment_like,
    compute_densities,
    content_blocks,
    saved_page_count,
)

logger = logging.getLogger(__name__)


_E = math.e
_log = math.log
_SQRT2 = math.sqrt(2.0)


# -- Definition 3.3 --------------------------------------------------------------------
def normal_cdf(x: float, mu: float, sigma: float) -> float:
    """``P(X <= x)`` for ``X ~ N(mu, sigma^2)`` (``sigma > 0``)."""
    return 0.5 * (1.0 + math.erf((x - mu) / (sigma * _SQRT2)))


def content_column(boxes: list[Optional[tuple[float, float, bool]]]) -> Optional[tuple[float, float]]:
    """``(x_L1, x_L2)``: the boundaries of ``Node_L``, the visible node of longest
    horizontal span (``boxes``: ``(x1, x2, visible)`` or None per node, in document order);
    None when no visible node has a positive width."""
    best: Optional[tuple[float, float]] = None
    span = 0.0
    for box in boxes:
        if box is not None and box[2] and box[1] - box[0] > span:
            span = box[1] - box[0]
            best = (box[0], box[1])
    return best


def visual_importance(x1: float, x2: float, x_l1: float, x_l2: float, visible: bool = True) -> float:
    """``VI_i`` (Eq. 3): the integral from ``x1`` to ``x2`` of the density of
    ``N((x_L1 + x_L2) / 2, ((x_L2 - x_L1) / 2)^2)``; 0 for a hidden node."""
    if not visible or x2 <= x1:
        return 0.0
    mu = (x_l1 + x_l2) / 2.0
    sigma = (x_l2 - x_l1) / 2.0
    if sigma <= 0:
        raise ValueError("the content column must have a positive width")
    return max(0.0, normal_cdf(x2, mu, sigma) - normal_cdf(x1, mu, sigma))


# -- Section 3.4.2 ---------------------------------------------------------------------
def hybrid_char_number(vi: float, c: float) -> float:
    """``HC_i = VI_i * C_i`` for a leaf node."""
    return vi * c


def hybrid_char_numbers(d: Densities, own_vi: list[float]) -> list[float]:
    """Every element's Hybrid CharNumber: its own text nodes' ``VI * C`` (``own_vi[i]``,
    the visual importance of element ``i``'s box, weighs the text directly in it) plus
    the sum of its element sons' HC."""
    n = len(d)
    hc = [0.0] * n
    runs = d.runs
    for i in range(n):
        r = runs[i]
        if r:
            hc[i] = hybrid_char_number(own_vi[i], sum(-x if x < 0 else x for x in r))
    parent = d.parent
    for i in range(n - 1, 0, -1):  # pre-order: a descendant comes after its ancestors
        hc[parent[i]] += hc[i]
    return hc


def hybrid_text_density(hc: float, c: float, t: float, lc: float, lt: float, lc_b: float, hc_b: float) -> float:
    """``HTD_i`` (Eq. 4) of a node with Hybrid CharNumber ``hc``, CharNumber ``c``, tags
    ``t``, link characters ``lc`` and link tags ``lt``, on a page whose BODY has ``lc_b``
    link characters and Hybrid CharNumber ``hc_b``.

    ``T_i = 0`` becomes ``HC_i / C_i`` (the paper's adaption); other zero denominators
    count as 1 (as in Eq. 2). A node of links only has density 0 (3.3), so has a node
    without hybrid characters; a negative value counts as 0, and a page without links
    gives ``HC_i / T_i`` (see the module's notes).
    """
    if hc <= 0 or c <= 0:
        return 0.0
    if lc == c and lt == t and lc_b:
        return 0.0  # links only: its text and its tags (before the adaption of T)
    if t == 0:
        t = hc / c
    td = hc / t
    if lc_b == 0:
        return td
    lt1 = lt or 1
    arg = (hc / (lc or 1)) * (t / lt1)
    if arg <= 1.0:
        return 0.0
    nlc = (c - lc) or 1
    base = _log((hc / nlc) * lc + (lc_b / (hc_b or 1)) * hc + _E)
    return td * _log(arg) / _log(base)


class HybridDensities:
    """The CECTD counts of a page (:class:`~sst_cleaner.engine.methods.cetd.Densities`)
    with the Hybrid Text Density beside them: ``density("htd")`` and the DensitySum and
    its subtree maxima on it, so that CETD's threshold and extraction
    (:func:`~sst_cleaner.engine.methods.cetd.select_content`,
    :func:`~sst_cleaner.engine.methods.cetd.label_blocks`) run on HTD unchanged. Every
    other attribute is the wrapped :class:`Densities`'.
    """

    def __init__(self, d: Densities, own_vi: list[float]) -> None:
        self.base = d
        self.own_vi = own_vi
        self.HC = hybrid_char_numbers(d, own_vi)
        lc_b = d.LC_b
        hc_b = self.HC[0] if self.HC else 0.0
        self.lc_b, self.hc_b = lc_b, hc_b
        self.HTD = [
            hybrid_text_density(hc, c, t, lc, lt, lc_b, hc_b) for hc, c, t, lc, lt in zip(self.HC, d.C, d.T, d.LC, d.LT)
        ]
        self._ds: dict = {}
        self._best: dict = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def __len__(self) -> int:
        return len(self.base)

    def density(self, kind: str = "htd") -> list[float]:
        return self.HTD if kind == "htd" else self.base.density(kind)

    def text_node_density(self, i: int, length: int) -> float:
        """HTD of one text node of ``length`` characters (negative: inside a link)
        directly in element ``i``: a leaf whose extent is element ``i``'s box."""
        link = length < 0
        c = -length if link else length
        return hybrid_text_density(
            hybrid_char_number(self.own_vi[i], c), c, 0, c if link else 0, 0, self.lc_b, self.hc_b
        )

    def density_sum(self, kind: str = "htd", text_nodes: bool = True) -> list[float]:
        """DensitySum (Eq. 5) of every element: the sum of its sons' densities, its text
        nodes included when ``text_nodes``."""
        if kind != "htd":
            return self.base.density_sum(kind, text_nodes)
        ds = self._ds.get(text_nodes)
        if ds is not None:
            return ds
        dens, parent = self.HTD, self.base.parent
        ds = [0.0] * len(dens)
        for i in range(1, len(dens)):
            ds[parent[i]] += dens[i]
        if text_nodes:
            for i, r in enumerate(self.base.runs):
                if r:
                    ds[i] += sum(self.text_node_density(i, n) for n in r)
        self._ds[text_nodes] = ds
        return ds

    def max_density_sum(self, kind: str = "htd", text_nodes: bool = True) -> list[int]:
        """For every element, the index of the element of largest DensitySum in its
        subtree (ties: the first in document order), as
        :meth:`Densities.max_density_sum`."""
        if kind != "htd":
            return self.base.max_density_sum(kind, text_nodes)
        best = self._best.get(text_nodes)
        if best is not None:
            return best
        ds = self.density_sum(kind, text_nodes)
        parent = self.base.parent
        best = list(range(len(ds)))
        for i in range(len(ds) - 1, 0, -1):
            p = parent[i]
            bi, bp = best[i], best[p]
            if ds[bi] > ds[bp] or (ds[bi] == ds[bp] and bi < bp):
                best[p] = bi
        self._best[text_nodes] = best
        return best


def _hidden(el: etree._Element) -> bool:
    return el.get(ATTR_VISIBLE) == "0"


def own_visual_importance(d: Densities) -> Optional[list[float]]:
    """``VI`` of every element's box (an element without one takes its nearest
    ancestor's), the content column being :func:`content_column` of the page; None when
    no element of the page has a visible box of positive width."""
    elements, parent = d.elements, d.parent
    boxes: list = [element_box(el) for el in elements]
    for i in range(1, len(boxes)):
        if boxes[i] is None:
            boxes[i] = boxes[parent[i]]
    column = content_column(boxes)
    if column is None:
        return None
    x_l1, x_l2 = column
    return [0.0 if b is None else visual_importance(b[0], b[1], x_l1, x_l2, b[2]) for b in boxes]


def hybrid_densities(
    root: etree._Element, skip_comments: bool = False, inline_tags: bool = True
) -> Optional[HybridDensities]:
    """The :class:`HybridDensities` of the page under ``root`` (BODY), from its layout
    attributes; None when it has none (or no visible box)."""
    if not has_layout(root):
        return None

    def ignore(el: etree._Element) -> bool:
        return _hidden(el) or (skip_comments and comment_like(el))

    d = compute_densities(root, ignore, inline_tags=inline_tags)
    own_vi = own_visual_importance(d)
    if own_vi is None:
        return None
    return HybridDensities(d, own_vi)


@register_method("cehtd")
class CEHTDMethod:
    """CEHTD-DS as a ``SiteCleaner`` method: page-level, on pages rendered with their
    layout (:mod:`sst_cleaner.render`). Parameters as :class:`CETDMethod`'s
    (``text_nodes``, ``inline_share``, ``inline_tags``, ``skip_comments``). A page without
    layout is cleaned with CECTD-DS, ``status="no_layout"``, counted in
    ``pages_without_layout`` and logged once.
    """

    #: pages must carry a rendered layout (SiteCleaner.load checks a model on such a page)
    needs_layout = True

    def __init__(
        self,
        text_nodes: bool = True,
        inline_share: Optional[float] = 0.5,
        inline_tags: bool = True,
        skip_comments: bool = False,
    ):
        self.text_nodes = bool(text_nodes)
        self.inline_share = None if inline_share is None else float(inline_share)
        self.inline_tags = bool(inline_tags)
        self.skip_comments = bool(skip_comments)
        self.n_pages = 0
        #: pages cleaned without layout (by CECTD-DS) since this model was made
        self.pages_without_layout = 0

    def fit(self, pages: Any) -> None:
        self.n_pages = sum(1 for _ in pages)

    def partial_fit(self, page: PreparedPage) -> None:
        self.n_pages += 1

    def clean(self, page: PreparedPage) -> CleanResult:
        hd = hybrid_densities(page.root, self.skip_comments, self.inline_tags)
        if hd is None:
            return self._without_layout(page)
        check_budget()
        blocks = content_blocks(page, hd, "htd", self.text_nodes, self.inline_share)  # type: ignore[arg-type]
        return CleanResult.from_blocks(blocks, "cehtd", page.title)

    def _without_layout(self, page: PreparedPage) -> CleanResult:
        where = page.url or "a page"
        self.pages_without_layout += 1
        # once per model: every such page says so in its status, a crawl need not log each
        if self.pages_without_layout == 1:
            logger.warning(
                "cehtd: %s carries no layout (not rendered): cleaned with cetd (CECTD-DS); "
                "such pages get status %r and are counted in pages_without_layout, not logged again",
                where,
                STATUS_NO_LAYOUT,
            )
        cetd = CETDMethod(
            text_nodes=self.text_nodes,
            inline_share=self.inline_share,
            inline_tags=self.inline_tags,
            skip_comments=self.skip_comments,
        )
        result = cetd.clean(page)
        result.status = STATUS_NO_LAYOUT
        return result

    def to_dict(self) -> dict:
        return {"n_pages": self.n_pages}

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "CEHTDMethod":
        obj = cls(**params)
        obj.n_pages = saved_page_count(state)
        return obj
