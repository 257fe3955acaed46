"""The attribute cap applied to a page's markup before libxml2 parses it (see
:func:`sst_cleaner.engine._dom.parse_html` and ``Limits.max_attributes``)."""

from __future__ import annotations

import math
import re
from typing import Any

try:  # the scan below character by character in C, where the engine is built (see _attr_scan.pyx)
    from sst_cleaner.engine._attr_scan import run_end as _c_run_end
except ImportError:
    _c_run_end = None  # type: ignore[assignment]

# A start tag, tokenised the HTML way (quoted values may hold ">"), with possessive
# repeats only (Python 3.11): no backtracking, linear on any input. (Nothing follows the
# value's alternation inside the possessive group, so it needs no atomic group of its
# own: fewer opcodes per attribute.)
# ``\s`` is spelled out as the characters it matches in a str pattern (a test checks the
# set): a class of literals is one table lookup a character, where ``\s`` in a class is
# a category test, and every character of every tag's names is tested against it
_WS = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_ATTR = rf"""[^{_WS}/>=]++(?:[{_WS}]*+=[{_WS}]*+(?:"[^"]*+"|'[^']*+'|[^{_WS}>]*+))?+"""
_START_TAG = re.compile(rf"<[A-Za-z][^{_WS}/>]*+(?:[{_WS}/]++{_ATTR})*+")
_ONE_ATTR = re.compile(rf"[{_WS}/]++{_ATTR}")


_SHORT_TAGS: dict[int, "re.Pattern[str]"] = {}


def _short_tags_pattern(max_attributes: int) -> "re.Pattern[str]":
    """Text, stray ``<`` and start tags with fewer than ``max_attributes`` attributes, as
    one possessive run: the scan for over-long tags stays in C (one match per page on
    ordinary pages, one per long tag otherwise). A start tag is tokenised exactly as by
    ``_START_TAG``; a tag with ``max_attributes`` or more ends the run."""
    pat = _SHORT_TAGS.get(max_attributes)
    if pat is None:
        # text runs between the "<"s, so that each "<" is tried once, not after a failed
        # text branch; a tag name followed by ">" is taken whole, without the attribute
        # repeat and its look-ahead (an ordinary page's tags without attributes)
        attrs = rf"(?:[{_WS}/]++{_ATTR}){{0,{max_attributes - 1}}}+(?![{_WS}/]++{_ATTR})"
        tag = rf"<(?:(?![A-Za-z])|[A-Za-z][^{_WS}/>]*+(?:>|{attrs}))"
        pat = re.compile(r"[^<]*+(?:" + tag + r"[^<]*+)*+")
        if len(_SHORT_TAGS) < 8:
            _SHORT_TAGS[max_attributes] = pat
    return pat


#: attribute pairs libxml2 may compare in one document (it checks each attribute of a tag
#: against the tag's earlier ones, so a tag with k attributes costs k * k): ~0.2 s of C
#: time at worst. The dev corpora's costliest page needs 61 million (tags of 194
#: attributes on a page of 1,622 tags), so real pages keep every attribute.
MAX_ATTRIBUTE_PAIRS = 100_000_000
#: attributes per tag always kept, however many tags the page has
MIN_ATTRIBUTES = 64


def attribute_cap(max_attributes: int, n_tags: int) -> int:
    """Attributes kept per start tag on a page of ``n_tags`` tags: ``max_attributes``, or
    fewer when every tag at that many would cost more than :data:`MAX_ATTRIBUTE_PAIRS`
    (999 attributes on each of 1,001 tags parsed for 2 s)."""
    per_tag = math.isqrt(MAX_ATTRIBUTE_PAIRS // max(1, n_tags))
    return max(1, min(max_attributes, max(MIN_ATTRIBUTES, per_tag)))


def _run_end(run: "re.Pattern[str]", html: str, pos: int) -> int:
    """Where a run pattern that matches the empty string stops, from ``pos``."""
    m = run.match(html, pos)
    return pos if m is None else m.end()


def _cap_attributes(html: str, max_attributes: int) -> str:
    """Keep the first ``max_attributes`` attributes of every start tag.

    libxml2's HTML parser checks each new attribute name against all earlier ones of the
    tag: 100,000 distinct attributes on one element took 55 s of uninterruptible C time.
    The page is skipped over in C up to each tag with ``max_attributes`` or more
    attributes (:func:`_short_tags_pattern`, or the same scan compiled in ``_attr_scan``
    where the engine is built), so an ordinary page costs one linear scan and no
    Python-level step per tag.
    """
    if len(html) <= 2 * max_attributes:  # each attribute takes at least 2 characters
        return html
    if _c_run_end is not None:
        return _cut_tags(html, max_attributes, lambda at: _c_run_end(html, at, max_attributes))
    # The cap varies with the page's tag count, and a pattern per cap was compiled again
    # and again: the scan runs with one pattern for MIN_ATTRIBUTES first, which no tag of
    # an ordinary page reaches. From a tag that does, the rest of the page is scanned
    # with the cap's own pattern (both tokenise alike, so it goes on where the first one
    # stopped).
    skip = _short_tags_pattern(min(max_attributes, MIN_ATTRIBUTES))
    pos = _run_end(skip, html, 0)
    if pos < len(html) and max_attributes > MIN_ATTRIBUTES:
        skip = _short_tags_pattern(max_attributes)
        pos = _run_end(skip, html, pos)
    return _cut_tags(html, max_attributes, lambda at: _run_end(skip, html, at), pos)


def _cut_tags(html: str, max_attributes: int, run_end: Any, pos: int = -1) -> str:
    """:func:`_cap_attributes` from ``pos`` (-1: ``run_end(0)``), the first tag with
    ``max_attributes`` or more attributes or the end; ``run_end(at)`` says where the
    next one is from ``at``."""
    if pos < 0:
        pos = run_end(0)
    pieces: list[str] = []
    last = 0
    while pos < len(html):
        m = _START_TAG.match(html, pos)  # a start tag with max_attributes or more
        assert m is not None  # the run ended at "<" + a letter: a start tag
        name_end = m.start() + 1
        while name_end < m.end() and not (html[name_end].isspace() or html[name_end] == "/"):
            name_end += 1
        cut = None
        for k, a in enumerate(_ONE_ATTR.finditer(html, name_end, m.end()), 1):
            if k == max_attributes:
                cut = a.end()
                break
        if cut is not None and cut < m.end():
            pieces.append(html[last:cut])
            last = m.end()
        pos = run_end(m.end())
    if not pieces:
        return html
    pieces.append(html[last:])
    return "".join(pieces)
