"""A page's elements as flat arrays in document order: each element's index, its
parent's index and the size of its subtree.

Several steps of a method ask the same questions of one tree (who is an element's
parent, which elements lie inside a container); on a typical page a walk over lxml's
elements costs as much as the work done in it. The table answers them from lists: a
subtree is one slice of ``elements``, and a container's sums are folded into it in one
backward sweep over ``parent``.
"""

from __future__ import annotations

from typing import Iterator, Optional

from lxml import etree

_getparent = etree._Element.getparent


class ElementTable:
    """``elements``: root first, then every element below it in document order (comments
    and processing instructions left out); ``index``: element -> its position;
    ``parent``: the position of each one's parent (-1 for the root); ``size``: elements
    in each one's subtree, itself included. Never mutated once made."""

    __slots__ = ("elements", "index", "parent", "size", "_nodes")

    def __init__(
        self, root: etree._Element, below: Optional[list] = None, nodes: Optional[tuple[list, list, list]] = None
    ):
        """``below``: every element under ``root`` in document order, when a walk has
        collected them already (:func:`~sst_cleaner.engine._segment.text_blocks`), and
        ``nodes`` their tags, texts and tails when it read those too."""
        if below is None:
            below = [el for el in root.iter() if isinstance(el.tag, str)][1:]
        elements = [root]
        elements += below
        index = {el: i for i, el in enumerate(elements)}
        parent = [-1]
        parent += map(index.__getitem__, map(_getparent, below))
        # descendants come after their ancestors: one backward sweep sizes every subtree
        size = [1] * len(elements)
        for i in range(len(elements) - 1, 0, -1):
            size[parent[i]] += size[i]
        self.elements = elements
        self.index = index
        self.parent = parent
        self.size = size
        self._nodes: Optional[tuple[list, list, list]] = None
        if nodes is not None and all(len(a) == len(below) for a in nodes):
            self._nodes = [root.tag] + nodes[0], [root.text] + nodes[1], [root.tail] + nodes[2]

    def nodes(self) -> tuple[list, list, list]:
        """Every element's tag, text and tail, in the order of ``elements`` (read from
        lxml here unless the walk that made the table read them)."""
        if self._nodes is None:
            elements = self.elements
            self._nodes = [el.tag for el in elements], [el.text for el in elements], [el.tail for el in elements]
        return self._nodes

    def subtree(self, el: etree._Element) -> list:
        """``el`` and every element below it, in document order (walked for an element
        outside the table: the root's parent)."""
        i = self.index.get(el)
        if i is None:
            return list(el.iter())
        return self.elements[i : i + self.size[i]]


def child_indices(size: list[int], i: int) -> Iterator[int]:
    """The positions of element ``i``'s children in a pre-order layout whose subtree
    sizes are ``size`` (an :class:`ElementTable`'s): each child's subtree is skipped in
    one step, no child lists kept."""
    c, end = i + 1, i + size[i]
    while c < end:
        yield c
        c += size[c]
