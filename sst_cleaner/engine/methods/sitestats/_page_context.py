"""What the default method's feature groups read of a whole page, computed once per
page: the page's blocks summed into every container (characters, template characters,
link characters), its main, wide and prose containers, the names of its containers as
the page reads them, and the runs of like siblings. Every aggregate here is linear in
the page; the feature groups (:mod:`.hybrid`) read it per block and per sentence.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import chain, compress, repeat
from operator import le
from typing import TYPE_CHECKING, Optional

from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._text import BoundedMemo
from sst_cleaner.engine._tree_table import ElementTable, child_indices
from sst_cleaner.engine.methods.sitestats._names import HINT_BOILER, HINT_COMMENT, class_hints
from sst_cleaner.engine.methods.sitestats._regions import deepest_holding, prose_container
from sst_cleaner.engine.methods.sitestats._threads import HEADER_CHARS, LINK_CHARS, Threads, find_threads
from sst_cleaner.engine.methods.sitestats.site_stats import PageAnalysis, PageView

if TYPE_CHECKING:
    from lxml import etree


try:  # built beside the engine where Cython, a compiler and lxml's headers were found
    from sst_cleaner.engine._walk import child_kinds as _c_child_kinds
except ImportError:
    _c_child_kinds = None  # type: ignore[assignment]
try:  # built beside the engine where Cython and a compiler were found
    from sst_cleaner.engine.methods.sitestats._code_marks import code_word_counts as _c_code_word_counts
except ImportError:
    _c_code_word_counts = None  # type: ignore[assignment]

_ALONE = (1, 0)  # like_siblings of an element none of its parent's children is like

#: elements whose text is set in code type: signatures, identifiers, commands
_MONO = frozenset(("code", "pre", "tt", "kbd", "samp", "var"))


#: a mark of code inside a word: an identifier joined by an underscore or with an inner
#: capital, a scope or arrow operator, an empty call, brackets, operators, a method call
_CODE_MARK = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|::|->|\(\)|[a-z][A-Z]|[<>{}\[\];=&*#]|\.[a-z_]{1,40}\(")


def _code_word(word: str) -> int:
    """1 if a mark of code starts within the word's first 41 characters, else 0 (ints:
    sum() adds them in its fast path, bools it does not)."""
    if word.isalpha() and (word.islower() or word.isupper() or word.istitle()):
        return 0  # letters only, no lower-case letter before a capital: no mark
    m = _CODE_MARK.search(word)
    return 1 if m is not None and m.start() <= 40 else 0


#: word -> _code_word(word): a site's pages share most of their words, and
#: ``map(memo.__getitem__, words)`` looks them up in C
_CODE_WORDS = BoundedMemo(_code_word, max_size=100_000, max_key_chars=100)


def _code_words_in(text: str) -> tuple[int, int]:
    """(words of ``text`` shaped like code, words of ``text``)."""
    words = text.split()
    return sum(map(_CODE_WORDS.__getitem__, words)), len(words)


#: text -> _code_words_in(text): a site's template blocks come back on every page
_CODE_WORDS_IN = BoundedMemo(_code_words_in, max_size=20_000, max_key_chars=2000)


def code_word_share(texts: list) -> float:
    """Share of the words of ``texts`` shaped like code (a mark of code starting within
    its first 41 characters): a reference manual's signatures and identifiers, whatever
    markup its generator sets them in (tables, spans, code). Counted text by text: the
    words of the texts joined by spaces are those of each text in turn."""
    if _c_code_word_counts is not None:  # the same count, each text scanned in place
        code, total = _c_code_word_counts(texts)
        return code / max(1, total)
    code = total = 0
    for n_code, n_words in map(_CODE_WORDS_IN.__getitem__, texts):
        code += n_code
        total += n_words
    return code / max(1, total)


def mono_chars(table: "ElementTable") -> int:
    """Characters of the page's text inside code-type elements (the outermost of nested
    ones only), its whitespace runs counted as one as in the blocks' text."""
    chars = 0
    end = -1  # the first element after the subtree last counted
    elements, size = table.elements, table.size
    # the table's tags, matched in C (cheaper than lxml's walk matching six names)
    tags = table.nodes()[0]
    for i in compress(range(len(tags)), map(_MONO.__contains__, tags)):
        if i < end:
            continue
        end = i + size[i]
        chars += len(" ".join("".join(elements[i].itertext()).split()))
    return chars


