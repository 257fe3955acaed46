"""Rendering pages in headless Chromium so that their HTML carries their layout.

    from sst_cleaner.render import Renderer
    with Renderer() as r:                      # Debian's `chromium`, found on PATH
        html = r.render(page_bytes, url)       # offline; the page's scripts do not run
    SiteCleaner(method="cehtd").clean(html, url)

The engine never needs a browser: it reads the layout from attributes the layout script
wrote into the DOM (:mod:`sst_cleaner.engine._layout`), so a page rendered once can be
cleaned many times. Any Chromium driver can run the same script
(:func:`layout_script`), e.g. scrapy-playwright's page methods (docs/methods.md).
"""

from sst_cleaner.render._chromium import (
    DEFAULT_URL,
    VIEWPORT,
    Renderer,
    RenderError,
    find_chromium,
    render_html,
)
from sst_cleaner.render._script import LAYOUT_SCRIPT, layout_script

__all__ = [
    "DEFAULT_URL",
    "LAYOUT_SCRIPT",
    "VIEWPORT",
    "RenderError",
    "Renderer",
    "find_chromium",
    "layout_script",
    "render_html",
]
