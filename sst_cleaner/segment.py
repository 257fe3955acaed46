"""Text blocks: the page's text cut at block-level elements, the unit every method labels.

A text block is the text that a browser would lay out as one paragraph: the text of a
block-level element (P, DIV, LI, TD, H1...) and of its inline descendants, up to the next
nested block-level element. Blocks come in document order. Each one remembers its
element (for xpaths and for structure-based methods) and how much of its text sits
inside links (link density, used by CETD and WISDOM).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from lxml import etree

from .dom import BLOCK_TAGS, normalize_space


class TextBlock:
    """One paragraph of the page: its element, its text and how much of it is link text."""

    __slots__ = ("element", "text", "link_chars", "n_links", "parts", "state")

    def __init__(self, element: etree._Element, text: str = "", state: Any = None):
        self.element = element
        self.text = text
        self.link_chars = 0
        self.n_links = 0
        self.parts: list = []
        #: what ``annotate`` said about the block's element (see :func:`text_blocks`)
        self.state = state

    def __repr__(self) -> str:
        return f"TextBlock({self.element.tag!r}, {self.text[:40]!r})"


Annotate = Callable[[etree._Element, Any], Any]


def text_blocks(root: etree._Element, annotate: Optional[Annotate] = None) -> list[TextBlock]:
    """Cut the subtree under ``root`` into text blocks (iterative, document order).

    ``annotate(element, parent_state) -> state``, when given, is called in document order
    for every element that can be or hold a block: block-level elements and elements
    with element children (``parent_state`` is ``None`` for ``root``); each block carries
    its element's state. A method that needs something per element on the way down (a
    style path, a depth) gets it from the same walk instead of walking the tree again: on
    a typical page a walk costs as much as the work done in it. Childless inline elements
    (most links, spans, images, line breaks) are skipped: no block lies in or under them.
    """
    blocks: list[TextBlock] = []
    stack: list[TextBlock] = []  # open block elements
    states: list = []  # annotate's state of every open element (root first)
    anchor_depth = 0
    # link chars are counted on the raw parts (in ``link_chars``), then capped after
    # normalisation

    root_state = annotate(root, None) if annotate is not None else None
    root_block = TextBlock(root, "", root_state)
    blocks.append(root_block)
    stack.append(root_block)
    block_tags = BLOCK_TAGS
    # the innermost open block and its parts list, kept in locals (this loop runs twice
    # for every element of every page)
    cur = root_block
    cur_parts = cur.parts
    push_state, pop_state = states.append, states.pop
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if tag.__class__ is not str:  # comments, PIs, entities: not elements
            continue
        if el is root:
            if event == "start":
                push_state(root_state)
                if el.text:
                    cur_parts.append(el.text)
            continue
        if event == "start":
            is_block = tag in block_tags
            if annotate is not None and (is_block or len(el)):
                state = annotate(el, states[-1])
            else:
                state = None
            push_state(state)
            if is_block:
                cur_parts.append("\n")  # a nested block breaks the parent's line
                cur = TextBlock(el, "", state)
                cur_parts = cur.parts
                blocks.append(cur)
                stack.append(cur)
            if tag == "a":
                anchor_depth += 1
                cur.n_links += 1
            elif tag == "br":
                cur_parts.append("\n")
            text = el.text
            if text:
                cur_parts.append(text)
                if anchor_depth:
                    cur.link_chars += len(text.strip())
        else:
            pop_state()
            if tag == "a":
                anchor_depth -= 1
            if tag in block_tags and stack[-1].element is el:
                stack.pop()  # never the root's block: the stack is never empty
                cur = stack[-1]
                cur_parts = cur.parts
            tail = el.tail
            if tail:
                cur_parts.append(tail)
                if anchor_depth:
                    cur.link_chars += len(tail.strip())
    out: list[TextBlock] = []
    for blk in blocks:
        text = normalize_space("".join(blk.parts))
        blk.parts = []
        if not text:
            continue
        blk.text = text
        blk.link_chars = min(len(text), blk.link_chars)
        out.append(blk)
    return out