class PageContext:
    """What the feature groups need to know about the whole page, computed once per page
    (every aggregate over the DOM here is linear in the page; the groups that read it run
    per block or per sentence)."""

    def __init__(self, view: Optional[PageView], pa: PageAnalysis, in_cetd: set):
        # kept whole: one pass over the page's blocks and elements whose results the
        # following steps read, in this order
        self.view = view
        self.pa = pa
        self.n_other = n_other = view.n_other if view is not None else 0
        #: the site has other pages to compare with (else the site features are neutral)
        self.judged = view is not None and n_other > 0
        self.nb = max(1, len(pa.blocks) - 1)
        self.in_cetd = in_cetd
        self.cetd_top: frozenset = getattr(in_cetd, "top", frozenset())
        # per block: chars, template chars (sentences on >= 2 other pages), link chars;
        # summed into every ancestor so each container knows what it holds. Summed in one
        # pass children-before-parents (reverse document order), so the cost is linear in
        # the elements however deep the page is.
        agg: dict = {}
        btmpl: list[float] = []
        blink: list[float] = []
        total = tmpl_total = 0
        if self.judged:  # recur_df <= df, compared in C
            df, recur = view.sentence_df, repeat(view.recur_df)  # type: ignore[union-attr]
        # the short blocks that may offer to answer a post (see _threads), noted on the way
        links: list[int] = []
        lines: list[int] = []
        for b in pa.blocks:
            blk = b.block
            n = len(blk.text)
            if n <= HEADER_CHARS:
                if n <= LINK_CHARS and blk.link_chars * 2 >= n:
                    links.append(len(btmpl))
                elif blk.text[-1:] == ":" or "#" in blk.text:
                    lines.append(len(btmpl))
            t = 0
            if self.judged:
                bt = b.text_info  # its sentences' hashes and lengths, laid out by BlockText
                t = sum(compress(bt.lengths, map(le, recur, map(df, bt.hashes))))
            t = min(t, n)
            btmpl.append(t / max(1, n))
            blink.append(blk.link_chars / max(1, n))
            total += n
            tmpl_total += t
            agg[blk.element] = [n, t, blk.link_chars]
        table = pa.table
        elements, parents = table.elements, table.parent
        for i in range(len(elements) - 1, 0, -1):
            a = agg.get(elements[i])
            if a is None:
                continue
            parent = elements[parents[i]]
            pa_ = agg.get(parent)
            if pa_ is None:
                agg[parent] = list(a)
            else:
                pa_[0] += a[0]
                pa_[1] += a[1]
                pa_[2] += a[2]
        # the root's parent (HTML) holds what the root holds: it is three levels above
        # the blocks near the top
        a = agg.get(elements[0])
        above_root = elements[0].getparent()
        if a is not None and above_root is not None:
            agg[above_root] = list(a)
        check_budget()
        self.agg = agg
        self.btmpl = btmpl  # per block: share of its text that is template
        self.blink = blink  # per block: share of its text inside links
        self.hints = local_hints(pa, agg, total)  # per block: (hint bits, near bits)
        if pa.threads is None:
            pa.threads = find_threads(pa, links, lines)
        _with_threads(self.hints, pa.threads)
        self._kinds: dict = {}  # parent -> (tag, class) of its children -> [count, chars]
        self._records: dict = {}  # element -> records_above(element)
        self.page_tmpl = tmpl_total / max(1, total)
        # The main container: walking down from the root, the child that holds at least
        # half of the page's non-template text, as deep as such a child exists. What lies
        # inside it is the page's own matter even where its words recur (a byline inside
        # the article); what lies outside it rarely is. The wide main container holds nine
        # tenths of it: on a reference manual, where the listings every page shares
        # (inherited methods, trait implementations) sit beside the page's own
        # description, it is the content area those listings belong to.
        root = pa.page.root
        content_total = total - tmpl_total
        main = deepest_holding(table, agg, content_total, 0.5)
        wide = deepest_holding(table, agg, content_total, 0.9)
        wide_agg = agg.get(wide, (0, 0, 0))
        self.wide_tmpl = wide_agg[1] / max(1, wide_agg[0])
        self.in_wide_set = set(table.subtree(wide)) if wide is not root else None  # None: everything
        main_agg = agg.get(main, (0, 0, 0))
        self.main_tmpl = main_agg[1] / max(1, main_agg[0])
        self.in_main_set = set(table.subtree(main)) if main is not root else None

        check_budget()
        tops, self.top_ratio_of, self.top_share = prose_container(pa, agg, btmpl, content_total, self.hints)
        check_budget()
        in_top_set: set = set()
        for top in tops:
            in_top_set.update(table.subtree(top))
        self.in_top_set = in_top_set
        self.last_top = _last_in(pa.blocks, in_top_set)
        self.log_page_chars = math.log1p(content_total)
        # sentence hash -> occurrences on the page
        self.page_counts = Counter(chain.from_iterable([b.text_info.hashes for b in pa.blocks]))
        code_chars = link_total = 0
        for b in pa.blocks:
            link_total += b.block.link_chars
            if (
                b.tag in ("pre", "code", "td", "th")
                or "pre" in b.ancestors
                or "code" in b.ancestors
                or "table" in b.ancestors
            ):
                code_chars += len(b.block.text)
        self.page_link_share = link_total / max(1, total)
        self.page_code_share = code_chars / max(1, total)
        self.page_mono_share = min(1.0, mono_chars(table) / max(1, total))
        self.page_code_words = code_word_share([b.block.text for b in pa.blocks])
        self._above: dict = {}

    def like_siblings(self, parent: etree._Element, el: etree._Element) -> tuple[int, float]:
        """(how many children of ``parent`` share ``el``'s tag and class, their mean
        text in characters), each parent's children counted once."""
        kinds = self._kinds.get(parent)
        if kinds is None and _c_child_kinds is not None:
            # the same count over libxml2's nodes, where it is built (see _walk.pyx)
            kinds = self._kinds[parent] = _c_child_kinds(parent, self.agg)
        if kinds is None:
            kinds = {}
            agg = self.agg
            for ch in parent:  # every child of every block's container: each read once
                tag = ch.tag
                if not isinstance(tag, str):
                    continue
                k = (tag, ch.get("class"))
                a = agg.get(ch)
                acc = kinds.get(k)
                if acc is None:
                    acc = kinds[k] = [1, a[0] if a is not None else 0]
                else:
                    acc[0] += 1
                    acc[1] += a[0] if a is not None else 0
                kinds[ch] = acc  # the child's kind, found again without reading it
            self._kinds[parent] = kinds
        acc = kinds.get(el)
        if acc is None:
            acc = kinds.get((el.tag, el.get("class")), _ALONE)
        return acc[0], acc[1] / acc[0]  # a kind counts one child at least

    def records_above(self, el: etree._Element) -> tuple[int, float]:
        """The most like siblings (and their mean text) of ``el`` or its parent, the
        nearer level winning ties; kept per element."""
        got = self._records.get(el)
        if got is None:
            best_n, best_chars = 0, 0.0
            at = el
            for _ in range(2):
                parent = at.getparent()
                if parent is None:
                    break
                n, chars = self.like_siblings(parent, at)
                if n > best_n:
                    best_n, best_chars = n, chars
                at = parent
            got = self._records[el] = (best_n, best_chars)
        return got

    def above(self, el: etree._Element) -> tuple:
        """(log chars, template share, link share) of the containers 1, 2 and 3 levels
        above ``el`` (above the root, the root again).

        Kept per first container: the blocks of a list or a table share it, and what
        lies above it is the same for all of them."""
        p = el.getparent()
        first = p if p is not None else el
        got = self._above.get(first)
        if got is None:
            got = self._above[first] = self._containers_from(first)
        return got

    def _containers_from(self, el: etree._Element) -> tuple:
        agg = self.agg
        out: list[float] = []
        for level in range(3):
            if level:
                p = el.getparent()
                if p is not None:
                    el = p
            a = agg.get(el, (0, 0, 0))
            c = max(1, a[0])
            out += (math.log1p(a[0]), a[1] / c, a[2] / c)
        return tuple(out)


