"""Page preparation: bytes or str -> a cleaned lxml DOM with only what a reader can see.

Every method of the package starts here, so that all of them see the same page: the
invisible parts (scripts, styles, hidden elements, comments) are dropped once, and the
text that is left is exactly the text a person would read.

Walks are iterative (``iter()``/explicit stacks): lxml itself caps nesting depth
(libxml2 refuses documents deeper than 256 levels unless ``huge_tree`` is set, and we
never set it), and no function here recurses over the tree, so a page nested 100,000
levels deep cannot exhaust Python's stack.
"""
from __future__ import annotations

import re
from typing import Iterator, Optional, Union

from lxml import etree, html as lxml_html

#: elements whose content is never visible text
INVISIBLE_TAGS = (
    "script", "style", "noscript", "template", "head", "iframe", "object", "embed",
    "svg", "math", "canvas", "select", "option", "datalist", "map", "param", "source", "track",
)
# <title> lives in <head>; we keep it apart (see PreparedPage.title) before dropping head.

#: block-level elements: each starts a new text block (paragraph) when text is laid out
BLOCK_TAGS = frozenset(
    """address article aside blockquote body caption center dd details dialog dir div dl dt
    fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 header hgroup hr
    html legend li main menu nav ol p pre section summary table tbody td tfoot th thead tr ul""".split()
)

_WS = re.compile(r"\s+")
# inline style checks are done on a whitespace-free lower-cased copy: no regex needed
_HIDDEN_STYLES = ("display:none", "visibility:hidden")

_PARSER = lxml_html.HTMLParser(
    remove_comments=True,
    remove_pis=True,
    no_network=True,
    recover=True,
    default_doctype=False,
    collect_ids=False,
)

HtmlInput = Union[str, bytes]


def decode_html(data: bytes, encoding: Optional[str] = None, content_type: Optional[str] = None) -> str:
    """Decode page bytes the way Scrapy does (w3lib): BOM, then HTTP charset, then <meta>,
    then a sniffed default.

    ``encoding`` is a charset already known for the body (e.g. ``response.encoding``);
    ``content_type`` the HTTP Content-Type header if there is one.
    """
    from w3lib.encoding import html_to_unicode

    header = content_type
    if header is None and encoding:
        header = f"text/html; charset={encoding}"
    _enc, text = html_to_unicode(header, data)
    return text


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace into one space and trim."""
    return _WS.sub(" ", text).strip()


class PreparedPage:
    """One page after preparation.

    ``root`` is the BODY element of the cleaned tree (the paper's virtual root sits above
    it conceptually: methods that need one create it in their own structures), ``title``
    the document title, ``url`` where the page came from (may be None).
    """

    __slots__ = ("root", "tree", "title", "url")

    def __init__(self, root: etree._Element, title: str, url: Optional[str]):
        self.root = root
        self.tree = root.getroottree()
        self.title = title
        self.url = url

    def xpath_of(self, el: etree._Element) -> str:
        return self.tree.getpath(el)


def _sanitize_text(text: str) -> str:
    # lxml rejects NUL and lone surrogates in str input; they are never meaningful text
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def parse_html(html: HtmlInput, url: Optional[str] = None, encoding: Optional[str] = None) -> PreparedPage:
    """Parse and clean one page.

    Never raises on malformed markup: lxml recovers, and an empty or unparsable document
    gives an empty BODY.
    """
    if isinstance(html, bytes):
        html = decode_html(html, encoding)
    elif not isinstance(html, str):
        raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
    html = _sanitize_text(html)
    # an XML declaration with an encoding makes lxml refuse str input; drop it
    if html.startswith("<?xml"):
        end = html.find("?>")
        html = html[end + 2:] if end != -1 else html
    doc = None
    if html.strip():
        try:
            doc = lxml_html.document_fromstring(html, parser=_PARSER)
        except (etree.ParserError, ValueError):
            doc = None
    if doc is None:
        doc = lxml_html.document_fromstring("<html><body></body></html>", parser=_PARSER)
    title = ""
    title_el = doc.find(".//title")
    if title_el is not None:
        title = normalize_space(title_el.text_content())
    clean_tree(doc)
    body = doc.find("body")
    if body is None:
        body = etree.SubElement(doc, "body")
    return PreparedPage(body, title, url)


def clean_tree(doc: etree._Element) -> None:
    """Drop what is never visible: invisible tags, hidden elements, comments/PIs."""
    etree.strip_elements(doc, *INVISIBLE_TAGS, with_tail=False)
    # comments/PIs are removed by the parser; entities and other non-element nodes too
    doomed = []
    for el in doc.iter():
        if not isinstance(el.tag, str):
            doomed.append(el)
            continue
        attrib = el.attrib
        if not attrib:
            continue
        if "hidden" in attrib:
            doomed.append(el)
            continue
        style = attrib.get("style")
        if style:
            compact = "".join(style.split()).lower()
            if any(h in compact for h in _HIDDEN_STYLES):
                doomed.append(el)
                continue
        if attrib.get("aria-hidden") == "true" and not el.text_content().strip():
            doomed.append(el)
    for el in doomed:
        drop_element(el)


def drop_element(el: etree._Element) -> None:
    """Remove ``el`` and its subtree but keep its tail text in place."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


def iter_elements(root: etree._Element) -> Iterator[etree._Element]:
    """Document-order walk over element nodes only (iterative, via lxml)."""
    for el in root.iter():
        if isinstance(el.tag, str):
            yield el


def depth_first_postorder(root: etree._Element) -> Iterator[etree._Element]:
    """Post-order over elements without recursion (children before their parent)."""
    stack: list[tuple[etree._Element, bool]] = [(root, False)]
    while stack:
        el, expanded = stack.pop()
        if expanded:
            yield el
            continue
        stack.append((el, True))
        children = [c for c in el if isinstance(c.tag, str)]
        for child in reversed(children):
            stack.append((child, False))


def element_text(el: etree._Element) -> str:
    """Visible text of an element, whitespace-normalised (tail excluded)."""
    return normalize_space(" ".join(t for t in el.itertext()))
