"""Document-structure tags inside a page's body, dropped before libxml2 parses it.

Ads and server-side includes paste whole documents into a page (``<td><html><head>
<title>ad</title></head>...</body></html></td>``). A browser (HTML5's tree builder)
ignores ``<html>``, ``<head>`` and ``</head>`` inside the body and keeps laying out what
follows ``</body>`` and ``</html>`` in the body. libxml2's HTML 4 parser instead takes
the pasted ``</head>`` for the end of a head, and everything after it, usually the whole
article, is lost. Dropping those tags once the body has started makes libxml2 build the
tree a browser shows.
"""

from __future__ import annotations

import re

_BODY_START = re.compile(r"<body[\s>/]", re.IGNORECASE)
_PASTED = re.compile(r"<(?:/?head|html)[\s>/]", re.IGNORECASE)
_STRAY = re.compile(r"</?(?:html|head)(?:\s[^<>]*)?>|</body\s*>", re.IGNORECASE)


def drop_stray_document_tags(html: str) -> str:
    """``html`` with every ``<html>``, ``<head>``, ``</head>``, ``</body>`` and
    ``</html>`` tag after the first ``<body>`` start tag removed, when a ``<html>``,
    ``<head>`` or ``</head>`` tag follows it (unchanged otherwise, or without a
    ``<body>`` tag)."""
    start = _BODY_START.search(html)
    if start is None:
        return html
    # the page's own closing </body></html> are harmless alone: only a pasted document's
    # opening tags make libxml2 go wrong, and almost no page has one
    if _PASTED.search(html, start.end()) is None:
        return html
    return html[: start.end()] + _STRAY.sub("", html[start.end() :])
