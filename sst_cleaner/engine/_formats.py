"""What a reader gets from the kept blocks: plain text with code kept verbatim, Markdown
and a minimal safe HTML.

Every method labels text blocks (see :mod:`sst_cleaner.engine._segment`) and keeps some of them,
whole or sentence by sentence. This module goes back to each kept block's element to
write it out with its structure: a heading stays a heading, list items stay items, table
cells go back into rows, and a ``pre`` block keeps its line breaks and indentation.

Permalink anchors (Sphinx's ``a.headerlink`` "¶", "§" or "#" anchors beside headings,
anchors titled "Permalink to this headline") are navigation, not content: they are left
out of every output. Only anchors whose text holds no word character, or that say what
they are by class or title, count as permalinks, so no word of the page is lost by
mistake.

A block kept only in part (some of its sentences) is written as those sentences on one
line: its markup cannot be split along sentence lines.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any, Iterator, Optional
from urllib.parse import urljoin, urlsplit

import nh3
from lxml import etree

from sst_cleaner.engine._code import CodeMarks, code_text
from sst_cleaner.engine._dom import BLOCK_TAGS, PreparedPage, normalize_space
from sst_cleaner.engine._result import INFORMATIVE, Block

_WORD = re.compile(r"\w")
_PERMALINK_WORDS = re.compile(r"headerlink|permalink|anchor-?link|heading-?anchor|anchorjs", re.I)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SAFE_SCHEMES = ("http", "https", "mailto", "ftp", "")


def is_permalink(el: etree._Element) -> bool:
    """Whether ``el`` is an ``a`` that only points at its own section. Constant time per
    anchor (no walk below it): a page can hold tens of thousands of nested anchors."""
    if el.tag != "a":
        return False
    get = el.get
    marks = f"{get('class') or ''} {get('title') or ''} {get('aria-label') or ''}"
    if _names_permalink(marks):
        return True
    if len(el) or not (get("href") or "").startswith("#"):
        return False  # a glyph anchor holds its glyph as text, not in child elements
    text = (el.text or "").strip()
    return bool(text) and len(text) <= 3 and not _WORD.search(text)


# _PERMALINK_WORDS, case-sensitive, on text folded as re.I folds these letters: lower(),
# after the three letters re.I matches to an ASCII one that lower() does not map to it
# (dotted and dotless I, long s; U+0130 is also the only letter lower() makes two). A
# case-blind search tries every position; this one skips to the letters that can start
# a match.
_PERMALINK_WORDS_FOLDED = re.compile(r"headerlink|permalink|anchor-?link|heading-?anchor|anchorjs")


def _names_permalink(marks: str) -> bool:
    """``_PERMALINK_WORDS.search(marks)`` is not None, on the folded text."""
    if not marks.isascii():
        marks = marks.replace("\u0130", "i").replace("\u0131", "i").replace("\u017f", "s")
    return _PERMALINK_WORDS_FOLDED.search(marks.lower()) is not None


# -- one block's own content ---------------------------------------------------------------


def _inline_text(el: etree._Element) -> Iterator[str]:
    """Text of an inline element, without nested blocks' text and permalinks."""
    for kind, value in block_runs(el, links=False, base=None):
        if kind in ("text", "code"):
            yield value
        elif kind == "br":
            yield " "


def block_runs(el: etree._Element, links: bool = False, base: Optional[str] = None) -> list[tuple]:
    """The block's own content in order, as ``(kind, value)`` runs: ``("text", s)``,
    ``("br", None)``, ``("code", s)``, ``("link", (text, href))`` (with ``links``).
    Nested blocks are their own blocks: they only break the line here. Permalinks are
    left out. Iterative, like the block walk of :mod:`~sst_cleaner.engine._segment`."""
    out: list[tuple] = []
    if el.text:
        out.append(("text", el.text))
    # (element, iterator over its children): the tail of an entered element is written
    # when its children are done
    stack: list = [(None, iter(el))]
    while stack:
        parent, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if parent is not None and parent.tail:
                out.append(("text", parent.tail))
            continue
        tag = child.tag
        entered = False
        if not isinstance(tag, str):
            pass
        elif tag in BLOCK_TAGS:
            out.append(("br", None))
        elif is_permalink(child):
            pass
        elif tag == "br":
            out.append(("br", None))
        elif tag in _CODE_TAGS and _flat_code(child):
            out.append(("code", "".join(child.itertext())))
        elif tag == "a" and links and _safe_href(child.get("href"), base):
            out.append(("link", (normalize_space("".join(_inline_text(child))), _safe_href(child.get("href"), base))))
        else:
            if child.text:
                out.append(("text", child.text))
            stack.append((child, iter(child)))
            entered = True
        if not entered and child.tail:
            out.append(("text", child.tail))
    while out and out[-1][0] == "br":  # a nested block at the end breaks no line here
        out.pop()
    return out


