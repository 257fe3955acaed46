"""MapSST (Yi, Liu & Li, KDD 2003, Fig. 7): label a page by mapping it onto a scored SST.

Going down from the roots of the SST and of the page style tree together:

* the SST element node is **noisy** -> the page node and everything under it is noise;
* it is **meaningful** -> the page node is kept (we keep walking below it only to learn
  which SST leaf each page leaf corresponds to: 3.6's locally noisy features need it);
* otherwise the page node's child sequence is matched to one of the element node's style
  nodes with the same rule as the build (exact, or tolerant alignment) and each aligned
  pair is mapped in turn; a child sequence (or, tolerant, a child) the SST has never seen
  is "possibly meaningful" (Fig. 7 line 17): kept.

An element node that is neither noisy nor meaningful but was a *leaf* on some pages
decides a page leaf by its leaf CompImp (eq. 4) against ``t``.

Labels are then spread to every DOM element (:func:`element_labels`): an element takes
the label of the nearest page node it belongs to. An internal element the walk went
*through* ("descend") gets, for its own text (the text directly in it and in its inline
children, i.e. its text block), the character-weighted majority label of those parts.
All walks are iterative.
"""

from __future__ import annotations

from typing import Optional

from lxml import etree

from sst_cleaner.engine._dom import BLOCK_TAGS, PreparedPage
from sst_cleaner.engine._result import INFORMATIVE, NOISE
from sst_cleaner.engine.methods.sst.page_style_tree import TEXT_KEY, PageNode, build_page_tree
from sst_cleaner.engine.methods.sst.site_style_tree import ElementNode, SiteStyleTree, find_style, resolve

#: internal label of an element the mapping went through (resolved per element later)
DESCEND = "descend"

Info = tuple  # (label, CompImp, ElementNode or None)


class PageMapping:
    """Result of :func:`map_page`.

    ``explicit``: DOM element -> (label, CompImp, SST element node or None) for the
    elements that page nodes stand for; ``text``: element -> the same for its direct
    text (its ``#text`` page node); ``leaf``: DOM element -> the SST leaf element node
    its page leaf was matched to (for locally noisy features).
    """

    __slots__ = ("explicit", "text", "leaf")

    def __init__(self) -> None:
        self.explicit: dict = {}
        self.text: dict = {}
        self.leaf: dict = {}

    def assign(self, T: PageNode, info: Info) -> None:
        if T.tag == TEXT_KEY:
            if T.owner is not None:
                self.text[T.owner] = info
            return
        for el in T.tops:
            self.explicit[el] = info


def map_page(sst: SiteStyleTree, page_root: PageNode, descend_meaningful: bool = True) -> PageMapping:
    """Fig. 7 MapSST over a page style tree. ``sst`` must be scored (see
    :func:`sst_cleaner.engine.methods.sst.importance.refresh`); ``sst.t`` is the threshold it was scored with."""
    t = sst.t if sst.t is not None else 0.0
    out = PageMapping()
    stack: list[tuple[ElementNode, PageNode, Optional[str]]] = [(sst.root, page_root, None)]
    match, tolerance = sst.match, sst.tolerance
    while stack:
        E, T, decided = stack.pop()
        E = resolve(E)
        if decided is None:
            if E.noisy:
                out.assign(T, (NOISE, E.comp, E))
                continue
            if E.meaningful:
                decided = INFORMATIVE
                out.assign(T, (INFORMATIVE, E.comp, E))
                if not descend_meaningful:
                    continue
            elif T.leaf:
                if E.leaf_n:
                    lc = E.leaf_comp if E.leaf_comp is not None else 1.0
                    out.assign(T, (NOISE if lc <= t else INFORMATIVE, lc, E))
                    _note_leaf(out, T, E)
                else:  # a leaf where the site always had children: never seen
                    out.assign(T, (INFORMATIVE, 1.0, None))
                continue
            else:
                out.assign(T, (DESCEND, E.comp, E))
        else:
            out.assign(T, (decided, E.comp, E))
        if T.leaf:
            if E.leaf_n:
                _note_leaf(out, T, E)
            continue
        S, align = find_style(E, T.child_keys(), match, tolerance)
        unseen = (decided or INFORMATIVE, 1.0, None)
        if S is None:
            for c in T.children:
                out.assign(c, unseen)
            continue
        els = S.resolved()
        for j, c in enumerate(T.children):
            i = align[j]
            if i is None:
                out.assign(c, unseen)
            else:
                stack.append((els[i], c, decided))
    return out


def _note_leaf(out: PageMapping, T: PageNode, E: ElementNode) -> None:
    if T.tag == TEXT_KEY:
        if T.owner is not None:
            out.leaf[("#text", T.owner)] = E
        return
    for el in T.tops:
        out.leaf[el] = E


def _own_text_len(el: etree._Element) -> int:
    n = len(el.text.strip()) if el.text else 0
    for c in el:
        if c.tail:
            n += len(c.tail.strip())
    return n


def resolve_labels(mapping: PageMapping, root: etree._Element) -> tuple[dict, dict]:
    """Per DOM element under ``root``: ``(label, CompImp, node)`` with ``label`` in
    {informative, noise}, and the SST leaf node each element's text was matched to."""
    info: dict = {}
    leaf_of: dict = {}
    explicit, leaf = mapping.explicit, mapping.leaf
    default: Info = (INFORMATIVE, 1.0, None)
    stack: list[tuple[Info, Optional[ElementNode]]] = [(default, None)]
    descend: list = []
    for event, el in etree.iterwalk(root, events=("start", "end")):
        if not isinstance(el.tag, str):
            continue
        if event == "end":
            stack.pop()
            continue
        inherited, ileaf = stack[-1]
        cur = explicit.get(el, inherited)
        lf = leaf.get(el, ileaf)
        info[el] = cur
        if lf is not None:
            leaf_of[el] = lf
        if cur[0] == DESCEND:
            descend.append(el)
        stack.append((cur, lf))
    # an element the walk went through: its own text decides (children first, so that a
    # descended inline child is already resolved: reverse document order)
    text = mapping.text
    for el in reversed(descend):
        keep_w = noise_w = 0
        own = text.get(el)
        if own is not None:
            w = _own_text_len(el)
            if own[0] == NOISE:
                noise_w += w
            else:
                keep_w += w
        for c in el:
            if not isinstance(c.tag, str) or c.tag in BLOCK_TAGS:
                continue
            ci = info.get(c)
            if ci is None:
                continue
            w = len("".join(c.itertext()).strip())
            if ci[0] == NOISE:
                noise_w += w
            else:
                keep_w += w
        cur = info[el]
        info[el] = (NOISE if noise_w > keep_w else INFORMATIVE, cur[1], cur[2])
        if own is not None and own[2] is not None and own[2].leaf_n:
            leaf_of.setdefault(el, own[2])
    return info, leaf_of


def element_labels(sst: SiteStyleTree, page: PreparedPage) -> dict:
    """For a *scored* SST and a page: ``{element: (label, CompImp, SST node or None)}``
    for every element of the page's BODY subtree. ``label`` is ``"informative"`` or
    ``"noise"``; the node is the finest SST element node the element was mapped to (None
    for a part of the page whose style the SST has never seen: kept, CompImp 1)."""
    mapping = map_page(sst, build_page_tree(page.root, content=False, principal=sst.principal))
    info, _ = resolve_labels(mapping, page.root)
    return info
