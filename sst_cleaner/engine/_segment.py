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

from sst_cleaner.engine._compiled import walk_function
from sst_cleaner.engine._dom import BLOCK_TAGS, normalize_space


class TextBlock:
    """One paragraph of the page: its element, its text and how much of it is link text."""

    __slots__ = ("element", "text", "link_chars", "n_links", "state")

    def __init__(
        self, element: etree._Element, text: str = "", state: Any = None, link_chars: int = 0, n_links: int = 0
    ):
        self.element = element
        self.text = text
        self.link_chars = link_chars
        self.n_links = n_links
        #: what ``annotate`` said about the block's element (see :func:`text_blocks`)
        self.state = state

    def __repr__(self) -> str:
        return f"TextBlock({self.element.tag!r}, {self.text[:40]!r})"


Annotate = Callable[[etree._Element, Any], Any]

_BLOCK, _ANCHOR = 1, 2  # what an open element is, for its end event


def text_blocks(
    root: etree._Element,
    annotate: Optional[Callable[..., Any]] = None,
    elements: Optional[list] = None,
    nodes: Optional[tuple[list, list, list]] = None,
    style_attrs: Optional[frozenset] = None,
    same: Optional[dict] = None,
) -> list[TextBlock]:
    """Cut the subtree under ``root`` into text blocks (iterative, document order).

    ``annotate(element, parent_state) -> state``, when given, is called in document order
    for every element that can be or hold a block: block-level elements and elements
    with element children (``parent_state`` is ``None`` for ``root``); each block carries
    its element's state. A method that needs something per element on the way down (a
    style path, a depth) gets it from the same walk instead of walking the tree again: on
    a typical page a walk costs as much as the work done in it. Childless inline elements
    (most links, spans, images, line breaks) are skipped: no block lies in or under them.

    ``style_attrs``, when given, names the attributes ``annotate`` reads: it is then
    called as ``annotate(element, parent_state, tag, attrs)``, with the element's tag and
    its non-empty attributes of those names as sorted ``(name, value)`` pairs (see
    :func:`style_attributes`), read by the walk where it reads the element anyway.

    ``elements``, when given, gets every element below ``root`` in document order: a
    caller that walks the page again holding them walks lxml's live element proxies
    instead of making new ones, which costs about half as much. ``nodes``, when given
    with ``elements``, gets their tags, texts and tails in the same order: what the walk
    reads of each element anyway, so that a later walk (CETD's counts) reads lists
    instead of asking lxml again (each read makes a new string).

    ``same``, when given with ``style_attrs``, maps ``(parent_state, tag, attrs)`` to the
    state ``annotate`` gives every element with that parent state, tag and attributes,
    for those whose state depends on nothing else (``annotate`` fills it as it learns
    them). A walk may give such an element its state without calling ``annotate``; the
    blocks are the same either way.
    """
    c_walk = _c_walk if _c_walk is not False else walk_function("text_blocks")
    if c_walk is not None:
        # the same walk over libxml2's nodes, where it is built (see _walk.pyx)
        blocks = c_walk(root, annotate, elements, nodes, style_attrs, same)
        if blocks is not None:
            return blocks
    # one function: it runs per element of every page, where helper calls
    # cost measurable time
    # An open block is a plain list [element, parts, state, link_chars, n_links]: a
    # page opens a block for every block-level element, most of them wrappers that end
    # up with no text of their own, so TextBlock objects are made only for the blocks
    # that have text, at the end.
    if annotate is not None and style_attrs is not None:
        annotate = _with_attributes(annotate, style_attrs)
    root_state = annotate(root, None) if annotate is not None else None
    cur_parts: list = []
    cur = [root, cur_parts, root_state, 0, 0]  # the innermost open block
    opened = [cur]  # every block, in document order
    stack = [cur]  # open blocks, root first: never empty
    # the loop below runs twice for every element of every page: what it needs is kept
    # in locals, and the end event reads what its start event pushed (``el.tag`` makes
    # a new string on each call) instead of asking the element again
    block_tags = BLOCK_TAGS
    states = [root_state]  # annotate's state of every open element
    kinds: list[int] = []  # _BLOCK, _ANCHOR or 0 for every open element below root
    push_state, pop_state = states.append, states.pop
    push_kind, pop_kind = kinds.append, kinds.pop
    # every open element's tail, read with its start event (one read serves the
    # recorded ``nodes`` and the end event)
    tails: list = []
    push_tail, pop_tail = tails.append, tails.pop
    anchor_depth = 0
    # link chars are counted on the raw parts (in ``cur[3]``), then capped after
    # normalisation
    walk = etree.iterwalk(root, events=("start", "end"))  # elements only
    next(walk)  # root's start
    if root.text:
        cur_parts.append(root.text)
    keep = elements.append if elements is not None else None
    if keep is not None and nodes is not None:
        keep_tag, keep_text, keep_tail = nodes[0].append, nodes[1].append, nodes[2].append
    else:
        nodes = None
    for event, el in walk:
        if event == "start":
            tag = el.tag
            text = el.text
            tail = el.tail
            push_tail(tail)
            if keep is not None:
                keep(el)
                if nodes is not None:
                    keep_tag(tag)
                    keep_text(text)
                    keep_tail(tail)
            if tag in block_tags:
                state = annotate(el, states[-1]) if annotate is not None else None
                push_state(state)
                push_kind(_BLOCK)
                cur_parts.append("\n")  # a nested block breaks the parent's line
                cur_parts = []
                cur = [el, cur_parts, state, 0, 0]
                opened.append(cur)
                stack.append(cur)
            else:
                push_state(annotate(el, states[-1]) if annotate is not None and len(el) else None)
                if tag == "a":
                    push_kind(_ANCHOR)
                    anchor_depth += 1
                    cur[4] += 1
                else:
                    push_kind(0)
                    if tag == "br":
                        cur_parts.append("\n")
            if text:
                cur_parts.append(text)
                if anchor_depth:
                    cur[3] += len(text.strip())
        else:
            if not kinds:
                break  # root's end
            pop_state()
            kind = pop_kind()
            if kind == _ANCHOR:
                anchor_depth -= 1
            elif kind == _BLOCK:
                stack.pop()
                cur = stack[-1]
                cur_parts = cur[1]
            tail = pop_tail()
            if tail:
                cur_parts.append(tail)
                if anchor_depth:
                    cur[3] += len(tail.strip())
    out: list[TextBlock] = []
    join = "".join
    for el, parts, state, link_chars, n_links in opened:
        if not parts:
            continue
        text = normalize_space(join(parts))
        if not text:
            continue
        out.append(TextBlock(el, text, state, min(len(text), link_chars), n_links))
    return out


def style_attributes(el: etree._Element, names: frozenset) -> tuple:
    """The element's non-empty attributes named in ``names``, as sorted ``(name, value)``
    pairs (one read of its attributes: a plain list is cheaper than the ``attrib`` proxy)."""
    items = el.items()
    if not items:
        return ()
    if len(items) == 1:  # the common case (a class, an id, an href) needs no sort
        k, v = items[0]
        return (items[0],) if v and k in names else ()
    return tuple(sorted([kv for kv in items if kv[1] and kv[0] in names]))


def _with_attributes(annotate: Callable, names: frozenset) -> Annotate:
    """``annotate(el, parent_state, tag, attrs)`` as the two-argument call the walk makes."""
    return lambda el, parent: annotate(el, parent, el.tag, style_attributes(el, names))


#: the walk text_blocks takes: False for _walk's where it is built (see _compiled), None
#: for the Python one (the tests set it to compare them)
_c_walk: Any = False
