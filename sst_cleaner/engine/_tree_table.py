"""A page's elements as flat arrays in document order: each element's index, its
parent's index and the size of its subtree.

Several steps of a method ask the same questions of one tree (who is an element's
parent, which elements lie inside a container); on a typical page a walk over lxml's
elements costs as much as the work done in it. The table answers them from lists: a
subtree is one slice of ``elements``, and a container's sums are folded into it in one
backward sweep over ``parent``.
"""

from __future__ import annotations

from typing import Optional

from lxml import etree

_getparent = etree._Element.getparent


class ElementTable:
    """``elements``: root first, then every element below it in document order (comments
    and processing instructions left out); ``index``: element -> its position;
    ``parent``: the position of each one's parent (-1 for the root); ``size``: elements
    in each one's subtree, itself included. Never mutated once made."""

    __slots__ = ("elements", "index", "parent", "size")

    def __init__(self, root: etree._Element, below: Optional[list] = None):
        """``below``: every element under ``root`` in document order, when a walk has
        collected them already (:func:`~sst_cleaner.engine._segment.text_blocks`)."""
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

    def subtree(self, el: etree._Element) -> list:
        """``el`` and every element below it, in document order (walked for an element
        outside the table: the root's parent)."""
        i = self.index.get(el)
        if i is None:
            return list(el.iter())
        return self.elements[i : i + self.size[i]]
