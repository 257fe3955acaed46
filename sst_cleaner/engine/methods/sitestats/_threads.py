"""Comment threads and forum threads recognised by their structure on one page.

A container named "comments" says what it holds, and :mod:`._names` reads that. Many
threads are not named so (a Disqus-like ``li.post``, phpBB's ``div.post``, generated class
names), and a name on a container holding most of the page's text is not trusted (see
:func:`~._page_context.local_hints`), so a long thread, or a forum page that is nothing
but its thread, kept its replies as the page's matter. What every thread has whatever its
names is a run of like records (siblings of one tag and first class name), each opening
with a header that says who wrote it and when, and carrying a way to answer it: a reply
or quote link, "NAME says:", a post number (#1, #2...). A run of at least two such
records, at least half of its kind, is a thread.

Where the page has prose of its own before the thread (a blog post, an article), the
whole thread is the readers'. Where it has none (a forum topic: a title, then the
posts), the first record is the question the thread is about, which a reader who fetched
the page came for, and the others are its replies.

Everything is read from the page's blocks (the short ones only) and the element table the
walk built, climbing from the few blocks that say reply and time: no walk of the tree.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import TYPE_CHECKING

from sst_cleaner.engine._tree_table import child_indices

if TYPE_CHECKING:
    from sst_cleaner.engine.methods.sitestats.site_stats import PageAnalysis

#: what a record's header says: how to answer the post (a reply link, "NAME says:", its
#: number), when it was written
_ANSWER, _TIME = 1, 2
_BOTH = _ANSWER | _TIME

#: a link's text offering to answer a post (short and mostly link text, see _answering)
_ANSWER_LINK = re.compile(
    r"\b(?:reply|quote|multiquote|responder|responda|répondre|repondre|antworten|zitieren|rispondi|"
    r"citar|citer|ответить|цитировать|odpowiedz|cytuj|antwoord|reageer)\b|回复|回覆|引用|返信|답글",
    re.IGNORECASE,
)
#: ... unless it asks for a new one (a blog index's "Leave a reply" under every post, a
#: forum's "Post Reply" button beside its thread)
_NEW_ANSWER = re.compile(
    r"\b(?:leave|post|write|add|new|your|comments?|replies|respuestas|kommentare?)\b", re.IGNORECASE
)
#: "NAME says:" / "NAME wrote:" heading a comment
_SAYS = re.compile(
    r"\b(?:says|said|wrote|writes|dice|dijo|escribió|escreveu|schrieb|schreibt|a écrit|scrive|написал[аи]?)\s*:?\s*$",
    re.IGNORECASE,
)
#: a post's number in its thread (vBulletin's #1, Discourse's position)
_POST_NUMBER = re.compile(r"(?:^|\s)#\d{1,5}\s*$")
_MONTH = (
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|janv|févr|mars|avr|mai|juin|juil|août|sept|déc|"
    r"ene|abr|ago|dic|mär|okt|dez|gen|mag|giu|lug|set|ott|fev|out)[a-zé]*\.?"
)
#: a date or a time as a header writes it: "March 3, 2019", "3 Mar 2019", "2019-03-03",
#: "03/03/2019", "10:15 am", "2 hours ago"
_WHEN = re.compile(
    r"\b(?:"
    rf"{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}\.?\s+{_MONTH},?\s+\d{{4}}|"
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|"
    r"\d{1,2}:\d{2}(?:\s*[ap]\.?m\b)?|"
    r"\d+\s+(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\s+ago"
    r")",
    re.IGNORECASE,
)
#: every form of _WHEN has a digit: looked for first, as most short lines have none
_DIGIT = re.compile(r"\d")
#: header blocks are short: a paragraph that mentions a date is not one
HEADER_CHARS = 160
LINK_CHARS = 48
#: a thread's own furniture beside its records: the count heading, the answer form's title
_THREAD_HEADING = re.compile(
    r"^\W*(?:\d+\s+)?(?:comments?|responses?|replies|reply|thoughts? on|reactions?|discussion|"
    r"leave a (?:reply|comment)|post a comment|add a comment|write a comment|join the discussion|"
    r"kommentare?|comentarios?|commentaires?|commenti|comentários|reacties|комментари\w*)\b",
    re.IGNORECASE,
)
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
#: a forum topic has at most this many words of prose before its first post (its title,
#: a breadcrumb, a page count); an article above a thread has more
_OPENING_PROSE_WORDS = 25
#: words a block needs to count as prose there, and link share it may have at most
_PROSE_BLOCK_WORDS = 8
#: how many blocks past a thread's last record its answer form may lie
_FORM_REACH = 12


def _answering(blocks: list, links: list[int], lines: list[int]) -> list[int]:
    """The positions of the blocks that offer to answer a post: a short link "Reply" or
    "Quote" among ``links`` (the short link blocks), a "NAME says:" line or a post number
    among ``lines`` (the other short blocks ending with a colon or holding a "#"). The
    link texts are searched in one go, joined by newlines (no pattern crosses one)."""
    found = []
    if links:
        texts = [blocks[bi].block.text for bi in links]
        joined = "\n".join(texts)
        if _ANSWER_LINK.search(joined):
            ends = list(accumulate(len(t) + 1 for t in texts))
            seen = -1
            for m in _ANSWER_LINK.finditer(joined):
                k = bisect_right(ends, m.start())
                if k != seen:
                    seen = k
                    if not _NEW_ANSWER.search(texts[k]):
                        found.append(links[k])
    for bi in lines:
        text = blocks[bi].block.text
        if text[-1:] == ":":
            if _SAYS.search(text, max(0, len(text) - 24)):
                found.append(bi)
        elif _POST_NUMBER.search(text):
            found.append(bi)
    return sorted(found)


def _dated(b: object) -> bool:
    """Whether the block is a short line saying when."""
    text = b.block.text  # type: ignore[attr-defined]
    return len(text) <= HEADER_CHARS and _DIGIT.search(text) is not None and _WHEN.search(text) is not None


class Threads:
    """The page's comment threads: ``comment``, the positions (in the page's blocks) of
    the blocks inside a reply, a thread's heading or its answer form; ``opening``, those of
    a forum topic's first post."""

    __slots__ = ("comment", "opening")

    def __init__(self) -> None:
        self.comment: set[int] = set()
        self.opening: set[int] = set()


