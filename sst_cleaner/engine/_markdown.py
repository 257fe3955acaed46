"""The kept blocks as Markdown (CommonMark, with GitHub's pipe tables), written so that
a page's text can never become markup.

Every text of the page is escaped for CommonMark before it is written: backslash, the
backtick, brackets and ``<`` always (no code span, link, image, autolink or raw HTML can
start in text), ``&`` where it would start an entity, ``*``, ``~`` and ``_`` where they
could open or close emphasis or a strikethrough (``_`` between two letters or digits
cannot, so ``snake_case`` stays readable), and what would start a block at a line's
start (``#``, ``>``, ``-``, ``+``, ``=``, ``1.``). Only the page's own links, with
``links`` and of a web or mail scheme, are written as links; code is written in code
spans and fences longer than any run of backticks it holds.

Definition lists (``dl``) are written as a term line followed by ``: definition`` lines
(the syntax of PHP Markdown Extra, pandoc and markdown-it's deflist); a CommonMark
renderer without that extension shows them as the term and its definition in one
paragraph.
"""

from __future__ import annotations

import re

from sst_cleaner.engine._dom import normalize_space
from sst_cleaner.engine._formats import Piece, groups, rows

# one pass over the text; every lookaround reads the original text
_ESCAPE = re.compile(
    r"[\\`\[\]<]"  # escapes, code spans, links and images, autolinks and HTML
    r"|(?<! )[*~]|[*~](?! )"  # emphasis and strikethrough, unless spaces on both sides
    r"|(?<![^\W_])_|_(?![^\W_])"  # emphasis, unless letters or digits on both sides
    r"|&(?=#?[0-9A-Za-z]+;)"  # entity and character references
)
_BLOCK_START = re.compile(r"[#>+=-]|(\d{1,9})([.)])(?= |$)")
_HEADING_CLOSE = re.compile(r"(?:^| )(#+)$")


def escape(text: str) -> str:
    """``text`` as CommonMark inline text that renders as ``text``, never as markup."""
    return _ESCAPE.sub(r"\\\g<0>", text)


def _line(text: str) -> str:
    """One escaped line, with what would start a block at its start escaped too."""
    m = _BLOCK_START.match(text)
    if m is None:
        return text
    if m.group(1):
        return f"{m.group(1)}\\{m.group(2)}{text[m.end() :]}"
    return "\\" + text


def _code_span(text: str) -> str:
    text = normalize_space(text)
    if not text:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _href(url: str) -> str:
    """A link destination that ends where it should: no space, parenthesis, angle
    bracket or backslash left in it."""
    for ch, code in (("\\", "%5C"), (" ", "%20"), ("(", "%28"), (")", "%29"), ("<", "%3C"), (">", "%3E")):
        url = url.replace(ch, code)
    return url


def inline(runs: list) -> str:
    """A block's inline content, escaped, on one line."""
    parts = []
    for kind, value in runs:
        if kind == "text":
            parts.append(escape(value))
        elif kind == "code":
            parts.append(_code_span(value))
        elif kind == "link":
            text = escape(normalize_space(value[0]))
            parts.append(f"[{text}]({_href(value[1])})" if text else "")
        else:
            parts.append(" ")
    return normalize_space("".join(parts))


def fence(code: str) -> str:
    ticks = "`" * max(3, max((len(r) for r in re.findall(r"`+", code)), default=0) + 1)
    return f"{ticks}\n{code}\n{ticks}"


def _text(p: Piece) -> str:
    text = _line(inline(p.runs))
    if p.kind == "h":
        text = _HEADING_CLOSE.sub(lambda m: m.group(0).replace("#", "\\#", 1), text)
    return text


def _table(cells: list[Piece]) -> str:
    table = [[inline(c.runs).replace("|", "\\|") for c in r] for r in rows(cells)]
    width = max(len(r) for r in table)
    table = [r + [""] * (width - len(r)) for r in table]
    lines = ["| " + " | ".join(table[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in table[1:]]
    return "\n".join(lines)


def _list(items: list[Piece]) -> str:
    """Items indented under the item that holds their list (by its marker's width, as
    CommonMark nests them); an item's later paragraphs and code indented as its own
    content, after a blank line."""
    lines: list[str] = []
    widths: dict[int, int] = {}  # the content indent of the last item begun at each depth
    seen: dict = {}  # item element -> its content indent
    for p in items:
        level = max(1, p.level)
        body = fence(p.code).split("\n") if p.kind == "pre" else [_text(p)]
        if not body[0]:
            continue
        if p.item in seen:
            indent = " " * seen[p.item]
            lead = indent
            lines.append("")
        else:
            outer = widths.get(level - 1, 2 * (level - 1)) if level > 1 else 0
            marker = "1. " if p.ordered else "- "
            widths[level] = outer + len(marker)
            seen[p.item] = widths[level]
            lead, indent = " " * outer + marker, " " * widths[level]
        lines.append(lead + body[0])
        lines += [indent + ln if ln else "" for ln in body[1:]]
    return "\n".join(lines)


def _deflist(group: list[Piece]) -> str:
    lines: list[str] = []
    for p in group:
        text = _text(p)
        if not text:
            continue
        if p.kind == "dt":
            if lines:
                lines.append("")
            lines.append(text)
        else:
            lines.append(": " + text)
    return "\n".join(lines)


def _piece(p: Piece) -> str:
    if p.kind == "pre":
        return fence(p.code)
    text = _text(p)
    if p.kind == "h":
        return "#" * p.level + " " + text if text else ""
    return text


def markdown_of(ps: list[Piece]) -> str:
    out = []
    for group in groups(ps):
        first = group[0]
        if first.kind == "cell":
            chunk = _table(group)
        elif first.kind in ("dt", "dd"):
            chunk = _deflist(group)
        elif first.kind == "li" or (first.kind == "pre" and first.item is not None):
            chunk = _list(group)
        else:
            chunk = "\n".join(_piece(p) for p in group)
        if not chunk.strip():
            continue
        if first.quote:
            chunk = "\n".join("> " + ln if ln else ">" for ln in chunk.split("\n"))
        out.append(chunk)
    return "\n\n".join(out)


def text_markdown(text: str) -> str:
    """Plain text lines (a result without its page) as Markdown paragraphs."""
    return "\n\n".join(_line(escape(ln)) for ln in text.split("\n") if ln.strip())
