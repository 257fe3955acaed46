"""``--render`` for ``sst-cleaner clean|site``: render each page in headless Chromium
before it is cleaned, so that its HTML carries its layout (``--method cehtd`` needs it;
see :mod:`sst_cleaner.render`).

Only the cleaning pass renders: learning a site (``site``) reads the pages as stored,
and a page-level method such as ``cehtd`` learns nothing from them. A page the browser
fails on is cleaned as stored, and the failure goes to standard error (with ``cehtd``
its result then says ``"status": "no_layout"``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable, Iterator


class RenderUnavailable(Exception):
    """``--render`` was asked and no browser could be started."""


def add_render_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--render",
        action="store_true",
        help="render each page offline in headless Chromium first (its layout, for --method cehtd)",
    )
    parser.add_argument("--chromium", metavar="PATH", help="the Chromium to render with (default: chromium on PATH)")
    parser.add_argument(
        "--render-scripts",
        action="store_true",
        help="let the pages' own scripts run while rendering (default: off; never any network)",
    )


def render_pages(pages: Iterable[Any], args: argparse.Namespace) -> Iterable[Any]:
    """``pages`` (the CLI's ``Page`` tuples), rendered when ``args.render``. The browser
    starts here, before any page is read, so that a missing browser is a usage error."""
    if not getattr(args, "render", False):
        return pages
    from sst_cleaner.render import Renderer, RenderError

    try:
        renderer = Renderer(args.chromium, scripts=args.render_scripts).start()
    except RenderError as exc:
        raise RenderUnavailable(f"--render: {exc}") from exc
    return _rendered(pages, renderer)


def _rendered(pages: Iterable[Any], renderer: Any) -> Iterator[Any]:
    from sst_cleaner.render import RenderError

    try:
        for page in pages:
            try:
                html = renderer.render(page.body, page.url, page.encoding)
            except RenderError as exc:
                print(f"sst-cleaner: {page.name}: not rendered ({exc}); cleaned as stored", file=sys.stderr)
                yield page
                continue
            yield page._replace(body=html.encode("utf-8"), encoding="utf-8")
    finally:
        renderer.close()
