"""Page preparation: bytes or str -> a cleaned lxml DOM with only what a reader can see.

Every method of the package starts here, so that all of them see the same page: the
invisible parts (scripts, styles, hidden elements, comments) are dropped once, and the
text that is left is exactly the text a person would read.

Walks are iterative (``iter()``/explicit stacks), and no function here recurses over
the tree, so a page nested 100,000 levels deep cannot exhaust Python's stack. Every page
is bounded by :class:`sst_cleaner.engine._limits.Limits` (bytes, tags, elements, near-empty
blocks, depth; the tree's caps are in :mod:`~sst_cleaner.engine._tree_caps`) before a method
sees it. libxml2 aborts a parse at nesting depth 256 and silently drops the rest
of the page; ``parse_html`` notices and re-parses with libxml2's 2048 limit
(``huge_tree``, safe here because the byte cap already bounds what it lifts), then
flattens what is deeper than ``Limits.max_depth``.
"""

# One module: every step of page preparation (decoding, caps,
# parsing, pruning) works under the same limits and reads best in the order it runs.

from __future__ import annotations

import re
import threading
from typing import AnyStr, Optional, Union

from lxml import etree

from sst_cleaner.engine._attr_cap import _cap_attributes, attribute_cap
from sst_cleaner.engine._compiled import walk_function
from sst_cleaner.engine._head import (
    body_jsonld,
    detach_head,
    move_body_content_out_of_head,
    move_content_after_body_into_body,
)
from sst_cleaner.engine._limits import DEFAULT_LIMITS, LIBXML2_MAX_DEPTH, Limits
from sst_cleaner.engine._stray_tags import drop_stray_document_tags
from sst_cleaner.engine._tree_caps import cap_depth, cap_elements, cap_tiny_blocks, count_elements

#: elements whose content is never visible text. Not ``object``: what it holds besides
#: its ``param``s is fallback content, shown whenever the embedded thing cannot be (every
#: Flash movie, today): a video's caption on a 2013 news page is still read there.
INVISIBLE_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "head",
    "title",  # never laid out, also where a pasted document leaves one in the body
    "iframe",
    "svg",
    "math",
    "canvas",
    "select",
    "option",
    "datalist",
    "map",
    "param",
)
#: void elements of HTML5 that libxml2's HTML parser (HTML 4 rules) opens as containers:
#: ``<div><embed src=x><p>text</p></div>`` parses as ``<embed><p>text</p></embed>``. They
#: never hold anything, so what the parser put inside them is the page's next content:
#: the tag goes, its "children" stay (dropping them with it lost the rest of the parent).
VOID_MISPARSED_TAGS = ("embed", "source", "track")
# <title> lives in <head>; we keep it apart (see PreparedPage.title) before dropping head.

#: block-level elements: each starts a new text block (paragraph) when text is laid out
BLOCK_TAGS = frozenset(
    """address article aside blockquote body caption center dd details dialog dir div dl dt
    fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 header hgroup hr
    html legend li main menu nav ol p pre section summary table tbody td tfoot th thead tr ul""".split()
)

_PARSER_OPTIONS = dict(
    remove_comments=True,
    remove_pis=True,
    no_network=True,
    recover=True,
    default_doctype=False,
    collect_ids=False,
)
# Plain etree parsers (not lxml.html's): lxml.html looks up a Python element class for
# every element touched, which cost ~15 ms on a typical page; nothing here needs it.
# Parsers are per thread: an lxml parser (and its error log, read below) must not be
# shared between threads, and Scrapy's pipeline cleans in worker threads.
_LOCAL = threading.local()


def _parsers(utf8: bool = True) -> tuple[etree.HTMLParser, etree.HTMLParser]:
    """The thread's parsers for UTF-8 bytes (``utf8``) or for str.

    The page is handed to libxml2 as the UTF-8 bytes its sanitising made already: given
    a str, lxml hands over the str's own buffer (Latin-1, UTF-16 or UCS-4 for a page
    that is not ASCII), which libxml2 converts to UTF-8 first. The tree is the same.
    """
    key = "parsers" if utf8 else "str_parsers"
    got = getattr(_LOCAL, key, None)
    if got is None:
        # the second one is only used again on a page that hit libxml2's depth limit of
        # 256 (its limit is then 2048)
        options = dict(_PARSER_OPTIONS, encoding="utf-8") if utf8 else _PARSER_OPTIONS
        got = (etree.HTMLParser(**options), etree.HTMLParser(huge_tree=True, **options))
        setattr(_LOCAL, key, got)
    return got


