"""What a page's metadata is read from, set aside while the page is parsed for cleaning.

Preparing a page drops what a reader cannot see: the ``<head>`` and every ``<script>``.
Metadata lives there (``<meta>``, ``<link rel=canonical>``, JSON-LD scripts), so before
they are dropped the head is detached whole (one pointer move, kept beside the cleaned
body) and the JSON-LD scripts of the body are copied out as text. The metadata is then
read from these and the cleaned body (see :mod:`sst_cleaner.engine._metadata`): the page
is parsed once, with every cap of :class:`~sst_cleaner.engine._limits.Limits`.
"""

from __future__ import annotations

from typing import Optional

from lxml import etree

#: JSON-LD scripts of the body set aside (JSON-LD is read from at most this many scripts
#: in all, see ``sst_cleaner.engine._metadata.MAX_JSONLD_SCRIPTS``)
MAX_BODY_SCRIPTS = 20


def detach_head(doc: etree._Element) -> Optional[etree._Element]:
    """Take the document's ``<head>`` out of the tree (None if it has none), its tail text
    left where it was, as dropping it would."""
    head = doc[0] if len(doc) and doc[0].tag == "head" else None
    if head is None:
        return None
    if head.tail:
        doc.text = (doc.text or "") + head.tail
        head.tail = None
    doc.remove(head)
    return head


def body_jsonld(doc: etree._Element, html: str) -> tuple[str, ...]:
    """The text of the JSON-LD scripts left in ``doc`` (its head detached: the body's),
    at most :data:`MAX_BODY_SCRIPTS`. ``html`` is the markup parsed: a page that does not
    name the type is not walked (the walk is most of the cost, and few pages have one)."""
    if "ld+json" not in html and "LD+JSON" not in html:
        return ()
    out = []
    for script in doc.iter("script"):
        if "ld+json" in (script.get("type") or "").lower() and script.text:
            out.append(script.text)
            if len(out) == MAX_BODY_SCRIPTS:
                break
    return tuple(out)
