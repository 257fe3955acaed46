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

#: what a browser keeps in a head (HTML5's "in head" insertion mode): any other element
#: there ends the head and starts the body
HEAD_CONTENT_TAGS = frozenset("base basefont bgsound link meta title noscript noframes style script template".split())
#: elements whose own text is never shown (the prepared page drops them)
_TEXTLESS_TAGS = frozenset(("script", "style", "noscript", "template", "title"))


def move_body_content_out_of_head(doc: etree._Element) -> None:
    """Move the elements libxml2 left in the ``<head>`` that a browser lays out in the
    body (an unknown or ``<object>`` element holding text, and the non-head elements after
    it) to the start of the body, in their order.

    libxml2's HTML 4 parser opens a body only for a tag it knows belongs there; an unknown
    tag (``<sohu_cms_include>``, ``<esi:include>``) in the head stays there with all it
    holds. A page that starts with a ``<script>`` before ``<html>`` makes it worse: the
    head libxml2 opens for the script outlives the page's own ``</head>`` (ignored with the
    ``<head>`` it took for misplaced), so a custom element wrapping the whole article, and
    the article, end up in the head, which is dropped. HTML5's tree builder ends the head
    at the first element that does not belong there. Pages whose head holds no such text
    are left untouched.
    """
    if not len(doc) or doc[0].tag != "head":
        return
    head = doc[0]
    start = None
    for i, child in enumerate(head):
        if isinstance(child.tag, str) and child.tag not in HEAD_CONTENT_TAGS and _holds_text(child):
            start = i
            break
    if start is None:
        return
    moved = [c for c in head[start:] if isinstance(c.tag, str) and c.tag not in HEAD_CONTENT_TAGS]
    body = doc.find("body")
    if body is None:
        body = etree.SubElement(doc, "body")
    lead = body.text
    body.text = None
    for i, el in enumerate(moved):
        body.insert(i, el)  # with its tail: the text that followed it
    if lead:
        last = moved[-1]
        last.tail = (last.tail or "") + lead


def move_content_after_body_into_body(doc: etree._Element) -> None:
    """Move what libxml2 put after the ``<body>`` element (the elements after it and the
    text in its tail) to the end of the body, in their order.

    A ``</body>`` that comes early (a template's fragment closing a body it never opened,
    before the page's own content) ends libxml2's body there: what follows becomes the
    body's siblings, outside the body that is cleaned, and a page of hundreds of words
    comes out empty. A browser (HTML5's "after body" insertion mode) lays everything after
    ``</body>`` out in the body. Pages whose body is the last thing in the document are
    left untouched.
    """
    body = doc.find("body")
    if body is None:
        return
    following = body.getnext()
    tail = body.tail
    if following is None and (not tail or tail.isspace()):
        return
    body.tail = None
    if tail and not tail.isspace():
        if len(body):
            body[-1].tail = (body[-1].tail or "") + tail
        else:
            body.text = (body.text or "") + tail
    while following is not None:
        after = following.getnext()
        body.append(following)  # with its tail: the text that followed it
        following = after


def _holds_text(el: etree._Element) -> bool:
    """Whether ``el`` holds text a reader would see (not a script's or a style's)."""
    for node in el.iter():
        if node is not el and node.tail and not node.tail.isspace():
            return True
        if isinstance(node.tag, str) and node.tag not in _TEXTLESS_TAGS and node.text and not node.text.isspace():
            return True
    return False


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
