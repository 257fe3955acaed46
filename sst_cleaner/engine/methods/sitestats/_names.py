"""What an element's own names say: its style label (the Site Style Tree paper's (TAG,
Attr) pair, the unit of a style path) and the hint bits of its class and id (comments,
boilerplate, content, media), both read from the element's attributes once and cached per
distinct attribute set: a site's pages repeat a few hundred of them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice
from typing import Optional

from lxml import etree

from sst_cleaner.engine.methods.sst.style_tree import normalise_attr_value

#: attributes that carry a node's style on today's web, plus the old presentational ones
STYLE_ATTRS = ("class", "id", "role", "bgcolor", "width", "align", "valign", "face", "size")


STYLE_ATTR_SET = frozenset(STYLE_ATTRS)


def style_label(el: etree._Element) -> str:
    """``TAG`` plus its normalised style attributes: the paper's (TAG, Attr) pair."""
    return _label_and_hints(el)[0]


@lru_cache(maxsize=50_000)
def _style_label(tag: str, raw: tuple) -> str:
    # pages of a site repeat the same few hundred attribute sets: normalise each once
    parts = [tag]
    for name, v in raw:
        parts.append(f"{name}={normalise_attr_value(v)[:80]}")
    return "|".join(parts)


# Words in class/id values that name what a container is, the way authors name them.
# A word matches at the start of a name's token (tokens split at punctuation, digits and
# camelCase humps), so "comments" and "commentList" name comments while "correspond" does
# not contain "respond" and "getlogin" is no login box. An id written all in capitals is
# an anchor generated from a title (DocBook's "SQL-COMMENT" is the COMMENT command's
# page), not a name a designer gave a container, and says nothing.
HINT_COMMENT = 1
HINT_BOILER = 2
HINT_CONTENT = 4
HINT_MEDIA = 8
#: what a name may say against a container
_NEGATIVE_HINTS = HINT_BOILER | HINT_COMMENT
_HINT_WORDS = (
    (HINT_COMMENT, ("comment", "disqus", "respond", "reply", "replies", "discussion")),
    (
        HINT_BOILER,
        (
            "share",
            "social",
            "related",
            "sidebar",
            "footer",
            "navbar",
            "navigation",
            "menu",
            "breadcrumb",
            "widget",
            "promo",
            "advert",
            "sponsor",
            "banner",
            "cookie",
            "newsletter",
            "subscribe",
            "masthead",
            "toolbar",
            "popular",
            "trending",
            "recommend",
            "tags",
            "signup",
            "login",
            "disclaimer",
            "legal",
            "copyright",
            "teaser",
        ),
    ),
    (HINT_CONTENT, ("article", "content", "post", "entry", "story", "main", "body", "text", "blog")),
    (HINT_MEDIA, ("caption", "gallery", "slide", "photo", "credit", "figure", "carousel", "thumb")),
)


def class_hints(el: etree._Element) -> int:
    """HINT_* bits of the element's own class/id names (the ones :func:`_label_and_hints`
    gives, read without the element's other attributes: the page context asks this of
    every container of every block)."""
    cls, ident = el.get("class"), el.get("id")
    bits = _class_id_hints(cls or "", ident or "") if (cls or ident) else 0
    return _without_title_names(el, bits) if bits & _NEGATIVE_HINTS else bits


@lru_cache(maxsize=50_000)
def _class_id_hints(cls: str, ident: str) -> int:
    # shared with _label_hints_of: the page context asks for the containers the block
    # walk has just labelled, whose ids are often the page's own ("post-1234")
    return _hints_of(cls, ident)


#: an ASCII name's tokens: a run of capitals with the lower-case letters after it, or a
#: run of lower-case letters (what :func:`name_tokens` cuts, found in C)
_ASCII_NAME_TOKEN = re.compile(r"[A-Z]+[a-z]*|[a-z]+")


def name_tokens(val: str) -> list[str]:
    """The lower-cased tokens of a class/id value: split at every character that is not a
    letter and before every capital that follows a lower-case letter."""
    if val.isascii():
        return [tok.lower() for tok in _ASCII_NAME_TOKEN.findall(val)]
    out: list[str] = []
    cur: list[str] = []
    prev_lower = False
    for ch in val:
        if ch.isalpha():
            if ch.isupper() and prev_lower and cur:
                out.append("".join(cur).lower())
                cur = []
            cur.append(ch)
            prev_lower = ch.islower()
        else:
            if cur:
                out.append("".join(cur).lower())
                cur = []
            prev_lower = False
    if cur:
        out.append("".join(cur).lower())
    return out


def _hints_of(cls: str, ident: str) -> int:  # called from the cached _class_id_hints only
    tokens = name_tokens(cls)
    if not ident.isupper():  # isupper: some letter, and no lower-case one
        tokens += name_tokens(ident)
    # a group's word starts a token where it follows the space put before every token
    # (tokens hold letters only)
    spaced = " " + " ".join(tokens)
    bits = 0
    for bit, at_token_start in _HINT_RES:
        if at_token_start.search(spaced):
            bits |= bit
    return bits


