"""A page cut into what the site statistics count: text blocks under their style paths,
and each block's sentences (their hashes, lengths, stop-word share and, on first use,
their features). The first step of the data flow after page preparation: a prepared page
-> :class:`PageAnalysis` -> the site model (:mod:`.site_stats`) or a judgement alone."""

# What an element's own names say (its style label, its hint bits) is read in _names.

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, reduce
from itertools import chain
from operator import or_
from typing import TYPE_CHECKING, Optional

from lxml import etree

from sst_cleaner.engine._dom import PreparedPage
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._segment import TextBlock, text_blocks
from sst_cleaner.engine._text import STOP_WORDS, BoundedMemo, feature_tuple, split_sentences, words
from sst_cleaner.engine._tree_table import ElementTable
from sst_cleaner.engine.methods.sitestats._names import STYLE_ATTR_SET, class_hints, label_and_hints

if TYPE_CHECKING:
    from sst_cleaner.engine.methods.sitestats._threads import Threads


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def sentence_hash(sentence: str) -> str:
    """Sentences that differ only in case, punctuation, spacing or numbers are the same."""
    return _words_hash(words(sentence))


#: token -> the form it takes in a sentence hash ("#" for a number)
_HASH_TOKEN = BoundedMemo(lambda tok: "#" if tok.isdigit() else tok)


def _words_hash(tokens: list[str], joined: Optional[str] = None) -> str:
    """The hash of a sentence's words; ``joined``: the words joined by spaces, if made."""
    # most sentences hold no number: their tokens need no look-up each
    if any(map(_is_number, tokens)):
        return _digest(" ".join(map(_HASH_TOKEN.__getitem__, tokens)))
    return _digest(" ".join(tokens) if joined is None else joined)


_is_number = str.isdigit


@dataclass(slots=True)
class SentenceInfo:
    text: str
    hash: str
    n_words: int
    stop_ratio: float
    #: its words joined by spaces (no word holds one), until its features are made
    _words: Optional[str] = field(default=None, repr=False, compare=False)
    _feats: Optional[tuple[str, ...]] = field(default=None, repr=False, compare=False)

    @property
    def feats(self) -> tuple[str, ...]:
        """The sentence's features (stemmed keywords), made from its words on first use:
        only the site's model reads them, and a page judged alone never does. A tuple,
        not a list: the block_text cache keeps sentences for good, and the cyclic
        collector stops tracking a tuple of strings."""
        got = self._feats
        if got is None:
            joined = self._words
            tokens = joined.split(" ") if joined is not None else words(self.text)
            got = self._feats = feature_tuple(tokens)
            self._words = None  # the features say what learning needs of them
        return got


class BlockText:
    """What a block's text says, computed once per distinct text (see :func:`block_text`):
    its sentences, and the three things learning adds up per block, laid out so that
    :meth:`SiteStats.add` hands them to C-level dict updates instead of looping over
    sentences: the sentence hashes, every sentence's features in a row, and the sentence
    lengths. Never mutated."""

    __slots__ = ("sentences", "hashes", "_feats", "lengths")
    hashes: tuple[str, ...]
    lengths: tuple[int, ...]

    def __init__(self, sentences: tuple[SentenceInfo, ...]):
        self.sentences = sentences
        self._feats: Optional[tuple[str, ...]] = None
        if len(sentences) == 1:  # most blocks: nothing to join
            (s,) = sentences
            self.hashes, self.lengths = (s.hash,), (len(s.text),)
            return
        self.hashes = tuple([s.hash for s in sentences])
        self.lengths = tuple([len(s.text) for s in sentences])

    @property
    def feats(self) -> tuple[str, ...]:
        """Every sentence's features in a row (made on first use, as each sentence's)."""
        got = self._feats
        if got is None:
            sentences = self.sentences
            if len(sentences) == 1:
                got = sentences[0].feats
            else:
                got = tuple(chain.from_iterable([s.feats for s in sentences]))
            self._feats = got
        return got