def find_threads(pa: PageAnalysis, links: list[int], lines: list[int]) -> Threads:
    """The comment threads of the page (see the module's docstring); ``links`` and
    ``lines``: see :func:`_answering` (the page context notes them in its pass over the
    blocks)."""
    found = Threads()
    blocks = pa.blocks
    answers = _answering(blocks, links, lines)
    if len(answers) < 2:
        return found  # most pages: no two ways to answer, no thread
    table = pa.table
    index, parent, size, elements = table.index, table.parent, table.size, table.elements
    kinds: dict[int, tuple] = {}

    def kind(i: int) -> tuple:
        got = kinds.get(i)
        if got is None:
            el = elements[i]
            cls = el.get("class")
            first = cls.split(None, 1)[:1] if cls else ()
            got = kinds[i] = (el.tag, first[0] if first else "")
        return got

    # every (container, kind of child) on the way up from a block offering an answer:
    # its children of that kind holding one, with what each holds (_ANSWER, _TIME); the
    # way up from an element climbed already is known
    groups: dict[tuple, dict[int, int]] = {}
    starts_up: list[int] = []
    climbed: set[int] = set()
    for bi in answers:
        i = index.get(blocks[bi].block.element, -1)
        if i < 0:
            continue
        starts_up.append(i)
        while parent[i] >= 0 and i not in climbed:
            climbed.add(i)
            groups.setdefault((parent[i], kind(i)), {})[i] = _ANSWER
            i = parent[i]
    # the runs where two records offer an answer; the blocks inside their records are
    # read for a date (a page's other short lines are not)
    runs = {key: recs for key, recs in groups.items() if len(recs) >= 2}
    if not runs:
        return found
    starts = [index.get(b.block.element, -1) for b in blocks]
    # each record's blocks, in the order of their elements, until one says when (a
    # header leads its record)
    by_start = sorted(zip(starts, range(len(blocks))))
    at_starts = [at for at, _bi in by_start]
    dated: dict[int, bool] = {}
    for recs in runs.values():
        for r in recs:
            k = bisect_left(at_starts, r)
            end = r + size[r]
            while k < len(by_start) and by_start[k][0] < end:
                bi = by_start[k][1]
                d = dated.get(bi)
                if d is None:
                    d = dated[bi] = _dated(blocks[bi])
                if d:
                    recs[r] |= _TIME
                    break
                k += 1
    counts: dict[int, dict] = {}

    def like_children(p: int, k: tuple) -> int:
        got = counts.get(p)
        if got is None:
            got = counts[p] = {}
            for c in child_indices(size, p):
                ck = kind(c)
                got[ck] = got.get(ck, 0) + 1
        return got.get(k, 0)

    def is_thread(key: tuple) -> bool:
        full = sum(1 for m in groups[key].values() if m == _BOTH)
        return full >= 2 and 2 * full >= like_children(*key)

    # an answering block's thread is the lowest run of records on its way up: a higher one
    # (two page columns each holding a thread) is never the thread itself
    threads: set[tuple] = set()
    verdicts: dict[tuple, bool] = {}
    resolved: set[int] = set()  # elements whose way up has been searched: the same above
    for i in starts_up:
        while parent[i] >= 0 and i not in resolved:
            resolved.add(i)
            key = (parent[i], kind(i))
            ok = verdicts.get(key)
            if ok is None:
                ok = verdicts[key] = is_thread(key)
            if ok:
                threads.add(key)
                break
            i = parent[i]
    if not threads:
        return found
    for key in threads:
        p, record_kind = key
        if any(_inside(t[0], p, size) for t in threads if t[0] != p):
            continue  # a thread nested in another one's record: marked with it
        records = [c for c in child_indices(size, p) if kind(c) == record_kind]
        inside = []  # (block, record number) of the blocks inside a record
        for bi, at in enumerate(starts):
            n = bisect_right(records, at) - 1
            if n >= 0 and at < records[n] + size[records[n]]:
                inside.append((bi, n))
        if not inside:
            continue
        first, last = inside[0][0], inside[-1][0]
        opening = _prose_words(blocks[:first]) < _OPENING_PROSE_WORDS
        first_record = inside[0][1]
        for bi, n in inside:
            (found.opening if (opening and n == first_record) else found.comment).add(bi)
        _furniture(blocks, starts, p, parent, size, first, last, found.comment)
    found.comment -= found.opening
    return found


def _inside(outer: int, i: int, size: list) -> bool:
    return outer < i < outer + size[outer]


def _prose_words(blocks: list) -> int:
    words = 0
    for b in blocks:
        blk = b.block
        if blk.link_chars * 2 >= len(blk.text):
            continue
        for s in b.text_info.sentences:
            if s.n_words >= _PROSE_BLOCK_WORDS:
                words += s.n_words
    return words


def _furniture(blocks: list, starts: list, p: int, parent: list, size: list, first: int, last: int, into: set) -> None:
    """The thread's count heading just before its records and the answer form (its title
    and fields) just after them, inside the thread's container or the one above it."""
    outer = parent[p] if parent[p] >= 0 else p
    lo, hi = outer, outer + size[outer]
    for bi in range(max(0, first - 3), min(len(blocks), last + _FORM_REACH + 1)):
        if first <= bi <= last or not lo <= starts[bi] < hi:
            continue
        b = blocks[bi]
        text = b.block.text
        heading = (b.tag in _HEADINGS or len(text) <= 60) and _THREAD_HEADING.search(text)
        if heading or (bi > last and "form" in b.ancestors):
            into.add(bi)
