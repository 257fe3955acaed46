"""Reading a page's rendered layout from its HTML (the engine never runs a browser).

A page rendered by :mod:`sst_cleaner.render` (or by any driver that ran its layout
script, e.g. scrapy-playwright) carries its layout as attributes written into the DOM
before the HTML was dumped:

* on BODY, ``data-sst-layout="1"`` (the format's version: the page has a layout) and
  ``data-sst-vw``, the viewport's width in CSS pixels;
* on BODY and every element under it, ``data-sst-x`` (the left edge of its border box,
  CSS pixels from the document's left edge), ``data-sst-w`` (its width) and
  ``data-sst-vis`` (``1`` rendered and visible, ``0`` not: ``display:none`` on it or an
  ancestor, ``visibility:hidden``, ``opacity:0``, or no box at all).

Values are whole numbers. They come from the page's HTML, which is untrusted: a value
that is not a short finite number counts as absent, and boxes are clamped to
:data:`MAX_COORDINATE`.
"""

from __future__ import annotations

import math
from typing import Optional

from lxml import etree

ATTR_LAYOUT = "data-sst-layout"
ATTR_VIEWPORT = "data-sst-vw"
ATTR_X = "data-sst-x"
ATTR_WIDTH = "data-sst-w"
ATTR_VISIBLE = "data-sst-vis"
#: the value of ``data-sst-layout`` this engine reads
LAYOUT_VERSION = "1"
#: boxes are clamped to +-this many CSS pixels (a browser's own limit is about 33 million)
MAX_COORDINATE = 1.0e7
_MAX_VALUE_CHARS = 24


def has_layout(body: etree._Element) -> bool:
    """Whether the page under ``body`` carries a layout this engine reads."""
    return body.get(ATTR_LAYOUT) == LAYOUT_VERSION


def _number(value: Optional[str]) -> Optional[float]:
    if value is None or len(value) > _MAX_VALUE_CHARS:
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    if not math.isfinite(x):
        return None
    return min(MAX_COORDINATE, max(-MAX_COORDINATE, x))


def element_box(el: etree._Element) -> Optional[tuple[float, float, bool]]:
    """``(x1, x2, visible)``: the horizontal extent of ``el``'s rendered box and whether it
    is visible, or None when ``el`` carries no (readable) box."""
    x = _number(el.get(ATTR_X))
    w = _number(el.get(ATTR_WIDTH))
    if x is None or w is None:
        return None
    w = max(0.0, w)
    return x, min(MAX_COORDINATE, x + w), el.get(ATTR_VISIBLE) != "0"
