"""Code on a page: which elements hold a code listing, their text as it is shown, and
the generators' hidden tooltips.

A code listing is one unit for a reader: a ``pre`` (with whatever it holds: Sphinx's
"view source" pages wrap each documented function in a ``div`` inside the ``pre``) or a
Doxygen ``div.fragment`` (one ``div.line`` per line of code, no ``pre`` at all). The
block cutter cuts both at their nested blocks, so a method may keep some of their
pieces; the outputs write the whole listing, once, in its order, where its first kept
piece is.

Doxygen writes a hover tooltip (``div.ttc``: a ``div.ttname``, a declaration, a
definition's place) for every symbol of a listing, hidden by its style sheet: it is not
on the page a reader sees, so no output writes it.
"""

from __future__ import annotations

from typing import Callable, Optional

from lxml import etree

from sst_cleaner.engine._dom import BLOCK_TAGS


def _classes(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def is_tooltip(el: etree._Element) -> bool:
    """A Doxygen hover tooltip: ``div.ttc`` holding a ``div.ttname``."""
    if el.tag != "div" or "ttc" not in _classes(el):
        return False
    return any(c.tag == "div" and "ttname" in _classes(c) for c in el)


def is_backlink(el: etree._Element) -> bool:
    """Sphinx's ``[docs]`` link in a "view source" listing (``a.viewcode-back``): a way
    back to the documentation, not a line of the code."""
    return el.tag == "a" and "viewcode-back" in _classes(el)


def is_listing(el: etree._Element) -> bool:
    """A ``pre``, or a Doxygen ``div.fragment`` of ``div.line`` lines."""
    if el.tag == "pre":
        return True
    if el.tag != "div" or "fragment" not in _classes(el):
        return False
    return any(c.tag == "div" and "line" in _classes(c) for c in el)


class CodeMarks:
    """For one page: the outermost listing that holds each block element, and the block
    elements inside tooltips. Made in one pass over the candidates; each element of the page is
    looked at for one listing or tooltip at most (the outermost one)."""

    __slots__ = ("listing_of", "hidden")

    def __init__(self, root: etree._Element) -> None:
        self.listing_of: dict = {}
        self.hidden: set = set()
        for el in root.iter("pre", "div"):
            if el in self.hidden or el in self.listing_of:
                continue  # inside one already marked (the walk is in document order)
            if el.tag == "div" and "fragment" not in (cls := el.get("class") or "") and "ttc" not in cls:
                continue
            # only block elements: the blocks that methods keep are block elements
            if is_tooltip(el):
                self.hidden.update(d for d in el.iter() if d.tag in BLOCK_TAGS)
            elif is_listing(el):
                for d in el.iter():
                    if d.tag in BLOCK_TAGS:
                        self.listing_of[d] = el

    def listing(self, el: Optional[etree._Element]) -> Optional[etree._Element]:
        return self.listing_of.get(el) if el is not None else None

    def __bool__(self) -> bool:
        return bool(self.listing_of or self.hidden)


def code_text(listing: etree._Element, skip: Optional[Callable[[etree._Element], bool]] = None) -> str:
    """A listing's text as it is shown: every line in order with its indentation, lines
    broken at ``br`` and around nested blocks (a block that already ends or starts a
    line adds no blank line), tooltips, ``[docs]`` links and ``skip(el)`` elements left
    out; blank lines at both ends and spaces at line ends dropped. In a Doxygen fragment (not a ``pre``) the
    white space between its lines is markup, not code."""
    in_pre = listing.tag == "pre" or any(a.tag == "pre" for a in listing.iterancestors())
    parts: list[str] = []
    pending = False  # a nested block began or ended: the next text starts a new line

    def put(text: Optional[str], holder: etree._Element) -> None:
        nonlocal pending
        if not text or (not in_pre and holder is listing and not text.strip()):
            return
        if pending and parts and not parts[-1].endswith("\n") and not text.startswith("\n"):
            parts.append("\n")
        pending = False
        parts.append(text)

    put(listing.text, listing)
    stack: list = [(listing, iter(listing))]
    while stack:
        parent, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if stack:
                if parent.tag in BLOCK_TAGS:
                    pending = True
                put(parent.tail, stack[-1][0])
            continue
        if not isinstance(child.tag, str) or is_tooltip(child) or is_backlink(child) or (skip and skip(child)):
            put(child.tail, parent)
            continue
        if child.tag == "br":
            parts.append("\n")
            pending = False
            put(child.tail, parent)
            continue
        if child.tag in BLOCK_TAGS:
            pending = True
        put(child.text, child)
        stack.append((child, iter(child)))
    text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n")
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)