_CODE_TAGS = frozenset(("code", "kbd", "samp", "tt"))
# an inline code element holds a few spans; one with more is entered like any inline
# element, so that code nested in code is not walked once per level
_FLAT_CODE_CAP = 256


def _flat_code(el: etree._Element) -> bool:
    """Whether an inline code element is one run of code: no line break, block or
    permalink below it. Sphinx writes ``code.literal`` as ``span.pre`` words, highlighters
    write spans: their text is the code."""
    if not len(el):
        return True
    for n, d in enumerate(el.iterdescendants()):
        tag = d.tag
        if n == _FLAT_CODE_CAP:
            return False  # walked as any inline element: no element is looked at twice over
        if tag == "br" or tag in BLOCK_TAGS or is_permalink(d) or not isinstance(tag, str):
            return False
    return True


def _safe_href(href: Optional[str], base: Optional[str]) -> Optional[str]:
    """``href`` made absolute, or None unless it is a web, mail or relative link
    (``javascript:``, ``data:``, ``vbscript:`` never reach the output)."""
    if not href:
        return None
    href = "".join(href.split())  # browsers ignore whitespace and control chars in the scheme
    if href.startswith("#"):
        return None
    try:
        full = urljoin(base, href) if base else href
        scheme = urlsplit(full).scheme.lower()
    except ValueError:
        return None
    return full if scheme in _SAFE_SCHEMES else None


def plain(runs: list[tuple]) -> str:
    parts = []
    for kind, value in runs:
        if kind in ("text", "code"):
            parts.append(value)
        elif kind == "link":
            parts.append(value[0])
        else:
            parts.append(" ")
    return normalize_space("".join(parts))


def verbatim(el: etree._Element) -> str:
    """A ``pre`` element's text as it is shown (see :func:`~sst_cleaner.engine._code.code_text`):
    every line, nested blocks' lines included, in order, with their indentation."""
    return code_text(el, is_permalink)


# -- the kept blocks -----------------------------------------------------------------------


class Kept:
    """One kept block: its element, its kept text (one line) and whether it was kept
    whole (so its markup can be written out)."""

    __slots__ = ("element", "line", "whole")

    def __init__(self, element: Optional[etree._Element], line: str, whole: bool):
        self.element = element
        self.line = line
        self.whole = whole


def block_line(block: Block) -> str:
    """The line a method writes for a kept block: its kept sentences, or its text."""
    return " ".join(block.sentences) if block.sentences else block.text


def kept_blocks(blocks: list[Block], page: PreparedPage) -> list[Kept]:
    out = []
    for b in blocks:
        if b.label != INFORMATIVE:
            continue
        line = block_line(b)
        if not line:
            continue
        whole = "".join(line.split()) == "".join(b.text.split())
        out.append(Kept(page.element_at(b.xpath), line, whole))
    return out


def _without_glyphs(line: str, el: Optional[etree._Element]) -> str:
    """A partly kept line without the block's permalink glyphs (word-free ones only: a
    sentence keeps every word it has)."""
    if el is None:
        return line
    glyphs = {normalize_space("".join(a.itertext())) for a in el.iter("a") if is_permalink(a)}
    glyphs = {g for g in glyphs if g and not _WORD.search(g)}
    if not glyphs:
        return line
    return " ".join(tok for tok in line.split(" ") if tok not in glyphs)


def _text_of(kept: Kept, marks: CodeMarks, written: set) -> str:
    """The block as ``result.text`` writes it: a code listing whole and verbatim where its
    first kept piece is (and nothing for its other pieces), tooltips left out,
    permalinks dropped."""
    el = kept.element
    if el is None:
        return kept.line
    if el in marks.hidden:
        return ""
    listing = marks.listing(el)
    if listing is not None:
        if listing in written:
            return ""
        written.add(listing)
        return verbatim(listing) or kept.line
    if not kept.whole:
        return _without_glyphs(kept.line, el)
    return plain(block_runs(el)) or kept.line