#: each group's words as one alternation of literals behind a space (linear)
_HINT_RES = tuple((bit, re.compile(" (?:" + "|".join(names) + ")")) for bit, names in _HINT_WORDS)


def _label_and_hints(el: etree._Element) -> tuple[str, int]:
    """:func:`style_label` and :func:`class_hints` of one element, reading its attributes once."""
    items = el.items()  # a plain list: cheaper than the ``attrib`` proxy
    if not items:
        return el.tag, 0
    if len(items) == 1:  # the common case (a class, an id, an href) needs no sort
        k, v = items[0]
        if not (v and k in STYLE_ATTR_SET):
            return el.tag, 0
        got = _label_hints_of(el.tag, (items[0],))
    else:
        raw = tuple(sorted([kv for kv in items if kv[1] and kv[0] in STYLE_ATTR_SET]))
        if not raw:
            return el.tag, 0
        got = _label_hints_of(el.tag, raw)
    # the attributes say it all, unless a name says boilerplate or comments
    return (got[0], _without_title_names(el, got[1])) if got[1] & _NEGATIVE_HINTS else got


def label_and_hints(el: etree._Element, tag: str, attrs: tuple) -> tuple[str, int, bool]:
    """:func:`_label_and_hints` from what a walk read of the element: its tag and its
    non-empty style attributes as sorted pairs
    (:func:`~sst_cleaner.engine._segment.style_attributes` with :data:`STYLE_ATTR_SET`),
    and whether the element itself was read too (a boilerplate or comment name, checked
    against the element's title): when not, any element with that tag and those
    attributes gets the same label and bits."""
    if not attrs:
        return tag, 0, False
    got = _label_hints_of(tag, attrs)
    if got[1] & _NEGATIVE_HINTS:
        return got[0], _without_title_names(el, got[1]), True
    return got[0], got[1], False


@lru_cache(maxsize=50_000)
def _label_hints_of(tag: str, raw: tuple) -> tuple[str, int]:
    d = dict(raw)
    cls, ident = d.get("class"), d.get("id")
    hints = _class_id_hints(cls or "", ident or "") if (cls or ident) else 0
    return _style_label(tag, raw), hints


# A documentation generator names a section after its title: Sphinx writes "Comment
# moderation" as <section id="comment-moderation"> (older Sphinx as <div class="section"
# id=...>), MkDocs and Asciidoctor give the heading the id ("comments", "_discussion").
# Such a name is the page's own words, not a name a designer gave a container, and says
# nothing of boilerplate or comments. A comment thread opens with a heading too ("3
# Comments" over <div id="comments">), but holds a list of comments, not prose of its own.
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
#: elements that are a section's own prose when they are its children
_PROSE = frozenset(("p", "pre"))
#: how much of a heading's text is read for its words (a title is short)
_TITLE_CHARS = 300


def _without_title_names(el: etree._Element, bits: int) -> int:
    """``bits`` (the element's hint bits) less the boilerplate and comment bits of its
    class or id when every token of that name is a word of the element's title: the
    text of a heading, or of the heading opening a section that holds prose
    (:func:`_section_title`)."""
    title = _heading_text(el) if el.tag in _HEADINGS else _section_title(el)
    if title is None:
        return bits
    words = set(name_tokens(title))
    cls, ident = el.get("class") or "", el.get("id") or ""
    if cls and words.issuperset(name_tokens(cls)):
        cls = ""
    if ident and words.issuperset(name_tokens(ident)):
        ident = ""
    said = _class_id_hints(cls, ident) if (cls or ident) else 0
    return (bits & ~_NEGATIVE_HINTS) | (said & _NEGATIVE_HINTS)


def _heading_text(heading: etree._Element) -> str:
    return "".join(islice(heading.itertext(), 50))[:_TITLE_CHARS]


def _section_title(el: etree._Element) -> Optional[str]:
    """The text of the heading ``el`` opens with when ``el`` holds prose: a paragraph or
    a code block among its children, or among those of a child section opening with a
    heading (a chapter whose first sub-section follows its title); None otherwise."""
    heading = _opening_heading(el)
    if heading is None or not _holds_prose(heading, nested=True):
        return None
    return _heading_text(heading)


def _opening_heading(el: etree._Element) -> Optional[etree._Element]:
    """The heading that is ``el``'s first child with content (Sphinx puts the targets of
    a section's other labels, empty ``<span id=...>``, before it), or None."""
    for child in el:
        tag = child.tag
        if tag in _HEADINGS:
            return child
        if isinstance(tag, str) and (child.text or len(child)):
            return None
    return None


def _holds_prose(heading: etree._Element, nested: bool) -> bool:
    """Whether a paragraph or a code block follows ``heading`` among its siblings (or,
    ``nested``, among the children of a sibling section opening with a heading)."""
    for child in heading.itersiblings():
        tag = child.tag
        if tag in _PROSE:
            return True
        if nested and isinstance(tag, str) and tag not in _HEADINGS:
            sub = _opening_heading(child)
            if sub is not None and _holds_prose(sub, nested=False):
                return True
    return False
