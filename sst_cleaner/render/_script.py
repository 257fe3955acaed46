"""The layout script: JavaScript run in a rendered page that writes each element's
horizontal box and visibility into the DOM (the attributes the engine reads, see
:mod:`sst_cleaner.engine._layout`), so that the page's HTML carries its layout."""

from __future__ import annotations

from sst_cleaner.engine._layout import ATTR_LAYOUT, ATTR_VIEWPORT, ATTR_VISIBLE, ATTR_WIDTH, ATTR_X, LAYOUT_VERSION

# One read pass then one write pass: writing an attribute between two reads would make
# the browser recompute style and layout for every element (attribute selectors may
# match the new attributes), which is quadratic on a large page. Coordinates are CSS
# pixels from the document's left edge (scroll offset added), rounded to whole pixels.
# ``checkVisibility`` (Chromium 105+) says whether an element is rendered at all
# (display:none on it or an ancestor, content-visibility, visibility:hidden); an element
# with no box (no client rects) is not visible either.
LAYOUT_SCRIPT = """(() => {
  const body = document.body;
  if (!body) { return null; }
  const els = [body, ...body.querySelectorAll("*")];
  const sx = window.scrollX || 0;
  const boxes = new Array(els.length);
  for (let i = 0; i < els.length; i++) {
    const el = els[i];
    const r = el.getBoundingClientRect();
    let vis = el.getClientRects().length > 0;
    if (vis && typeof el.checkVisibility === "function") {
      vis = el.checkVisibility({
        visibilityProperty: true, opacityProperty: true, checkVisibilityCSS: true, checkOpacity: true});
    }
    boxes[i] = [Math.round(r.left + sx), Math.round(r.width), vis ? "1" : "0"];
  }
  for (let i = 0; i < els.length; i++) {
    const el = els[i];
    el.setAttribute("%(x)s", String(boxes[i][0]));
    el.setAttribute("%(w)s", String(boxes[i][1]));
    el.setAttribute("%(vis)s", boxes[i][2]);
  }
  body.setAttribute("%(layout)s", "%(version)s");
  body.setAttribute("%(vw)s", String(document.documentElement.clientWidth));
  const dt = document.doctype;
  const doctype = dt ? "<!DOCTYPE " + dt.name + ">\\n" : "";
  return doctype + document.documentElement.outerHTML;
})()""" % {
    "x": ATTR_X,
    "w": ATTR_WIDTH,
    "vis": ATTR_VISIBLE,
    "layout": ATTR_LAYOUT,
    "version": LAYOUT_VERSION,
    "vw": ATTR_VIEWPORT,
}


def layout_script() -> str:
    """The layout script (:data:`LAYOUT_SCRIPT`): an expression that annotates the current
    page and evaluates to its HTML (``null`` for a document without BODY). Run it in a
    page rendered by any Chromium driver, e.g. scrapy-playwright's
    ``PageMethod("evaluate", layout_script())``; the response's HTML then carries the
    layout."""
    return LAYOUT_SCRIPT