def _holds_permalink(block: etree._Element) -> bool:
    """Whether a permalink is part of the block's own content: the nearest block element
    above it is ``block``. Nested blocks are not entered, so that each element of the
    page is looked at for one block at most (iterative, like :func:`block_runs`)."""
    if block.tag not in BLOCK_TAGS:
        return False  # only a block element is the nearest block above an anchor
    stack = [iter(block)]
    while stack:
        for child in stack[-1]:
            tag = child.tag
            if tag in BLOCK_TAGS:
                continue
            if tag == "a" and is_permalink(child):
                return True
            stack.append(iter(child))
            break
        else:
            stack.pop()
    return False


def _rewritten_blocks(blocks: list[Block], page: PreparedPage, marks: Optional[CodeMarks] = None) -> set:
    """The elements of informative blocks whose text can read differently from their
    plain line: pieces of code listings, tooltips and blocks holding a permalink. Most
    pages have none, and the rest only a few: only these are written again. Only the
    informative blocks are looked into, not every anchor of the page."""
    if marks is None:
        marks = CodeMarks(page.root)
    out: set = set()
    seen: set = set()  # an element cut into several blocks is looked into once
    for b in blocks:
        if b.label != INFORMATIVE:
            continue
        el = page.element_at(b.xpath)
        if el is None or el in seen:
            continue
        seen.add(el)
        if el in marks.listing_of or el in marks.hidden or _holds_permalink(el):
            out.add(el)
    return out


def rewrite_text(text: str, blocks: list[Block], page: PreparedPage) -> str:
    """``result.text`` with code listings whole and verbatim, tooltips and permalinks
    dropped, or ``text`` unchanged when the method did not write its text as the kept
    blocks' lines (a method of its own making may not)."""
    marks = CodeMarks(page.root)
    targets = _rewritten_blocks(blocks, page, marks)
    if not targets:
        return text
    kept = kept_blocks(blocks, page)
    if "\n".join(k.line for k in kept) != text:
        return text
    written: set = set()
    lines = (_text_of(k, marks, written) if k.element in targets else k.line for k in kept)
    return "\n".join(t for t in lines if t)


# -- structure: what each kept block is -------------------------------------------------------

_LISTS = ("ul", "ol", "menu", "dir")
_ITEMS = ("li", "dt", "dd")
_CELLS = ("td", "th")


class Piece:
    """One unit of the structured output: ``kind`` is "h" (``level`` 1-6), "p", "pre"
    (``code``), "li" (``level`` = list depth, ``ordered``), "dt", "dd", "cell" (``table``,
    ``row``, ``header``); ``runs`` its inline content (a kept-whole block) or
    ``[("text", line)]``; ``quote`` whether it sits in a ``blockquote``; ``item`` the
    ``li``/``dt``/``dd`` it is a paragraph (or code) of, ``root`` that item's outermost
    list or its ``dl``."""

    __slots__ = ("kind", "runs", "level", "ordered", "table", "row", "header", "quote", "code", "root", "item")

    def __init__(self, kind: str, runs: list, **kw: Any) -> None:
        self.kind = kind
        self.runs = runs
        self.level = kw.get("level", 0)
        self.ordered = kw.get("ordered", False)
        self.table = kw.get("table")
        self.row = kw.get("row")
        self.header = kw.get("header", False)
        self.quote = kw.get("quote", False)
        self.code = kw.get("code", "")
        self.root = kw.get("root")
        self.item = kw.get("item")


def _ancestor(el: etree._Element, tags: tuple) -> Optional[etree._Element]:
    for a in el.iterancestors():
        if a.tag in tags:
            return a
    return None


def _item_of(el: etree._Element) -> dict:
    """The list item, definition or table cell ``el`` is (part of): Sphinx writes every
    item's text as a ``p`` in the ``li`` and a ``dd`` as paragraphs, lists and code;
    DocBook writes a cell's text as a ``p`` in the ``td``."""
    item = el if el.tag in _ITEMS or el.tag in _CELLS else None
    if item is None:
        for a in el.iterancestors():
            if a.tag in _ITEMS or a.tag in _CELLS:
                item = a
                break
            if a.tag == "table":
                return {}
    if item is None:
        return {}
    if item.tag in _CELLS:
        return {
            "item": item,
            "kind": "cell",
            "table": _ancestor(item, ("table",)),
            "row": item.getparent(),
            "header": item.tag == "th",
        }
    if item.tag != "li":
        dl = _ancestor(item, ("dl",))
        return {"item": item, "root": item if dl is None else dl, "kind": item.tag}
    lists = [a for a in item.iterancestors() if a.tag in _LISTS]
    return {
        "item": item,
        "root": lists[-1] if lists else item,
        "kind": "li",
        "level": max(1, len(lists)),
        "ordered": bool(lists) and lists[0].tag == "ol",
    }


