"""The caps :func:`~sst_cleaner.engine._dom.parse_html` applies to a parsed tree:
elements, depth and near-empty blocks (see :class:`~sst_cleaner.engine._limits.Limits`).

Each returns how many elements it removed, which the page counts in
``PreparedPage.dropped_elements``. Walks are iterative or run in libxml2 (C), so a page
nested deep or flooded with elements costs no recursion and little Python.
"""

from __future__ import annotations

from typing import Iterable, Optional

from lxml import etree

from sst_cleaner.engine._compiled import walk_function

# every element (as ``//*``), without the descendant-or-self step over text nodes
_COUNT_ELEMENTS = etree.XPath("count(/descendant::*)")

#: a block's own text shorter than this is "near-empty": one or two characters
#: (a bullet, a digit, a lone letter), never a word a reader would miss in a paragraph
TINY_BLOCK_CHARS = 3


def count_elements(doc: etree._Element) -> int:
    """The elements of ``doc``'s whole document."""
    compiled = walk_function("document_elements")  # counted over libxml2's nodes
    got = compiled(doc) if compiled is not None else None
    return int(_COUNT_ELEMENTS(doc)) if got is None else got


def drop_from(first: etree._Element) -> None:
    """Remove ``first`` and everything after it in document order (its following
    siblings, and the following siblings of each of its ancestors)."""
    parent = first.getparent()
    del parent[parent.index(first) :]
    node = parent
    parent = node.getparent()
    while parent is not None:
        del parent[parent.index(node) + 1 :]
        node = parent
        parent = node.getparent()


def cap_elements(doc: etree._Element, max_elements: int, total: Optional[int] = None) -> int:
    """Drop every element after the first ``max_elements`` (document order); returns how
    many were dropped. Counting and finding run in libxml2's XPath engine (C): a flood of
    elements costs no Python-level walk. ``total``: the tree's element count, if known."""
    if total is None:
        total = count_elements(doc)
    if total <= max_elements:
        return 0
    drop_from(doc.xpath(f"(//*)[{max_elements + 1}]")[0])
    return total - max_elements


def cap_depth(doc: etree._Element, max_depth: int) -> int:
    """Flatten elements deeper than ``max_depth`` (``html`` = 1) into their ancestor at
    the limit: the text stays, the tags go. Returns the number of elements removed."""
    removed = 0
    at_limit = doc.xpath("/*" + "/*" * (max_depth - 1))
    for el in at_limit:
        if len(el) == 0:
            continue
        n = sum(1 for _ in el.iterdescendants())
        text = " ".join(t for t in el.itertext() if t.strip())
        del el[:]
        el.text = text
        removed += n
    return removed


def cap_tiny_blocks(
    doc: etree._Element, block_tags: Iterable[str], max_tiny: int, at_most: Optional[int] = None
) -> int:
    """Cut the page after its ``allowed + 1``-th near-empty block (document order), where
    ``allowed`` is ``max_tiny`` or, if larger, the number of the page's runs of text of
    three characters or more; returns the number of elements removed.

    A near-empty block is a block-level element without child elements whose text has
    one or two characters (``<li>x``). Every method spends as much on a block as on a
    paragraph, so 40,000 of them cost a method seconds while they carry no words: that
    is a flood, not a page. A real page holds a few (the dev corpora's most is 181, on a
    2,000-element API reference) among its text, which also raises the allowance, so a
    long table of short cells beside its descriptions stays whole.
    ``at_most``: a bound on the tree's element count already known (none is counted
    when it is within ``max_tiny``).
    """
    # cannot hold more near-empty blocks than elements
    if (at_most is not None and at_most <= max_tiny) or count_elements(doc) <= max_tiny:
        return 0
    tiny = tiny_blocks(doc, block_tags)
    if len(tiny) <= max_tiny:
        return 0
    allowed = max(max_tiny, text_runs(doc))
    if len(tiny) <= allowed:
        return 0
    before = count_elements(doc)
    drop_from(tiny[allowed])
    return before - count_elements(doc)


def tiny_blocks(doc: etree._Element, block_tags: Iterable[str]) -> list[etree._Element]:
    """The near-empty blocks, in document order (lxml filters the tags in C)."""
    out = []
    for el in doc.iter(*block_tags):
        text = el.text
        # stripped, a text shorter than three characters is that short normalised too
        if text and 0 < len(text.strip()) < TINY_BLOCK_CHARS and not len(el):
            out.append(el)
    return out


def text_runs(doc: etree._Element) -> int:
    """Text nodes (an element's text or tail) of three characters or more."""
    n = 0
    for el in doc.iter():
        text, tail = el.text, el.tail
        if text and len(text.strip()) >= TINY_BLOCK_CHARS:
            n += 1
        if tail and len(tail.strip()) >= TINY_BLOCK_CHARS:
            n += 1
    return n