def _with_threads(hints: list, threads: Threads) -> None:
    """``hints`` with what the page's thread structure says (see :mod:`._threads`), in
    place: a block inside a reply, a thread's heading or its answer form is in a comment
    whatever its containers are called; a forum topic's first post is the page's matter
    even where its container is named like the replies."""
    for bi in threads.comment:
        h, nh = hints[bi]
        hints[bi] = (h | HINT_COMMENT, nh)
    for bi in threads.opening:
        h, nh = hints[bi]
        hints[bi] = (h & ~HINT_COMMENT, nh & ~HINT_COMMENT)


def _last_in(blocks: list, elements: set) -> int:
    """The index of the last of ``blocks`` whose element is in ``elements`` (-1 if none)."""
    for bi in range(len(blocks) - 1, -1, -1):
        if blocks[bi].block.element in elements:
            return bi
    return -1


#: a container holding at least this share of the page's text is page-wide
PAGE_WIDE_SHARE = 0.5
_NEGATIVE_HINTS = HINT_BOILER | HINT_COMMENT


def local_hints(pa: PageAnalysis, agg: dict, total: int) -> list[tuple[int, int]]:
    """Per block, the hint bits of its containers (any ancestor, and its element with the
    two above it), where a page-wide container (holding PAGE_WIDE_SHARE of the page's
    text) says nothing of boilerplate or comments: CMSs name the BODY or the page's
    wrapper after what the page has somewhere ("single-post sidebar comments-open"), and
    such a name would mark the article itself.

    Read from the block's style path (``pa.paths``: each level's own bits) and how many
    of its levels are page-wide, once per such pair: the page-wide containers are the
    BODY and the top of the tree below it (a container holds at least what each of its
    children holds), so on every path they are the first levels."""
    if not pa.blocks:
        return []
    table = pa.table
    wide_levels = _page_wide_levels(table, agg, total)
    above = _bits_above(pa.page.root, agg, total)
    paths, index = pa.paths, table.index
    memo: dict = {}
    prefixes: dict = {}  # see _path_hints
    out = []
    for b in pa.blocks:
        blk = b.block
        key = (blk.state, wide_levels[index[blk.element]])
        got = memo.get(key)
        if got is None:
            got = memo[key] = _path_hints(paths, blk.state, key[1], above, prefixes)
        out.append(got)
    return out