def pieces(blocks: list[Block], page: PreparedPage, links: bool = False) -> list[Piece]:
    """The kept blocks as structured pieces, in page order: a code listing whole where its
    first kept piece is, tooltips left out."""
    out = []
    base = page.url
    marks = CodeMarks(page.root)
    written: set = set()
    for k in kept_blocks(blocks, page):
        el = k.element
        if el is None:
            out.append(Piece("p", [("text", k.line)]))
            continue
        if el in marks.hidden:
            continue
        quote = el.tag == "blockquote" or _ancestor(el, ("blockquote",)) is not None
        listing = marks.listing(el)
        if listing is not None:
            if listing not in written:
                written.add(listing)
                code = verbatim(listing) or k.line
                item = _item_of(listing)
                in_list = item.get("kind") == "li"
                ctx = {key: item[key] for key in ("item", "root", "level", "ordered")} if in_list else {}
                out.append(Piece("pre", [("text", code)], code=code, quote=quote, **ctx))
            continue
        runs = block_runs(el, links, base) if k.whole else [("text", _without_glyphs(k.line, el))]
        tag = el.tag
        if tag in _HEADINGS:
            out.append(Piece("h", runs, level=_HEADINGS[tag], quote=quote))
        else:
            item = _item_of(el)
            kind = item.pop("kind", "p")
            out.append(Piece(kind, runs, quote=quote, **item))
    return out


def _group_key(p: Piece) -> Any:
    if p.kind == "li" or (p.kind == "pre" and p.item is not None):
        return ("list", p.root, p.quote)
    if p.kind in ("dt", "dd"):
        return ("dl", p.root, p.quote)
    if p.kind == "cell":
        return ("table", p.table)
    return None


def groups(ps: list[Piece]) -> Iterator[list[Piece]]:
    """Consecutive pieces that make one unit: a list's items (with their paragraphs and
    code), a definition list's terms and definitions, a table's cells."""
    i = 0
    while i < len(ps):
        key = _group_key(ps[i])
        j = i + 1
        if key is not None:
            while j < len(ps) and _group_key(ps[j]) == key:
                j += 1
        yield ps[i:j]
        i = j


def rows(cells: list[Piece]) -> list[list[Piece]]:
    """The table's cells by row; the paragraphs of one cell are one cell, their lines
    broken."""
    out: list[list[Piece]] = []
    last = object()
    for c in cells:
        if c.row is not last:
            out.append([])
            last = c.row
        row = out[-1]
        if row and c.item is not None and row[-1].item is c.item:
            runs = row[-1].runs + [("br", None)] + c.runs
            row[-1] = Piece("cell", runs, table=c.table, row=c.row, header=c.header, quote=c.quote, item=c.item)
        else:
            row.append(c)
    return out


# -- HTML ---------------------------------------------------------------------------------

# what the written fragment may hold: the allow-list of the sanitizer every fragment goes
# through last, a guard behind the escaping (a tag or attribute written by mistake, or
# a page's text that got past it, is dropped there)
HTML_TAGS = frozenset("h1 h2 h3 h4 h5 h6 p br ul ol li dl dt dd table tr th td pre code blockquote a".split())
_HTML_SCHEMES = frozenset(s for s in _SAFE_SCHEMES if s)


def safe_html(fragment: str) -> str:
    """``fragment`` through an allow-list sanitizer (nh3, html5ever's parser): only the
    tags above, no attribute but ``a href``, and hrefs only of web and mail schemes (or
    relative), whatever the fragment holds."""
    return nh3.clean(
        fragment,
        tags=set(HTML_TAGS),
        attributes={"a": {"href"}},
        url_schemes=set(_HTML_SCHEMES),
        link_rel=None,
        strip_comments=True,
    )


def _esc(text: str) -> str:
    return _html.escape(text, quote=True)


