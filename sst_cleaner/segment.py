"""Text blocks: the page's text cut at block-level elements, the unit every method labels.

A text block is the text that a browser would lay out as one paragraph: the text of a
block-level element (P, DIV, LI, TD, H1...) and of its inline descendants, up to the next
nested block-level element. Blocks come in document order. Each one remembers its
element (for xpaths and for structure-based methods) and how much of its text sits
inside links (link density, used by CETD and WISDOM).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from .dom import BLOCK_TAGS, normalize_space


@dataclass
class TextBlock:
    element: etree._Element
    text: str
    link_chars: int = 0
    n_links: int = 0
    parts: list = field(default_factory=list, repr=False)


def text_blocks(root: etree._Element) -> list[TextBlock]:
    """Cut the subtree under ``root`` into text blocks (iterative, document order)."""
    blocks: list[TextBlock] = []
    stack: list[TextBlock] = []  # open block elements
    anchor_depth = 0
    # link chars are counted on the raw parts, then scaled after normalisation
    link_raw: dict[int, int] = {}

    root_block = TextBlock(root, "")
    blocks.append(root_block)
    stack.append(root_block)
    link_raw[id(root_block)] = 0
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if el is root:
            if event == "start" and el.text:
                root_block.parts.append(el.text)
            continue
        if event == "start":
            is_block = tag in BLOCK_TAGS
            if is_block:
                stack[-1].parts.append("\n")  # a nested block breaks the parent's line
                blk = TextBlock(el, "")
                blocks.append(blk)
                stack.append(blk)
                link_raw[id(blk)] = 0
            cur = stack[-1]
            if tag == "a":
                anchor_depth += 1
                cur.n_links += 1
            elif tag == "br":
                cur.parts.append("\n")
            if el.text:
                cur.parts.append(el.text)
                if anchor_depth:
                    link_raw[id(cur)] += len(el.text.strip())
        else:
            if tag == "a":
                anchor_depth -= 1
            if tag in BLOCK_TAGS and stack and stack[-1].element is el:
                stack.pop()
            if el.tail and stack:
                cur = stack[-1]
                cur.parts.append(el.tail)
                if anchor_depth:
                    link_raw[id(cur)] += len(el.tail.strip())
    out: list[TextBlock] = []
    for blk in blocks:
        text = normalize_space("".join(blk.parts))
        blk.parts = []
        if not text:
            continue
        blk.text = text
        blk.link_chars = min(len(text), link_raw.get(id(blk), 0))
        out.append(blk)
    return out