def _page_wide_levels(table: ElementTable, agg: dict, total: int) -> list[int]:
    """Per element of ``table``: how many of the elements from the root down to it are
    page-wide (the root always is)."""
    levels = [1] * len(table.elements)
    if not total:
        return levels
    floor = PAGE_WIDE_SHARE * total
    elements, size = table.elements, table.size
    # a container holds at least what each of its children holds, so the page-wide
    # elements are found from the root down, reading the children of page-wide ones
    # only; each is met after its parent, whose levels its subtree has already
    todo = [0]
    while todo:
        for c in child_indices(size, todo.pop()):
            a = agg.get(elements[c])
            if a is not None and a[0] >= floor:
                n = size[c]
                levels[c : c + n] = [levels[c] + 1] * n
                todo.append(c)
    return levels


def _own_bits(el: etree._Element, agg: dict, total: int) -> int:
    """The element's HINT_* bits, those of boilerplate and comments dropped when it is
    page-wide (it holds PAGE_WIDE_SHARE of the page's text)."""
    bits = class_hints(el)
    if bits & _NEGATIVE_HINTS:
        a = agg.get(el)
        if a is not None and total and a[0] >= PAGE_WIDE_SHARE * total:
            bits &= ~_NEGATIVE_HINTS
    return bits


def _bits_above(root: etree._Element, agg: dict, total: int) -> int:
    """The hint bits of the root's ancestors (HTML), which every block's path holds."""
    bits = 0
    el = root.getparent()
    while el is not None:
        bits |= _own_bits(el, agg, total)
        el = el.getparent()
    return bits


def _path_hints(paths: list, pid: int, wide: int, above: int, prefixes: dict) -> tuple[int, int]:
    """(hint bits of the whole path, of its element and the two levels above it, BODY
    excluded) of style path ``pid`` whose first ``wide`` levels are page-wide.

    ``prefixes`` holds, for every (path id, wide) met so far on the page, the bits of the
    path down to that id, its level (BODY's is 0) and its own bits as read at that level:
    the paths of a page share most of their length, so each level is read once per
    ``wide``."""
    todo = []
    i = pid
    while i >= 0 and (i, wide) not in prefixes:
        todo.append(i)
        i = paths[i][0]
    bits, level, _own = prefixes[(i, wide)] if i >= 0 else (above, -1, 0)
    for i in reversed(todo):
        level += 1
        own = paths[i][3]
        if level < wide:  # a page-wide level names no boilerplate or comments
            own &= ~_NEGATIVE_HINTS
        bits |= own
        prefixes[(i, wide)] = (bits, level, own)
    near = 0
    i = pid
    for _ in range(3):
        _bits, level, own = prefixes[(i, wide)]
        if level < 1:  # BODY
            break
        near |= own
        i = paths[i][0]
    return bits, near