def _html_inline(runs: list) -> str:
    parts = []
    for kind, value in runs:
        if kind == "text":
            parts.append(_esc(value))
        elif kind == "code":
            parts.append(f"<code>{_esc(value)}</code>")
        elif kind == "link":
            parts.append(f'<a href="{_esc(value[1])}">{_esc(value[0])}</a>')
        else:
            parts.append("<br>")
    return " ".join("".join(parts).split())


def _html_code(code: str) -> str:
    return f"<pre><code>{_esc(code)}</code></pre>"


def _html_list(items: list[Piece]) -> str:
    """Items at their depths as nested lists; a deeper list goes inside the item before
    it, as HTML wants; an item's later paragraphs and code stay in its ``li``."""
    out: list[str] = []
    open_lists: list[str] = []  # the tag of each open list; each has an open <li>
    open_items: list = []  # the item element of each open <li> (None: a level not kept)
    for p in items:
        level = max(1, p.level)
        continued = len(open_items) >= level and open_items[level - 1] is p.item
        while len(open_lists) > level:
            out.append(f"</li></{open_lists.pop()}>")
            open_items.pop()
        if continued:
            out.append(_html_code(p.code) if p.kind == "pre" else f"<p>{_html_inline(p.runs)}</p>")
            continue
        if len(open_lists) == level:
            out.append("</li>")
            open_items.pop()
        while len(open_lists) < level:
            tag = "ol" if p.ordered else "ul"
            open_lists.append(tag)
            if len(open_lists) < level:  # a level whose item was not kept
                out.append(f"<{tag}><li>")
                open_items.append(None)
            else:
                out.append(f"<{tag}>")
        open_items.append(p.item)
        out.append("<li>" + (_html_code(p.code) if p.kind == "pre" else _html_inline(p.runs)))
    out.extend(f"</li></{t}>" for t in reversed(open_lists))
    return "".join(out)


def _html_deflist(group: list[Piece]) -> str:
    """Terms and definitions; a definition's later paragraphs stay in its ``dd``."""
    out = ["<dl>"]
    open_dd = None
    for p in group:
        inner = _html_inline(p.runs)
        if p.kind == "dd" and open_dd is not None and p.item is open_dd:
            out.append(f"<p>{inner}</p>")
            continue
        if open_dd is not None:
            out.append("</dd>")
            open_dd = None
        if p.kind == "dt":
            out.append(f"<dt>{inner}</dt>")
        else:
            out.append(f"<dd>{inner}")
            open_dd = p.item
    if open_dd is not None:
        out.append("</dd>")
    out.append("</dl>")
    return "".join(out)


def _html_table(cells: list[Piece]) -> str:
    out = []
    for r in rows(cells):
        out.append(
            "<tr>"
            + "".join(f"<{'th' if c.header else 'td'}>{_html_inline(c.runs)}</{'th' if c.header else 'td'}>" for c in r)
            + "</tr>"
        )
    return "<table>" + "".join(out) + "</table>"


def _html_piece(p: Piece) -> str:
    if p.kind == "pre":
        return _html_code(p.code)
    inner = _html_inline(p.runs)
    if p.kind == "h":
        return f"<h{p.level}>{inner}</h{p.level}>"
    return f"<p>{inner}</p>"


def to_html(blocks: list[Block], page: PreparedPage, links: bool = False) -> str:
    """The kept blocks as a minimal HTML fragment: structural tags only (headings,
    paragraphs, lists, definition lists, tables, ``pre``/``code``, ``blockquote``, and
    ``a href`` with ``links``), every text escaped, then passed through the allow-list
    sanitizer (:func:`safe_html`), so it is safe to show as it is: it holds no script,
    style, event attribute or ``javascript:`` URL whatever the page held."""
    out = []
    for group in groups(pieces(blocks, page, links)):
        key = _group_key(group[0])
        if key is None:
            chunk = "\n".join(_html_piece(p) for p in group)
        elif key[0] == "table":
            chunk = _html_table(group)
        elif key[0] == "list":
            chunk = _html_list(group)
        else:
            chunk = _html_deflist(group)
        if group[0].quote:
            chunk = f"<blockquote>{chunk}</blockquote>"
        out.append(chunk)
    return safe_html("\n".join(out))


def to_markdown(blocks: list[Block], page: PreparedPage, links: bool = False) -> str:
    """The kept blocks as Markdown (see :mod:`sst_cleaner.engine._markdown`)."""
    from sst_cleaner.engine._markdown import markdown_of

    return markdown_of(pieces(blocks, page, links))
