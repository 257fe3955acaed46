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

from lxml import etree

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


def has_permalinks(root: etree._Element) -> bool:
    return any(is_permalink(a) for a in root.iter("a"))


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
        elif tag in ("code", "kbd", "samp", "tt") and not len(child):
            out.append(("code", child.text or ""))
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
    """A ``pre`` element's text as it is shown: line breaks and indentation kept, blank
    lines at both ends and spaces at line ends dropped."""
    parts = []
    for kind, value in block_runs(el):
        if kind in ("text", "code"):
            parts.append(value)
        elif kind == "br":
            parts.append("\n")
    lines = [ln.rstrip() for ln in "".join(parts).replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _is_pre(el: etree._Element) -> bool:
    return el.tag == "pre" or any(a.tag == "pre" for a in el.iterancestors())


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


def text_of(kept: Kept) -> str:
    """The block as ``result.text`` writes it: code verbatim, permalinks dropped."""
    el = kept.element
    if el is None:
        return kept.line
    if not kept.whole:
        return _without_glyphs(kept.line, el)
    if _is_pre(el):
        text = verbatim(el)
        if "".join(text.split()) == "".join(kept.line.split()):
            return text
    return plain(block_runs(el)) or kept.line


def _pre_blocks(root: etree._Element) -> set:
    """Block elements in a ``pre`` (or that are one): their text is written verbatim."""
    out: set = set()
    for pre in root.iter("pre"):
        out.update(d for d in pre.iter() if d.tag in BLOCK_TAGS)
    return out


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


def _rewritten_blocks(blocks: list[Block], page: PreparedPage) -> set:
    """The elements of informative blocks whose text can read differently from their
    plain line: ``pre`` blocks (and blocks inside them) and blocks holding a permalink.
    Most pages have none, and the rest only a few: only these are written again. Only
    the informative blocks are looked into, not every anchor of the page."""
    in_pre = _pre_blocks(page.root)
    out: set = set()
    seen: set = set()  # an element cut into several blocks is looked into once
    for b in blocks:
        if b.label != INFORMATIVE:
            continue
        el = page.element_at(b.xpath)
        if el is None or el in seen:
            continue
        seen.add(el)
        if el in in_pre or _holds_permalink(el):
            out.add(el)
    return out


def rewrite_text(text: str, blocks: list[Block], page: PreparedPage) -> str:
    """``result.text`` with code verbatim and permalinks dropped, or ``text`` unchanged
    when the method did not write its text as the kept blocks' lines (a method of its own
    making may not)."""
    targets = _rewritten_blocks(blocks, page)
    if not targets:
        return text
    kept = kept_blocks(blocks, page)
    if "\n".join(k.line for k in kept) != text:
        return text
    return "\n".join(t for t in (text_of(k) if k.element in targets else k.line for k in kept) if t)


# -- structure: what each kept block is -------------------------------------------------------

_LISTS = ("ul", "ol", "menu", "dir")


class Piece:
    """One unit of the structured output: ``kind`` is "h" (``level`` 1-6), "p", "pre",
    "li" (``level`` = list depth, ``ordered``), "cell" (``table``, ``row``, ``header``);
    ``runs`` its inline content (a kept-whole block) or ``[("text", line)]``; ``quote``
    whether it sits in a ``blockquote``."""

    __slots__ = ("kind", "runs", "level", "ordered", "table", "row", "header", "quote", "code", "root")

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


def _ancestor(el: etree._Element, tags: tuple) -> Optional[etree._Element]:
    for a in el.iterancestors():
        if a.tag in tags:
            return a
    return None


def pieces(blocks: list[Block], page: PreparedPage, links: bool = False) -> list[Piece]:
    """The kept blocks as structured pieces, in page order."""
    out = []
    base = page.url
    for k in kept_blocks(blocks, page):
        el = k.element
        if el is None:
            out.append(Piece("p", [("text", k.line)]))
            continue
        runs = block_runs(el, links, base) if k.whole else [("text", _without_glyphs(k.line, el))]
        quote = el.tag == "blockquote" or _ancestor(el, ("blockquote",)) is not None
        tag = el.tag
        if k.whole and _is_pre(el):
            code = verbatim(el)
            if "".join(code.split()) == "".join(k.line.split()):
                out.append(Piece("pre", runs, code=code, quote=quote))
                continue
        if tag in _HEADINGS:
            out.append(Piece("h", runs, level=_HEADINGS[tag], quote=quote))
        elif tag == "li":
            parent = _ancestor(el, _LISTS)
            lists = [a for a in el.iterancestors() if a.tag in _LISTS]
            out.append(
                Piece(
                    "li",
                    runs,
                    level=max(1, len(lists)),
                    ordered=parent is not None and parent.tag == "ol",
                    quote=quote,
                    root=lists[-1] if lists else None,
                )
            )
        elif tag in ("td", "th"):
            table, row = _ancestor(el, ("table",)), el.getparent()
            out.append(Piece("cell", runs, table=table, row=row, header=tag == "th", quote=quote))
        else:
            out.append(Piece("p", runs, quote=quote))
    return out


def _groups(ps: list[Piece]) -> Iterator[list[Piece]]:
    """Consecutive pieces that make one unit: a list's items, a table's cells."""
    i = 0
    while i < len(ps):
        j = i + 1
        if ps[i].kind == "li":
            while j < len(ps) and ps[j].kind == "li" and ps[j].root is ps[i].root and ps[j].quote == ps[i].quote:
                j += 1
        elif ps[i].kind == "cell":
            while j < len(ps) and ps[j].kind == "cell" and ps[j].table is ps[i].table:
                j += 1
        yield ps[i:j]
        i = j


def _rows(cells: list[Piece]) -> list[list[Piece]]:
    rows: list[list[Piece]] = []
    last = object()
    for c in cells:
        if c.row is not last:
            rows.append([])
            last = c.row
        rows[-1].append(c)
    return rows


# -- Markdown -----------------------------------------------------------------------------

_MD_STARTS = re.compile(r"^(?:[#>+*-]|\d+[.)])")


def _md_code(text: str) -> str:
    text = normalize_space(text)
    if not text:
        return ""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if fence == "`" else f"{fence} {text} {fence}"


def _md_inline(runs: list) -> str:
    parts = []
    for kind, value in runs:
        if kind == "text":
            parts.append(value)
        elif kind == "code":
            parts.append(_md_code(value))
        elif kind == "link":
            text = value[0].replace("[", "\\[").replace("]", "\\]")
            href = value[1].replace("(", "%28").replace(")", "%29").replace(" ", "%20")
            parts.append(f"[{text}]({href})" if text else "")
        else:
            parts.append(" ")
    return normalize_space("".join(parts))


def _md_table(cells: list[Piece]) -> str:
    rows = [[_md_inline(c.runs).replace("|", "\\|") for c in r] for r in _rows(cells)]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _md_piece(p: Piece) -> str:
    if p.kind == "pre":
        longest = max((len(m) for m in re.findall(r"`+", p.code)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}\n{p.code}\n{fence}"
    text = _md_inline(p.runs)
    if p.kind == "h":
        return "#" * p.level + " " + text
    if p.kind == "li":
        return "  " * (p.level - 1) + ("1. " if p.ordered else "- ") + text
    return "\\" + text if _MD_STARTS.match(text) else text


def to_markdown(blocks: list[Block], page: PreparedPage, links: bool = False) -> str:
    """The kept blocks as Markdown (CommonMark with GitHub tables)."""
    out = []
    for group in _groups(pieces(blocks, page, links)):
        if group[0].kind == "cell":
            chunk = _md_table(group)
        else:
            chunk = "\n".join(_md_piece(p) for p in group)
        if not chunk.strip():
            continue
        if group[0].quote:
            chunk = "\n".join("> " + ln if ln else ">" for ln in chunk.split("\n"))
        out.append(chunk)
    return "\n\n".join(out)


# -- HTML ---------------------------------------------------------------------------------


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


def _html_list(items: list[Piece]) -> str:
    """Items at their depths as nested lists; a deeper list goes inside the item before
    it, as HTML wants."""
    out: list[str] = []
    open_lists: list[str] = []  # the tag of each open list; each has an open <li>
    for p in items:
        while len(open_lists) > p.level:
            out.append(f"</li></{open_lists.pop()}>")
        if len(open_lists) == p.level:
            out.append("</li>")
        while len(open_lists) < p.level:
            tag = "ol" if p.ordered else "ul"
            if len(open_lists) < p.level - 1:  # a level whose item was not kept
                out.append(f"<{tag}><li>")
            else:
                out.append(f"<{tag}>")
            open_lists.append(tag)
        out.append(f"<li>{_html_inline(p.runs)}")
    out.extend(f"</li></{t}>" for t in reversed(open_lists))
    return "".join(out)


def _html_table(cells: list[Piece]) -> str:
    rows = []
    for r in _rows(cells):
        rows.append(
            "<tr>"
            + "".join(f"<{'th' if c.header else 'td'}>{_html_inline(c.runs)}</{'th' if c.header else 'td'}>" for c in r)
            + "</tr>"
        )
    return "<table>" + "".join(rows) + "</table>"


def _html_piece(p: Piece) -> str:
    if p.kind == "pre":
        return f"<pre><code>{_esc(p.code)}</code></pre>"
    inner = _html_inline(p.runs)
    if p.kind == "h":
        return f"<h{p.level}>{inner}</h{p.level}>"
    return f"<p>{inner}</p>"


def to_html(blocks: list[Block], page: PreparedPage, links: bool = False) -> str:
    """The kept blocks as a minimal HTML fragment: structural tags only (headings,
    paragraphs, lists, tables, ``pre``/``code``, ``blockquote``, and ``a href`` with
    ``links``), every text escaped, so it is safe to show as it is: it holds no script,
    style, event attribute or ``javascript:`` URL whatever the page held."""
    out = []
    for group in _groups(pieces(blocks, page, links)):
        kind = group[0].kind
        if kind == "cell":
            chunk = _html_table(group)
        elif kind == "li":
            chunk = _html_list(group)
        else:
            chunk = "\n".join(_html_piece(p) for p in group)
        if group[0].quote:
            chunk = f"<blockquote>{chunk}</blockquote>"
        out.append(chunk)
    return "\n".join(out)
