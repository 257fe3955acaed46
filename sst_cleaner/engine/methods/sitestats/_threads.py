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
from bisect import bisect_right
from typing import TYPE_CHECKING

from sst_cleaner.engine._tree_table import child_indices

if TYPE_CHECKING:
    from sst_cleaner.engine.methods.sitestats.site_stats import PageAnalysis

#: a record's header says one of these: how to answer it, or the post's number ...
_ANSWER, _TIME = 1, 2
_BOTH = _ANSWER | _TIME

#: a link's text offering to answer a post (short and link text, see _marks)
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
    rf"{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}\.?\s+{_MONTH}\s+\d{{4}}|"
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|"
    r"\d{1,2}:\d{2}(?:\s*[ap]\.?m\b)?|"
    r"\d+\s+(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\s+ago|yesterday|today"
    r")",
    re.IGNORECASE,
)
#: header blocks are short: a paragraph that mentions a date is not one
_HEADER_CHARS = 160
_LINK_CHARS = 48
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


def _marks(b: object) -> int:
    """What the block says of a post's header: _ANSWER, _TIME, both or nothing."""
    blk = b.block  # type: ignore[attr-defined]
    text = blk.text
    n = len(text)
    if n > _HEADER_CHARS:
        return 0
    bits = 0
    if _WHEN.search(text):
        bits = _TIME
    if n <= _LINK_CHARS and blk.link_chars * 2 >= n and _ANSWER_LINK.search(text) and not _NEW_ANSWER.search(text):
        bits |= _ANSWER
    elif _SAYS.search(text) or _POST_NUMBER.search(text):
        bits |= _ANSWER
    return bits


class Threads:
    """The page's comment threads: ``comment``, the positions (in the page's blocks) of
    the blocks inside a reply, a thread's heading or its answer form; ``opening``, those of
    a forum topic's first post."""

    __slots__ = ("comment", "opening")

    def __init__(self) -> None:
        self.comment: set[int] = set()
        self.opening: set[int] = set()


def find_threads(pa: PageAnalysis) -> Threads:
    """The comment threads of the page (see the module's docstring)."""
    found = Threads()
    blocks = pa.blocks
    marked = [(bi, m) for bi, m in enumerate(map(_marks, blocks)) if m]
    if sum(1 for _bi, m in marked if m & _ANSWER) < 2:
        return found  # most pages: no two answer links, no thread
    table = pa.table
    index, parent, size, elements = table.index, table.parent, table.size, table.elements
    kinds: dict[int, tuple] = {}

    def kind(i: int) -> tuple:
        got = kinds.get(i)
        if got is None:
            el = elements[i]
            cls = el.get("class")
            got = kinds[i] = (el.tag, cls.split()[0] if cls and cls.split() else "")
        return got

    # every (container, kind of child) on the way up from a marked block: its children
    # of that kind holding marks, with what each holds
    groups: dict[tuple, dict[int, int]] = {}
    chains: list[list[tuple]] = []
    for bi, m in marked:
        i = index.get(blocks[bi].block.element)
        if i is None:
            continue
        chain = []
        while parent[i] >= 0:
            key = (parent[i], kind(i))
            rec = groups.setdefault(key, {})
            rec[i] = rec.get(i, 0) | m
            chain.append(key)
            i = parent[i]
        chains.append(chain)
    counts: dict[int, dict] = {}

    def like_children(p: int, k: tuple) -> int:
        got = counts.get(p)
        if got is None:
            got = counts[p] = {}
            for c in child_indices(size, p):
                if isinstance(elements[c].tag, str):
                    ck = kind(c)
                    got[ck] = got.get(ck, 0) + 1
        return got.get(k, 0)

    def is_thread(key: tuple) -> bool:
        full = sum(1 for m in groups[key].values() if m == _BOTH)
        return full >= 2 and 2 * full >= like_children(*key)

    # a marked block's thread is the lowest run of records on its way up: a higher one
    # (two page columns each holding a thread) is never the thread itself
    threads: set[tuple] = set()
    verdicts: dict[tuple, bool] = {}
    for chain in chains:
        for key in chain:
            ok = verdicts.get(key)
            if ok is None:
                ok = verdicts[key] = is_thread(key)
            if ok:
                threads.add(key)
                break
    if not threads:
        return found
    # block positions by element position, to turn subtrees into block ranges
    starts = [index.get(b.block.element, -1) for b in blocks]
    for key in threads:
        p, k = key
        if any(_inside(t[0], p, size) for t in threads if t[0] != p):
            continue  # a thread nested in another one's record: marked with it
        records = [c for c in child_indices(size, p) if kind(c) == k]
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