@dataclass(slots=True)
class BlockInfo:
    block: TextBlock
    key: str  # style path digest (the SST node)
    tag: str
    text_info: BlockText
    ancestors: tuple = ()  # tags of ancestors (for pre/code/table context)
    hints: int = 0  # class/id hints of the ancestors (HINT_* bits)
    near_hints: int = 0  # ... of the element and its two nearest ancestors

    @property
    def sentences(self) -> tuple[SentenceInfo, ...]:
        return self.text_info.sentences


@dataclass
class PageAnalysis:
    page: PreparedPage
    blocks: list[BlockInfo]
    fingerprint: str
    #: every element of the page's body (see :func:`text_blocks`): held while the page
    #: is judged, so the later walks over it (CETD, the page context) find live proxies
    elements: list = field(default_factory=list, repr=False, compare=False)
    #: the style paths of :func:`analyse_page` by id (each block's ``block.state``):
    #: (parent id, label, tag, the element's own HINT_* bits), BODY's id 0
    paths: list = field(default_factory=list, repr=False, compare=False)
    #: the tags, texts and tails of :attr:`elements`, read by the same walk
    nodes: Optional[tuple[list, list, list]] = field(default=None, repr=False, compare=False)
    #: the page's comment and forum threads, found once however many times the page is
    #: judged (by the first :class:`~._page_context.PageContext` made of it)
    threads: Optional[Threads] = field(default=None, repr=False, compare=False)

    @property
    def keyed(self) -> bool:
        """Whether the blocks have their node keys and the page its fingerprint, as a site
        model needs (False for ``analyse_page(page, site=False)``: a fingerprint made is
        never empty)."""
        return bool(self.fingerprint)

    @cached_property
    def table(self) -> ElementTable:
        """The body's :class:`ElementTable`, made once from :attr:`elements` for the
        steps that judge the page (CETD, the page context)."""
        return ElementTable(self.page.root, self.elements or None, self.nodes)


def block_text(text: str) -> BlockText:
    """A block's sentences and their sums (:class:`BlockText`).

    Short texts are cached: a site's template blocks (menus, footers, banners) come back
    on every page, and this is the costliest per-block step. Long texts (articles) are
    not, so the cache stays small (at most 20,000 texts of 2,000 characters, each with
    its words once more until their features are made).
    """
    if len(text) <= _CACHED_BLOCK_CHARS:
        return _cached_block_text(text)
    return _block_text(text)


_CACHED_BLOCK_CHARS = 2000


def _block_text(text: str) -> BlockText:
    out = []
    for s in split_sentences(text):
        ws = words(s)
        if not ws:
            continue
        stop = sum(map(_is_stop, ws)) / len(ws)
        joined = " ".join(ws)
        out.append(SentenceInfo(s, _words_hash(ws, joined), len(ws), stop, joined))
    return BlockText(tuple(out))


_is_stop = STOP_WORDS.__contains__
_cached_block_text = lru_cache(maxsize=20_000)(_block_text)


_CONTEXT_TAGS = frozenset(
    """pre code table a li blockquote h1 h2 h3 h4 h5 h6 header footer nav aside article main
    form ul ol figure figcaption""".split()
)


