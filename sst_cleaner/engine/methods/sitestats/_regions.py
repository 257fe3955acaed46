"""The page's containers the default method's features ask about: the deepest
element holding most of the page's own text, the container a reader-view extractor
would pick, and the CETD content region with the site's template text zeroed out.

Each is found once per page, in a walk linear in the page's elements; the features
then ask per block whether its element lies inside.
"""

from __future__ import annotations

from itertools import repeat
from operator import le
from typing import TYPE_CHECKING, Callable, Optional

from sst_cleaner.engine._tree_table import ElementTable, child_indices
from sst_cleaner.engine.methods.cetd import extract_content
from sst_cleaner.engine.methods.sitestats._names import HINT_COMMENT
from sst_cleaner.engine.methods.sitestats.site_stats import PageAnalysis, PageView

if TYPE_CHECKING:
    from lxml import etree


def deepest_holding(table: ElementTable, agg: dict, content_total: int, share: float) -> etree._Element:
    """Walking down from the table's root, the child holding at least ``share`` of the
    page's non-template text, as deep as such a child exists (the root if none)."""
    elements, size = table.elements, table.size
    node = 0
    if content_total <= 0:
        return elements[node]
    while True:
        best, best_c = -1, -1
        for c in child_indices(size, node):
            a = agg.get(elements[c])
            if a is not None and a[0] - a[1] > best_c:
                best, best_c = c, a[0] - a[1]
        if best < 0 or best_c < share * content_total:
            return elements[node]
        node = best


def prose_container(
    pa: PageAnalysis, agg: dict, btmpl: list, content_total: int, hints: list
) -> tuple[list, Callable[[etree._Element], float], float]:
    """The container a reader-view extractor would pick (Readability's scoring, on our
    blocks): every prose block of 25+ characters that is not template and not in a
    container named as comments (``hints``: per block, the HINT_* bits of its names as
    the page reads them; a long thread outweighs a short article) scores 1 + its commas
    + a point per 100 characters (at most 3), given whole to its parent and half to its
    grandparent; a container's score is scaled by its share of non-link text.

    Returns (the best container followed by its kin (``_kin``), empty if none; block
    element -> best score among its three nearest containers / the best score, a kin
    container counting as the best; the best container's share of the page's
    non-template text)."""
    score: dict = {}
    for b, t, (h, _near) in zip(pa.blocks, btmpl, hints):
        blk = b.block
        n = len(blk.text)
        if n < 25 or t >= 0.5 or blk.link_chars * 2 > n or h & HINT_COMMENT:
            continue
        s = 1.0 + blk.text.count(",") + min(3, n // 100)
        parent = blk.element.getparent()
        if parent is None:
            continue
        score[parent] = score.get(parent, 0.0) + s
        grand = parent.getparent()
        if grand is not None:
            score[grand] = score.get(grand, 0.0) + s / 2
    best, best_s = None, 0.0
    final: dict = {}
    for el, s in score.items():
        a = agg.get(el)
        if a is None:
            continue
        s *= 1.0 - a[2] / max(1, a[0])
        final[el] = s
        if s > best_s:
            best, best_s = el, s
    if best is None:
        return [], lambda el: 0.0, 0.0

    kin = _kin(best, final)
    for el in kin:  # a member's description ranks with the best one's
        final[el] = best_s
    by_parent: dict = {}  # the blocks of one container share their three nearest

    def ratio(el: etree._Element) -> float:
        parent = el.getparent()
        got = by_parent.get(parent)
        if got is None:
            got = by_parent[parent] = _nearest_best(parent, final) / best_s
        return got

    a = agg[best]
    return [best] + kin, ratio, (a[0] - a[1]) / max(1, content_total)


def _kin(best: etree._Element, final: dict) -> list:
    """The other prose containers of the best one's tag and class: a reference page
    writes each member's description in its own container of one kind (rustdoc's
    ``div.docblock``, javadoc's ``div.block``, Sphinx's nested ``div.section``), and
    the best of them alone is one member's. A container without a class has no kin."""
    cls = best.get("class")
    if not cls:
        return []
    return [el for el in final if el is not best and el.tag == best.tag and el.get("class") == cls]


def _nearest_best(el: Optional[etree._Element], final: dict) -> float:
    """The best score among ``el`` and its two nearest ancestors (0 for none)."""
    r = 0.0
    for _ in range(3):
        if el is None:
            break
        r = max(r, final.get(el, 0.0))
        el = el.getparent()
    return r


class CetdRegion(set):
    """Elements inside the CETD content region (every content root of Algorithm 2), with
    ``top``: the elements inside the one subtree of largest DensitySum. Algorithm 2's
    threshold adds a handful of further roots on a typical news page (captions, bylines,
    related lists, comments); the paper's gold kept comments, an article's does not."""

    top: frozenset = frozenset()


def cetd_region(pa: PageAnalysis, view: Optional[PageView], plain: Optional[dict] = None) -> CetdRegion:
    """The CETD content region, computed with template sentences zeroed.

    ``plain``: a dict kept across the calls for one page, holding the region with
    nothing zeroed once made: a page whose site verdict is nearly empty is scored
    again alone, and where none of its blocks recurs both regions are that one."""
    doomed = set()
    if view is not None and view.n_other > 0:
        # a block all of whose sentences recur on recur_df other pages (compared in C:
        # recur_df <= the df of each hash BlockText lays out)
        df, recur = view.sentence_df, repeat(view.recur_df)
        for b in pa.blocks:
            if all(map(le, recur, map(df, b.text_info.hashes))):
                doomed.add(b.block.element)
    if doomed or plain is None:
        return _region(pa, doomed.__contains__ if doomed else None)
    region = plain.get("region")
    if region is None:
        region = plain["region"] = _region(pa, None)
    return region


def _region(pa: PageAnalysis, ignore: Optional[Callable[[etree._Element], bool]]) -> CetdRegion:
    table = pa.table
    roots = extract_content(pa.page.root, ignore=ignore, table=table)
    region = CetdRegion()
    for r in roots:  # a content root's subtree is one slice of the table
        region.update(table.subtree(r))
    d = roots.densities
    if d is not None and len(d):
        region.top = frozenset(table.subtree(d.elements[d.max_density_sum()[0]]))
    return region