def _fromstring(html: Union[str, bytes], parser: etree.HTMLParser) -> etree._Element:
    doc = etree.fromstring(html, parser)
    if doc is None:
        raise etree.ParserError("Document is empty")
    return doc


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
    """Collapse runs of whitespace into one space and trim (and cap runs of combining
    marks, see :func:`cap_nonstarter_runs`)."""
    text = " ".join(text.split())  # str.split() and re's \s agree on every code point
    if not text.isascii():
        text = cap_nonstarter_runs(text)
    return text


#: UAX #15 "Stream-Safe Text Format": at most 30 non-starters in a row
MAX_NONSTARTERS = 30
_NONSTARTER_RUN: Optional[tuple["re.Pattern[str]", "re.Pattern[str]"]] = None


def _nonstarter_run_patterns() -> tuple["re.Pattern[str]", "re.Pattern[str]"]:
    """Runs of more than 30 characters that decompose to combining marks only.

    Built on first use from ``unicodedata`` (planes 0-1 hold every combining mark). One
    character class with a counted repeat: matching is linear. Two patterns: a class of
    BMP characters compiles to a bitmap (15 ns a character), one with astral ranges to a
    range list (ten times slower), used only on text that holds astral characters.
    """
    global _NONSTARTER_RUN
    if _NONSTARTER_RUN is None:
        import unicodedata

        ranges: list[list[int]] = []
        for cp in range(0x300, 0x20000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            ch = chr(cp)
            if unicodedata.combining(ch):
                hit = True
            elif unicodedata.decomposition(ch):
                dec = unicodedata.normalize("NFKD", ch)
                hit = all(unicodedata.combining(c) for c in dec)
            else:
                hit = False
            if hit:
                if ranges and ranges[-1][1] == cp - 1:
                    ranges[-1][1] = cp
                else:
                    ranges.append([cp, cp])

        def compile_class(rs: list[list[int]]) -> re.Pattern[str]:
            cls = "".join(re.escape(chr(lo)) + ("-" + re.escape(chr(hi)) if hi > lo else "") for lo, hi in rs)
            return re.compile(f"[{cls}]{{{MAX_NONSTARTERS + 1},}}")

        bmp = [[lo, min(hi, 0xFFFF)] for lo, hi in ranges if lo <= 0xFFFF]
        _NONSTARTER_RUN = (compile_class(bmp), compile_class(ranges))
        global _NONSTARTER_BITS
        bits = bytearray(0x20000 // 8)
        for lo, hi in ranges:
            for cp in range(lo, hi + 1):
                bits[cp >> 3] |= 1 << (cp & 7)
        _NONSTARTER_BITS = bytes(bits)
    return _NONSTARTER_RUN


#: the same characters as a bitmap of planes 0-1 (bit ``cp & 7`` of byte ``cp >> 3``),
#: for the compiled walk's check of a tree's text nodes
_NONSTARTER_BITS: Optional[bytes] = None


def cap_nonstarter_runs(text: str) -> str:
    """Cut runs of combining marks to 30 (UAX #15 stream-safe text).

    CPython's ``unicodedata.normalize`` sorts a run of combining marks by insertion sort:
    a letter followed by 40,000 alternating marks (80 KB of "Zalgo" text) takes seconds
    to NFKC-normalise, 160,000 takes minutes. Every text feature goes through NFKC, so
    runs are capped where the text of a block is made; no script needs more than a few
    marks on one letter.
    """
    if text.isascii() or not _may_hold_run(text):
        return text
    return _cut_runs(text)


def _run_pattern(text: str) -> "re.Pattern[str]":
    """The run pattern for ``text``: the BMP one unless it holds astral characters."""
    bmp, full = _nonstarter_run_patterns()
    # astral characters take two UTF-16 units: a C-speed test (max() over a str is slow)
    return full if len(text.encode("utf-16-le", "surrogatepass")) > 2 * len(text) else bmp


def _cut_runs(text: str) -> str:
    """:func:`cap_nonstarter_runs` without its pre-checks (for callers that made them)."""
    return _run_pattern(text).sub(lambda m: m.group(0)[:MAX_NONSTARTERS], text)


# every non-starter is U+0300 or above: two or more UTF-8 bytes, all >= 0x80
_HIGH_BYTES = bytes(0x80 if i >= 0x80 else 0 for i in range(256))
_HIGH_RUN = b"\x80" * (2 * (MAX_NONSTARTERS + 1))


def _may_hold_run(text: str) -> bool:
    """False when ``text`` cannot hold a run of more than 30 non-starters: it has no 62
    consecutive non-ASCII UTF-8 bytes. Three C-level passes (about 3 ns a character)
    spare most texts the character-class regex (about 20 ns a character)."""
    return _HIGH_RUN in text.encode("utf-8", "surrogatepass").translate(_HIGH_BYTES)


class PreparedPage:
    """One page after preparation.

    ``root`` is the BODY element of the cleaned tree (the paper's virtual root sits above
    it conceptually: methods that need one create it in their own structures), ``title``
    the document title, ``url`` where the page came from (may be None); ``head`` and
    ``scripts`` (and ``markup``) are what its metadata is read from (see
    :mod:`~sst_cleaner.engine._head`).
    """

    __slots__ = (
        "root",
        "tree",
        "title",
        "url",
        "truncated",
        "dropped_elements",
        "head",
        "scripts",
        "markup",
        "_paths",
        "_steps",
        "_by_path",
    )

    def __init__(
        self,
        root: etree._Element,
        title: str,
        url: Optional[str],
        truncated: bool = False,
        dropped_elements: int = 0,
        head: Optional[etree._Element] = None,
        scripts: tuple = (),
        markup: str = "",
    ):
        self.root = root
        self.tree = root.getroottree()
        self.title = title
        self.url = url
        #: True if part of the page was not considered (a :class:`Limits` cap was hit)
        self.truncated = truncated
        #: elements removed or flattened by the element / depth caps
        self.dropped_elements = dropped_elements
        #: the page's <head>, detached before cleaning, and its body's JSON-LD scripts
        self.head = head
        self.scripts = scripts
        #: the markup as parsed (not copied: the parse's own string), which the metadata
        #: searches before walking the tree for what few pages have
        self.markup = markup
        self._paths: dict = {}
        self._steps: dict = {}
        self._by_path: Optional[dict] = None

    def xpath_of(self, el: etree._Element) -> str:
        """The element's path, exactly as ``tree.getpath(el)`` writes it.

        Computed here with memoised ancestors and one sibling index per wide parent,
        because libxml2's ``getpath`` rescans all siblings of every ancestor: on a body
        with 50,000 children, 50,000 calls took 40 s (quadratic); this is linear.
        """
        paths = self._paths
        hit = paths.get(el)
        if hit is not None:
            return hit
        compiled = walk_function("element_path")  # the same walk over libxml2's nodes
        if compiled is not None:
            got = compiled(el, paths, self._steps)
            if got is not None:
                return got
        chain = []  # (node, its parent): each parent is asked for once
        node = el
        while node is not None and node not in paths:
            parent = node.getparent()
            chain.append((node, parent))
            node = parent
        prefix = paths[node] if node is not None else ""
        for node, parent in reversed(chain):
            prefix = prefix + "/" + self._step(node, parent)
            paths[node] = prefix
        return prefix

    def forget_steps(self) -> None:
        """Drop the sibling steps :meth:`xpath_of` memoised (it makes them again if asked):
        they hold a proxy for every child of every parent it named, which would otherwise
        live as long as the result, and count towards the collections the cyclic garbage
        collector runs when it resumes after a clean."""
        self._steps = {}

    def element_at(self, path: str) -> Optional[etree._Element]:
        """The element :meth:`xpath_of` named ``path`` (None if there is none).

        Looked up among the paths already computed (a method names every block it
        labels), else with XPath; a tag name XPath cannot read (``fb:like``) gives None.
        """
        if self._by_path is None or len(self._by_path) != len(self._paths):
            self._by_path = {p: el for el, p in self._paths.items()}
        el = self._by_path.get(path)
        if el is not None:
            return el
        try:
            found = self.tree.xpath(path)
        except etree.XPathError:
            return None
        return found[0] if found and isinstance(found[0], etree._Element) else None

    def _step(self, el: etree._Element, parent: Optional[etree._Element]) -> str:
        if parent is None:
            return el.tag
        steps = self._steps.get(parent)
        if steps is None:
            # counted over libxml2's nodes where that is built (see _walk.pyx)
            compiled = walk_function("child_steps")
            steps = compiled(parent) if compiled is not None else None
            if steps is None:
                steps = _child_steps(parent)
            self._steps[parent] = steps
        return steps[el]


def _child_steps(parent: etree._Element) -> dict:
    """Each element child's step, by libxml2's rule: an index only if a sibling has the
    same name, 1-based. One pass: the first of a name gets its index when a second
    one comes."""
    steps: dict = {}
    first: dict = {}
    seen: dict = {}
    for child in parent:
        t = child.tag  # ``tag`` makes a new string: read once
        if not isinstance(t, str):
            continue
        n = seen.get(t, 0) + 1
        seen[t] = n
        if n == 1:
            steps[child] = t
            first[t] = child
        else:
            if n == 2:
                steps[first[t]] = f"{t}[1]"
            steps[child] = f"{t}[{n}]"
    return steps


# C0 controls (but tab, LF, CR) and U+FFFE/U+FFFF: not XML characters, so lxml refuses
# any string holding one (a method making a text node from page text would crash)
_NON_XML_CHARS = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

# the same characters, found on UTF-8 bytes: one C-level translate maps them to NUL (and
# every non-ASCII byte to 0x80, for the combining-run pre-check), then substring searches;
# several times cheaper than regex searches on the str
_SCAN_BYTES = bytes(0 if (i < 9 or i in (11, 12) or 14 <= i < 32) else (0x80 if i >= 0x80 else i) for i in range(256))

# DEL and the C1 controls (U+0080-U+009F): never text, and on a terminal U+009B opens
# an escape sequence like ESC [. A raw one is a Windows-1252 byte read as Latin-1 (the
# mistake HTML's own rules undo: they read Latin-1 as Windows-1252, and map the
# references &#128; to &#159; the same way), so it becomes that character; DEL and the
# five bytes Windows-1252 leaves undefined become a space, as C0 controls do. Numeric
# references the parser would decode to a control (the C0 ones but tab, LF and CR,
# &#127;, and those five) become a space too.
_C1_CHARS = re.compile("[\x7f-\x9f]")
_C1_UTF8 = re.compile(b"\xc2[\x80-\x9f]")
_C1_AS_TEXT = {chr(c): bytes([c]).decode("cp1252", "replace").replace("\ufffd", " ") for c in range(0x80, 0xA0)}
_C1_AS_TEXT["\x7f"] = " "
_CONTROL_REFERENCE = re.compile(
    r"&#(?:[xX]0*(?:[1-8bBcCeEfF]|1[0-9a-fA-F]|7[fF]|8[1dDfF]|9[0dD])(?![0-9a-fA-F])"
    r"|0*(?:[1-8]|1[1246789]|2[0-9]|3[01]|127|129|141|143|144|157)(?![0-9]));?"
)


def _sanitize_text(text: str) -> tuple[str, Optional[bytes]]:
    """``text`` without what lxml refuses or a method could choke on, and its UTF-8
    encoding when that was made on the way (None when the text changed after it)."""
    # lxml rejects NUL and lone surrogates in str input; they are never meaningful text
    data: Optional[bytes]
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
        data = text.encode("utf-8")
    if b"\x00" in data:  # NUL is the only character with a zero byte: found on the bytes
        text = text.replace("\x00", "")
        data = text.encode("utf-8")
    raw = data
    scan = data.translate(_SCAN_BYTES)
    # U+FFFE / U+FFFF looked for in the str: a one-character search, where their three
    # UTF-8 bytes are a slow multi-byte search
    if b"\x00" in scan or "\ufffe" in text or "\uffff" in text:
        text = _NON_XML_CHARS.sub(" ", text)  # ASCII for ASCII: no new combining run
        data = None
    # a C1 control's UTF-8 is the byte C2 and one of 80-9F (C2 is never a continuation
    # byte), found on the bytes: a search of the str tests every character against a class
    if b"\x7f" in raw or (b"\xc2" in raw and _C1_UTF8.search(raw) is not None):
        text = _C1_CHARS.sub(lambda m: _C1_AS_TEXT[m.group()], text)
        data = None
    if b"&#" in raw and _CONTROL_REFERENCE.search(text) is not None:
        text = _CONTROL_REFERENCE.sub(" ", text)
        data = None
    # _may_hold_run's test, on the bytes already scanned (the replacements above only
    # break runs)
    if _HIGH_RUN in scan:
        text = _cut_runs(text)
        data = None
    return text, data


def parse_html(
    html: HtmlInput, url: Optional[str] = None, encoding: Optional[str] = None, limits: Optional[Limits] = None
) -> PreparedPage:
    """Parse and clean one page, within ``limits`` (default :data:`DEFAULT_LIMITS`).

    Never raises on malformed markup: lxml recovers, and an empty or unparsable document
    gives an empty BODY. A page over a cap is cut and flagged ``truncated`` (see
    :class:`~sst_cleaner.engine._limits.Limits` for what each cap does).
    """
    # one function: it runs on every page, and the caps and the truncated
    # flag thread through its steps in order, which read best in one place
    if limits is None:
        limits = DEFAULT_LIMITS
    truncated = False
    if isinstance(html, bytes):
        if len(html) > limits.max_page_bytes:
            html = _cut_at_tag(html, limits.max_page_bytes)
            truncated = True
        html = decode_html(html, encoding)
    elif not isinstance(html, str):
        raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
    elif len(html) > limits.max_page_bytes:
        html = _cut_at_tag(html, limits.max_page_bytes)
        truncated = True
    html, utf8 = _sanitize_text(html)
    sanitized = html
    # an XML declaration with an encoding makes lxml refuse str input; drop it
    if html.startswith("<?xml"):
        end = html.find("?>")
        html = html[end + 2 :] if end != -1 else html
    # a flood of tiny elements: cut before the C parser builds millions of nodes
    n_tags = html.count("<")
    for _ in range(8):
        if n_tags <= limits.max_tags:
            break
        html = _cut_at_tag(html, int(len(html) * limits.max_tags / n_tags))
        n_tags = html.count("<")
        truncated = True
    html = _cap_attributes(html, attribute_cap(limits.max_attributes, n_tags))
    html = drop_stray_document_tags(html)
    doc = None
    deep = False
    if html.strip():
        # UTF-8 bytes (the sanitising's own if the text is unchanged), but a str with an XML
        # declaration the step above could not drop: lxml refuses it, as before
        source: Union[str, bytes] = html
        if not html.startswith("<?xml"):
            source = utf8 if html is sanitized and utf8 is not None else html.encode("utf-8")
        doc, deep, depth_lost = _parse_document(source)
        truncated = truncated or depth_lost
    if doc is None:
        doc = _fromstring(b"<html><body></body></html>", _parsers()[0])
    title = ""
    title_el = _first_title(doc)
    if title_el is not None:
        title = normalize_space("".join(title_el.itertext()))
    move_content_after_body_into_body(doc)
    move_body_content_out_of_head(doc)
    # the metadata's sources, before the head and the scripts are dropped
    head, scripts = detach_head(doc), body_jsonld(doc, html)
    # invisible subtrees first (C-level), so that the caps count what a reader sees
    etree.strip_elements(doc, *INVISIBLE_TAGS, with_tail=False)
    etree.strip_tags(doc, *VOID_MISPARSED_TAGS)
    n_elements = count_elements(doc)
    dropped = cap_elements(doc, limits.max_elements, n_elements)
    truncated = truncated or dropped > 0
    # without the deep re-parse, libxml2 has already kept the tree within depth 256
    if deep or limits.max_depth < LIBXML2_MAX_DEPTH:
        dropped += cap_depth(doc, limits.max_depth)  # flattened: text kept, not truncated
    _drop_hidden(doc)  # the invisible tags are already gone
    # after the hidden ones are gone: what is capped is what a reader would see
    # (the steps since the count only removed elements: it still bounds them)
    tiny_dropped = cap_tiny_blocks(doc, BLOCK_TAGS, limits.max_tiny_blocks, n_elements)
    dropped += tiny_dropped
    truncated = truncated or tiny_dropped > 0
    # character references and joined tails can make new runs of combining marks
    if "&" in html or not html.isascii():
        _cap_tree_runs(doc)
    body = doc.find("body")
    if body is None:
        body = etree.SubElement(doc, "body")
    return PreparedPage(
        body, title, url, truncated=truncated, dropped_elements=dropped, head=head, scripts=scripts, markup=html
    )


def as_page(
    page: Union["PreparedPage", HtmlInput, tuple], url: Optional[str] = None, limits: Optional[Limits] = None
) -> "PreparedPage":
    """A :class:`PreparedPage` from what the API accepts: a prepared page (as is), HTML
    (str or bytes), ``(url, html)`` or ``(url, html_bytes, declared_encoding)``."""
    if isinstance(page, PreparedPage):
        return page
    encoding = None
    if isinstance(page, tuple):
        if len(page) == 2:
            url, html = page
        elif len(page) == 3:  # bytes with the charset the server declared
            url, html, encoding = page
        else:
            raise ValueError("a page tuple must be (url, html) or (url, html_bytes, encoding)")
    else:
        html = page
    return parse_html(html, url=url, encoding=encoding, limits=limits)


def _cap_tree_runs(doc: etree._Element) -> None:
    """Cut runs of combining marks in the tree's text nodes to 30, like the page text
    before parsing (:func:`cap_nonstarter_runs`). Character references (``&#x301;``
    40,000 times) are decoded by the parser, and removing hidden elements joins their
    tails, so runs can appear after the text was capped; a method tokenising a raw text
    node would spend seconds in NFKC. One C-level concatenation and one regex search
    decide whether any text node needs it."""
    compiled = walk_function("holds_run")
    if compiled is not None:
        # each text of the tree checked in C (see _walk.pyx): no concatenation of them all
        _nonstarter_run_patterns()
        found = compiled(doc, _NONSTARTER_BITS, MAX_NONSTARTERS)
        if found is not None and not found:
            return
    # the text of every node (as XPath's string()), written by libxml2 as UTF-8: the
    # bytes _may_hold_run looks at, without making and encoding a str
    data = etree.tostring(doc, method="text", encoding="utf-8", with_tail=False)
    if data.isascii() or _HIGH_RUN not in data.translate(_HIGH_BYTES):
        return
    text = data.decode("utf-8")
    if not _run_pattern(text).search(text):
        return
    for el in doc.iter():
        if el.text and not el.text.isascii():
            el.text = cap_nonstarter_runs(el.text)
        if el.tail and not el.tail.isascii():
            el.tail = cap_nonstarter_runs(el.tail)


def _first_title(doc: etree._Element) -> Optional[etree._Element]:
    """The first ``title`` in document order, as ``.//title``, looked for in the head
    first: lxml's iterator looks one match ahead, so a page's only title costs a walk of
    the whole tree, where one in the leading head ends the search there."""
    head = doc[0] if doc.tag != "title" and len(doc) else None
    if head is not None and head.tag == "head":
        found = next(head.iter("title"), None)
        if found is not None:
            return found
    return next(doc.iter("title"), None)


def _cut_at_tag(data: AnyStr, limit: int) -> AnyStr:
    """``data[:limit]``, moved back to just before the last ``<`` if that is not too far,
    so that no tag is cut in half."""
    lt = b"<" if isinstance(data, bytes) else "<"
    cut = data.rfind(lt, 0, limit + 1)
    if cut < limit // 2:
        cut = limit
    return data[:cut]


def _parse_document(html: Union[str, bytes]) -> tuple[Optional[etree._Element], bool, bool]:
    """Parse (a str, or its UTF-8 bytes); on libxml2's depth-256 abort, parse again with
    its 2048 limit.

    Returns the root (None if lxml refuses the text), whether the deep re-parse was used
    (the tree may then be deeper than 256) and whether content was still lost to nesting
    deeper than 2048.
    """
    parser, deep_parser = _parsers(utf8=isinstance(html, bytes))
    try:
        doc = _fromstring(html, parser)
    except (etree.ParserError, ValueError):
        return None, False, False
    if not _hit_depth_limit(parser):
        return doc, False, False
    try:
        deep = _fromstring(html, deep_parser)
    except (etree.ParserError, ValueError):
        return doc, False, True
    return deep, True, _hit_depth_limit(deep_parser)


def _hit_depth_limit(parser: etree.HTMLParser) -> bool:
    # the depth error is fatal, so it is the last one logged
    err = parser.error_log.last_error
    return err is not None and err.type_name == "ERR_RESOURCE_LIMIT" and "depth" in err.message


# Hidden elements, found by libxml2's XPath engine (C) from the attributes that hide
# them: ``hidden``, an inline style that says ``display:none`` or ``visibility:hidden``
# once CSS whitespace is removed and the letters are lower-cased, ``aria-hidden="true"``.
# Selecting attributes rather than elements (``//@style``, not ``//*[@style]``) is half
# the cost on libxml2, and the style test in C returns only the hiding ones, not every
# styled element (docs pages carry hundreds).
_UPPER = "ABDEHILNOPSTVY"  # the letters of the two hiding declarations
# (form feed, the fifth CSS space, cannot reach the tree: it is not an XML character)
_STYLE_KEY = f"translate(., '{_UPPER} \t\n\r', '{_UPPER.lower()}')"
# ``/descendant::*/@x`` selects what ``//@x`` does, without visiting every text node. Both
# declarations hold a "y", which only a "y" or "Y" of the style gives the key: styles
# without one (most: widths, colours, margins) are passed without the two translations.
_HIDING_STYLE = f"contains({_STYLE_KEY}, 'display:none') or contains({_STYLE_KEY}, 'visibility:hidden')"
_HIDING_ATTRS = etree.XPath(
    "/descendant::*/@hidden"
    f" | /descendant::*/@style[(contains(., 'y') or contains(., 'Y')) and ({_HIDING_STYLE})]"
    " | /descendant::*/@aria-hidden[. = 'true']"
)


def _drop_hidden(doc: etree._Element) -> None:
    """Drop hidden elements (``hidden``, an inline ``display:none`` or
    ``visibility:hidden``, an empty ``aria-hidden="true"``) and non-element nodes."""
    # comments/PIs are removed by the parser; entities and other non-element nodes too,
    # so this walk (in C: the filter is libxml2's) normally finds none
    if next(doc.iter(etree.Comment, etree.ProcessingInstruction, etree.Entity), None) is not None:
        _drop_elements([el for el in doc.iter() if not isinstance(el.tag, str)])
    doomed = []
    compiled = walk_function("hiding_elements")
    found = compiled(doc) if compiled is not None else None
    if found is not None:  # the same selection, over libxml2's nodes (see _walk.pyx)
        for el, by_aria in found:
            if not (by_aria and _has_text(el)):  # text marked aria-hidden is still on screen
                doomed.append(el)
        _drop_elements(doomed)
        return
    last = None
    for attr in _HIDING_ATTRS(doc):  # document order
        el = attr.getparent()
        if el is last:  # two hiding attributes on one element
            continue
        last = el
        if attr.attrname == "aria-hidden" and _has_text(el):
            continue  # text marked aria-hidden is still on screen
        doomed.append(el)
    _drop_elements(doomed)


def _has_text(el: etree._Element) -> bool:
    """Whether ``el`` holds visible text (its tail is not its own). A childless element's
    text is read directly: icon placeholders marked aria-hidden come by the thousand,
    and walking each one's text was most of the cost of preparing such a page."""
    if not len(el):
        return bool(el.text and el.text.strip())
    return bool("".join(el.itertext()).strip())


def _drop_elements(doomed: list) -> None:
    """Remove each of ``doomed`` (document order) with its subtree, keeping its tail text
    in place (appended to the previous sibling's tail or the parent's text), the moved
    tails joined once per receiving node: appending them one by one re-copied the growing
    string each time (50,000 hidden siblings with tails: 13 s, quadratic)."""
    pending: dict = {}  # (node, "tail" | "text") -> tails to append, in order
    for el in doomed:
        parent = el.getparent()
        if parent is None:
            continue
        tail = el.tail
        if tail:
            prev = el.getprevious()
            key = (prev, "tail") if prev is not None else (parent, "text")
            pending.setdefault(key, []).append(tail)
        parent.remove(el)
    for (node, slot), tails in pending.items():
        if slot == "tail":
            node.tail = (node.tail or "") + "".join(tails)
        else:
            node.text = (node.text or "") + "".join(tails)


def element_text(el: etree._Element) -> str:
    """Visible text of an element, whitespace-normalised (tail excluded)."""
    return normalize_space(" ".join(t for t in el.itertext()))