def analyse_page(page: PreparedPage, site: bool = True, judged: bool = True) -> PageAnalysis:
    """Cut a page into blocks and sentences and give each block its style-path key.

    ``site=False``: for a page judged alone, without what only a site model reads (the
    blocks' keys, the page's fingerprint: both left empty); a site model refuses such an
    analysis. ``judged=False``: for a page only learnt from, without what only judging
    reads (the body's elements and their tags, texts and tails, which the walk would
    otherwise keep, and then free, for nothing)."""
    root = page.root
    # Style paths are interned while text_blocks walks the page: the walk's state of an
    # element is its path id, ``entries[id] = (parent id, label, tag, own hint bits)``.
    # What a block needs of its path (digest, context tags, hint bits) is derived from
    # the id for the blocks that have text only, once per path: most elements are
    # wrappers, and a page repeats a few hundred paths.
    # BODY's own attributes are left out of its label: CMSs put the post slug, author
    # and category there, which would make every page a style of its own.
    entries: list[tuple[int, str, str, int]] = [(-1, "body", root.tag, class_hints(root))]
    intern: dict[tuple[int, str, int], int] = {}

    # (parent id, tag, attributes) -> path id, for the elements whose path id depends on
    # nothing else: the walk gives it to the next such element without calling annotate
    same: dict[tuple[int, str, tuple], int] = {}

    def annotate(el: etree._Element, parent: Optional[int], tag: str, attrs: tuple) -> int:
        if parent is None:
            return 0
        label, hints, read_element = label_and_hints(el, tag, attrs)
        # the hint bits are part of the identity: one label can come from raw class/id
        # values that differ in what they say (see _label_hints_of)
        pair = (parent, label, hints)
        pid = intern.get(pair)
        if pid is None:
            pid = intern[pair] = len(entries)
            entries.append((parent, label, tag, hints))
        if not read_element:
            same[(parent, tag, attrs)] = pid
        return pid

    # pid -> (digest, context tags above and at, hint bits of the path, of its near end)
    paths: dict[int, tuple[str, tuple, int, int]] = {}
    prefixes: dict = {}  # see _path_info
    infos: list[BlockInfo] = []
    elements: list = []
    nodes: Optional[tuple[list, list, list]] = ([], [], []) if judged else None
    blocks = text_blocks(root, annotate, elements if judged else None, nodes, STYLE_ATTR_SET, same)
    check_budget()
    for bi, blk in enumerate(blocks):
        if not bi & 31:  # a clock read costs a microsecond: every few dozen blocks
            check_budget()
        bt = block_text(blk.text)
        if not bt.sentences:
            continue
        got = paths.get(blk.state)
        if got is None:
            got = paths[blk.state] = _path_info(entries, blk.state, prefixes, site)
        key, ctx, hints, near = got
        infos.append(BlockInfo(blk, key, blk.element.tag, bt, ctx, hints, near))
    fp = _digest(" ".join(chain.from_iterable([b.text_info.hashes for b in infos]))) if site else ""
    return PageAnalysis(page, infos, fp, elements, entries, nodes)


def _path_info(
    entries: list[tuple[int, str, str, int]], pid: int, prefixes: dict, keyed: bool
) -> tuple[str, tuple, int, int]:
    """What a block needs of its style path ``pid`` (an id of :func:`analyse_page`'s
    ``entries``): its digest ("" unless ``keyed``), its context tags, the hint bits of
    the whole path and of its near end. ``prefixes`` holds the same, in the making, for
    every path id met so far on the page: the paths of a page share most of their length,
    so each id's part is added once to its parent's (BODY's tag is no context, its hint
    bits do count)."""
    todo = []
    i = pid
    while i >= 0 and i not in prefixes:
        todo.append(i)
        i = entries[i][0]
    for i in reversed(todo):
        parent, label, tag, bits = entries[i]
        if parent < 0:  # BODY
            prefixes[i] = (hashlib.blake2b(_utf8(label), digest_size=8) if keyed else None, (), bits, ())
            continue
        digest, ctx, hints, near = prefixes[parent]
        if digest is not None:
            digest = digest.copy()
            digest.update(_utf8("/" + label))
        if tag in _CONTEXT_TAGS:
            ctx += (tag,)
        # what the block's own container is called: its element and the two above it
        # (BODY left out: CMSs put page-wide words like "comments-open" there)
        prefixes[i] = (digest, ctx, hints | bits, (near + (bits,))[-3:])
    digest, ctx, hints, near = prefixes[pid]
    key = digest.hexdigest() if digest is not None else ""
    return key, ctx, hints, reduce(or_, near, 0)


def _utf8(text: str) -> bytes:
    # what _digest hashes of a text (UTF-8 encodes code point by code point, so a path's
    # digest can be fed piece by piece)
    return text.encode("utf-8", "replace")
