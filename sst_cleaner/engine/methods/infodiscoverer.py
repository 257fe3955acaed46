"""InfoDiscoverer: entropy of content blocks over a site's pages.

Lin & Ho, "Discovering Informative Content Blocks from Web Documents" (KDD 2002).
Names follow the paper so the code can be read beside it:

* content blocks (3, 4.1): a page is cut at ``<TABLE>``; a nested table is a child block
  and its strings are excluded from the parent block. TITLE is a special block.
* features (4.2): keywords without stop words, stemmed; CJK as character bigrams
  (:func:`sst_cleaner.engine._text.features`).
* the F-D matrix and H(F) (4.3): ``H(F_i) = -sum_j w_ij log_d w_ij`` with ``w_ij`` the
  term frequency of ``F_i`` in page ``j`` normalised over the site (sum_j w_ij = 1) and
  ``d`` the number of pages, so 0 <= H <= 1. Kept by :class:`TermEntropy`, which also
  serves WISDOM's EN(t) (same formula, same incremental update).
* H(CB) (4.4): the mean H(F) of the block's features.
* classification (4.5): H(CB) below the threshold -> informative. The threshold is found
  by the greedy approach: raise it 0.1, 0.2 ... 0.9 and stop where the number of features
  in the selected blocks stops increasing.
* refinement (4.1 second phase, 6): "if a content block includes too many texts ... it
  can be partitioned into several smaller blocks according to tags such as <TR> and
  <TD>", and "by reducing the granularity of the block based on DOM, the block B is
  possibly specialized as several distinguishable blocks". A block is *ambiguous* when
  H(CB) falls inside ``ambiguous`` (default 0.25-0.75): it is then split by the DOM's
  block containers (TR/TD and, on today's pages, DIV/SECTION/ARTICLE/UL...), and an
  ambiguous container block is split again into its paragraphs. Strings outside every
  table (the body itself: the page is not, or not wholly, table-laid-out) are always
  split that way, because the body is the page and not a content block.

``blocks="table"`` starts from TABLE blocks (the paper); ``blocks="dom"`` starts from the
DOM block containers directly (today's DIV-laid-out pages).

The threshold is chosen on the training pages' blocks. So that ``partial_fit`` can
re-choose it without re-reading old pages, the model keeps the block structure of a
bounded sample of training pages (``threshold_pages``, the first ones seen) as feature
ids; everything else is the F-D matrix's per-term totals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import numpy as np
from lxml import etree

from sst_cleaner.engine._dom import BLOCK_TAGS, PreparedPage
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult
from sst_cleaner.engine._segment import text_blocks
from sst_cleaner.engine._text import count_features, features
from sst_cleaner.engine.methods.cetd import CETDMethod

#: the paper's content-block tag
TABLE_TAGS = frozenset({"table"})
#: block containers used to split ambiguous blocks: the table's rows and cells, and the
#: layout containers of pages that are not table-laid-out
DOM_CONTAINERS = frozenset(
    """table tr td th div section article main aside nav header footer ul ol dl form
    blockquote figure center fieldset details menu dir frameset frame""".split()
)
#: candidate thresholds of the greedy approach (section 4.5: 0.1 to 0.9 by 0.1)
THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))
#: group id of the body (the page itself) at every granularity of :class:`PageBlocks`
BODY_GROUP = 0


# --------------------------------------------------------------------------------------
# H(F): feature entropy over the site's pages, kept incrementally
# --------------------------------------------------------------------------------------
class TermEntropy:
    """The F-D matrix reduced to what the entropy of each feature needs.

    With ``tf_j`` the frequency of a term in page ``j``, ``TF = sum_j tf_j`` and
    ``w_j = tf_j / TF``::

        H = -sum_j w_j log_n w_j = (ln TF - S / TF) / ln n,   S = sum_j tf_j ln tf_j

    so a term needs only ``TF`` and ``S``. The stored entropy ``EN`` is updated with
    WISDOM's incremental rule (Kao et al. 2005, 3.1) when page ``k+1`` arrives:

    * the page lacks the term: ``EN_{k+1} = EN_k / log_k(k+1)`` (= ``EN_k ln k / ln(k+1)``);
    * otherwise ``EN_{k+1} = Phi(EN_k, TF_k, tf_{k+1})``: TF and S are updated and EN is
      recomputed from them.

    No old page is read again, so a crawl can keep one model up to date. With one page
    every entropy is 0 (a term in a single page is wholly distinctive).
    """

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.terms: list[str] = []
        self.n = 0
        self._tf = np.zeros(0, dtype=np.float64)  # TF: total frequency over the pages
        self._s = np.zeros(0, dtype=np.float64)  # S: sum over pages of tf ln tf
        self._en = np.zeros(0, dtype=np.float64)  # EN: entropy with base n

    def __len__(self) -> int:
        return len(self.terms)

    def _grow(self, size: int) -> None:
        cap = len(self._tf)
        if size <= cap:
            return
        new_cap = max(size, 2 * cap, 1024)
        for name in ("_tf", "_s", "_en"):
            old = getattr(self, name)
            arr = np.zeros(new_cap, dtype=np.float64)
            arr[: len(old)] = old
            setattr(self, name, arr)

    def ids(self, terms: Iterable[str], add: bool = False) -> list[int]:
        """Ids of ``terms``; unknown terms get -1 unless ``add``."""
        out = []
        index = self.index
        for t in terms:
            i = index.get(t)
            if i is None:
                if not add:
                    out.append(-1)
                    continue
                i = len(self.terms)
                index[t] = i
                self.terms.append(t)
            out.append(i)
        if add:
            self._grow(len(self.terms))
        return out

    def add_page(self, counts: dict[str, int]) -> None:
        """Add one page's term frequencies (the paper's incremental update)."""
        k = self.n
        ids = np.asarray(self.ids(counts.keys(), add=True), dtype=np.int64)
        tf = np.asarray(list(counts.values()), dtype=np.float64)
        v = len(self.terms)
        # terms absent from page k+1: EN_{k+1} = EN_k / log_k(k+1); k = 1 gives 0, which is
        # right (a term of one page out of two has entropy 0)
        if k >= 1:
            self._en[:v] *= math.log(k) / math.log(k + 1)
        self.n = k + 1
        if len(ids):
            # Phi: recompute from the stored totals for the terms the new page holds
            self._tf[ids] += tf
            self._s[ids] += tf * np.log(tf)
            self._en[ids] = self._entropy(self._tf[ids], self._s[ids], self.n)

    @staticmethod
    def _entropy(tf: np.ndarray, s: np.ndarray, n: int) -> np.ndarray:
        if n <= 1:
            return np.zeros_like(tf)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = (np.log(tf) - s / tf) / math.log(n)
        h = np.where(tf > 0, h, 0.0)
        return np.clip(h, 0.0, 1.0)

    def entropy_of_ids(self, ids: Sequence[int]) -> np.ndarray:
        """EN of each id; an unknown term (-1: in no page of the model) has entropy 0."""
        arr = np.asarray(ids, dtype=np.int64)
        if not len(arr):
            return np.zeros(0)
        en = self._en[np.maximum(arr, 0)]
        return np.where(arr >= 0, en, 0.0)

    def entropy(self, term: str) -> float:
        i = self.index.get(term)
        return 0.0 if i is None else float(self._en[i])

    def batch_entropy(self) -> np.ndarray:
        """EN recomputed from TF and S (for checking the incremental rule)."""
        v = len(self.terms)
        return self._entropy(self._tf[:v], self._s[:v], self.n)

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        v = len(self.terms)
        return {
            "n": self.n,
            "terms": list(self.terms),
            "tf": self._tf[:v].tolist(),
            "s": self._s[:v].tolist(),
            "en": self._en[:v].tolist(),
        }

    @classmethod
    def from_dict(cls, state: dict) -> "TermEntropy":
        obj = cls()
        terms, tf, s, en, n = (state.get("terms"), state.get("tf"), state.get("s"), state.get("en"), state.get("n"))
        if not (
            isinstance(terms, list)
            and isinstance(tf, list)
            and isinstance(s, list)
            and isinstance(en, list)
            and isinstance(n, int)
            and n >= 0
            and len(terms) == len(tf) == len(s) == len(en)
        ):
            raise ValueError("bad term-entropy state")
        if not all(isinstance(t, str) for t in terms) or len(set(terms)) != len(terms):
            raise ValueError("bad term list in term-entropy state")
        obj.terms = list(terms)
        obj.index = {t: i for i, t in enumerate(obj.terms)}
        obj.n = n
        obj._grow(len(terms))
        v = len(terms)
        try:
            obj._tf[:v] = np.asarray(tf, dtype=np.float64)
            obj._s[:v] = np.asarray(s, dtype=np.float64)
            obj._en[:v] = np.asarray(en, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad numbers in term-entropy state: {exc}") from exc
        if not (np.all(np.isfinite(obj._tf[:v])) and np.all(np.isfinite(obj._en[:v]))):
            raise ValueError("non-finite numbers in term-entropy state")
        return obj


# --------------------------------------------------------------------------------------
# content blocks
# --------------------------------------------------------------------------------------
@dataclass
class PageBlocks:
    """A page cut into its finest text blocks ("atoms", :func:`text_blocks`) with, for
    each, the content block it belongs to at each granularity: ``groups[0]`` its TABLE
    block (the nearest enclosing TABLE, or the body), ``groups[1]`` its DOM container
    block, ``groups[2]`` itself. ``feats`` are the atoms' features."""

    atoms: list
    groups: list[list[int]]
    feats: list[list[str]]
    title_feats: list[str]


def _container_index(root: etree._Element) -> dict:
    """For every block-level element and the root: (nearest TABLE ancestor-or-self, nearest
    DOM container ancestor-or-self), as element ids; one iterative walk."""
    out: dict = {}
    root_id = id(root)
    table_stack: list = [root_id]
    dom_stack: list = [root_id]
    out[root] = (root_id, root_id)
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str) or el is root:
            continue
        if event == "start":
            if tag in TABLE_TAGS:
                table_stack.append(id(el))
            if tag in DOM_CONTAINERS:
                dom_stack.append(id(el))
            if tag in BLOCK_TAGS:
                out[el] = (table_stack[-1], dom_stack[-1])
        else:
            if tag in TABLE_TAGS:
                table_stack.pop()
            if tag in DOM_CONTAINERS:
                dom_stack.pop()
    return out


def page_blocks(page: PreparedPage) -> PageBlocks:
    """Cut a page into atoms and their TABLE / DOM-container content blocks."""
    atoms = text_blocks(page.root)
    where = _container_index(page.root)
    g0: list[int] = []
    g1: list[int] = []
    renum: dict[int, int] = {id(page.root): BODY_GROUP}  # the body is group 0 at every level
    for a in atoms:
        t, d = where.get(a.element, (id(page.root), id(page.root)))
        g0.append(renum.setdefault(t, len(renum)))
        g1.append(renum.setdefault(d, len(renum)))
    g2 = list(range(len(atoms)))
    return PageBlocks(atoms, [g0, g1, g2], [features(a.text) for a in atoms], features(page.title))


@dataclass
class ContentBlock:
    atoms: list[int]  # indices of the page's atoms, in document order
    h: float  # H(CB); nan for a block without features
    k: int  # number of features


def refine(
    groups: Sequence[Sequence[int]],
    atom_h: Sequence[np.ndarray],
    start_level: int,
    ambiguous: tuple[float, float],
    split_root: bool,
) -> list[ContentBlock]:
    """Content blocks of one page after the refinement (second phase of 4.1).

    Blocks start at granularity ``start_level`` (0: TABLE, 1: DOM containers); a block
    whose H(CB) lies in ``ambiguous`` is split into its blocks of the next level, down to
    single atoms. ``split_root``: the level-0 block that is the body itself (group
    :data:`BODY_GROUP`: strings outside every table) is always split.
    """
    lo, hi = ambiguous
    n_atoms = len(atom_h)
    if not n_atoms:
        return []
    # top-level blocks
    order: list[list[int]] = []
    seen: dict[int, int] = {}
    for i in range(n_atoms):
        g = groups[start_level][i]
        if g not in seen:
            seen[g] = len(order)
            order.append([])
        order[seen[g]].append(i)
    out: list[ContentBlock] = []
    # explicit stack of (atoms, level); processed in document order
    stack: list[tuple[list[int], int, bool]] = [
        (members, start_level, split_root and start_level == 0 and groups[0][members[0]] == BODY_GROUP)
        for members in reversed(order)
    ]
    while stack:
        members, level, force = stack.pop()
        hs = [atom_h[i] for i in members]
        k = int(sum(len(h) for h in hs))
        h = float(sum(float(x.sum()) for x in hs) / k) if k else float("nan")
        if level < 2 and len(members) > 1 and (force or (k and lo < h < hi)):
            sub: list[list[int]] = []
            sub_seen: dict[int, int] = {}
            for i in members:
                g = groups[level + 1][i]
                if g not in sub_seen:
                    sub_seen[g] = len(sub)
                    sub.append([])
                sub[sub_seen[g]].append(i)
            if len(sub) > 1:
                for part in reversed(sub):
                    stack.append((part, level + 1, False))
                continue
            if level + 1 < 2:
                stack.append((members, level + 1, False))
                continue
        out.append(ContentBlock(members, h, k))
    return out


def choose_threshold(blocks_per_page: Iterable[list[ContentBlock]], min_gain: float = 0.0) -> float:
    """The greedy approach (4.5): raise the H(CB) threshold 0.1 ... 0.9 and stop where the
    number of features in the selected blocks (H(CB) < threshold) stops increasing.

    ``min_gain`` is the relative increase (a share of the features already selected) at
    or below which the count is taken to have stopped increasing. 0 is the paper's rule
    ("never increases more features"); on real sites, where the H(CB) of blocks spread
    over the whole range, that rule always ends at 0.9, so a small tolerance is needed.
    """
    hs: list[float] = []
    ks: list[int] = []
    for blocks in blocks_per_page:
        for b in blocks:
            if b.k:
                hs.append(b.h)
                ks.append(b.k)
    if not hs:
        return THRESHOLDS[-1]
    h = np.asarray(hs)
    k = np.asarray(ks, dtype=np.float64)
    counts = [float(k[h < t].sum()) for t in THRESHOLDS]
    for i in range(len(THRESHOLDS) - 1):
        if counts[i] > 0 and counts[i + 1] - counts[i] <= min_gain * counts[i]:
            return THRESHOLDS[i]
    return THRESHOLDS[-1]


def page_fallback(page: PreparedPage) -> CleanResult:
    """Before the model has two pages there is no entropy to speak of: clean the page on
    its own with CETD (the package's page-level method)."""
    return CETDMethod().clean(page)


@register_method("infodiscoverer")
class InfoDiscovererMethod:
    """InfoDiscoverer as a ``SiteCleaner`` method.

    Parameters:

    * ``blocks``: ``"table"`` (content blocks from TABLE nesting, then refined; the
      paper) or ``"dom"`` (start from the DOM block containers).
    * ``ambiguous``: the H(CB) band inside which a block is split into finer blocks.
    * ``min_gain``: share of features an increase of the threshold must add to count as
      an increase in the greedy approach, relative to the features already selected
      (0 = the paper's rule, which on real sites always ends at 0.9; 0.05 measured best).
    * ``threshold``: a fixed H(CB) threshold instead of the greedy one (None = greedy).
    * ``threshold_pages``: how many training pages' block structures are kept to choose
      the threshold again after ``partial_fit``.

    Output: ``Block.score`` is ``1 - H(CB)`` (higher = more informative); ``title`` is the
    TITLE block when it is informative, else the first sentence of the first informative
    block (section 3).
    """

    def __init__(
        self,
        blocks: str = "table",
        ambiguous: Sequence[float] = (0.25, 0.75),
        min_gain: float = 0.05,
        threshold: Optional[float] = None,
        threshold_pages: int = 40,
    ):
        if blocks not in ("table", "dom"):
            raise ValueError(f"blocks must be 'table' or 'dom', not {blocks!r}")
        lo, hi = (float(x) for x in ambiguous)
        if not (0.0 <= lo <= hi <= 1.0):
            raise ValueError("ambiguous must be a band (lo, hi) inside [0, 1]")
        self.blocks = blocks
        self.ambiguous = (lo, hi)
        self.min_gain = float(min_gain)
        self.fixed_threshold = None if threshold is None else float(threshold)
        self.threshold_pages = int(threshold_pages)
        self.entropy = TermEntropy()
        # block structure of the sample pages: per page (groups, atom feature ids, title ids)
        self._sample: list[tuple[list[list[int]], list[list[int]], list[int]]] = []
        self._threshold: Optional[float] = None

    @property
    def n_pages(self) -> int:
        return self.entropy.n

    @property
    def start_level(self) -> int:
        return 0 if self.blocks == "table" else 1

    # -- learning -------------------------------------------------------------------
    def fit(self, pages: list[PreparedPage]) -> None:
        for page in pages:
            self.partial_fit(page)
        if self.entropy.n >= 2:
            _ = self.threshold  # choose it now rather than on the first clean

    def partial_fit(self, page: PreparedPage) -> None:
        """Add one page; the threshold is chosen again (lazily) on the next clean."""
        pb = page_blocks(page)
        counts = count_features(f for fs in pb.feats for f in fs)
        for f in pb.title_feats:
            counts[f] = counts.get(f, 0) + 1
        self.entropy.add_page(counts)
        if len(self._sample) < self.threshold_pages:
            ids = [self.entropy.ids(fs) for fs in pb.feats]
            self._sample.append((pb.groups, ids, self.entropy.ids(pb.title_feats)))
        self._threshold = None

    # -- the threshold --------------------------------------------------------------
    def _blocks(self, groups: Sequence[Sequence[int]], atom_ids: Sequence[Sequence[int]]) -> list[ContentBlock]:
        atom_h = [self.entropy.entropy_of_ids(ids) for ids in atom_ids]
        return refine(groups, atom_h, self.start_level, self.ambiguous, split_root=True)

    @property
    def threshold(self) -> float:
        """The H(CB) threshold: fixed, or the greedy approach's over the sample pages."""
        if self.fixed_threshold is not None:
            return self.fixed_threshold
        if self._threshold is None:
            self._threshold = choose_threshold((self._blocks(g, ids) for g, ids, _t in self._sample), self.min_gain)
        return self._threshold

    # -- cleaning -------------------------------------------------------------------
    def clean(self, page: PreparedPage) -> CleanResult:
        if self.entropy.n < 2:
            return page_fallback(page)
        pb = page_blocks(page)
        check_budget()
        atom_ids = [self.entropy.ids(fs) for fs in pb.feats]
        check_budget()
        cbs = self._blocks(pb.groups, atom_ids)
        check_budget()
        thr = self.threshold
        label_of = [NOISE] * len(pb.atoms)
        score_of = [0.0] * len(pb.atoms)
        for cb in cbs:
            informative = cb.k > 0 and cb.h < thr
            for i in cb.atoms:
                label_of[i] = INFORMATIVE if informative else NOISE
                score_of[i] = 0.0 if cb.k == 0 else 1.0 - cb.h
        blocks = [Block(page.xpath_of(a.element), a.text, label_of[i], score_of[i]) for i, a in enumerate(pb.atoms)]
        result = CleanResult.from_blocks(blocks, "infodiscoverer", page.title)
        t_ids = self.entropy.ids(pb.title_feats)
        if t_ids:
            h_title = float(self.entropy.entropy_of_ids(t_ids).mean())
            if h_title >= thr and result.sentences:
                result.title = result.sentences[0]  # a redundant TITLE: the informative block's first sentence
        return result

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "entropy": self.entropy.to_dict(),
            "sample": [{"groups": g, "atoms": ids, "title": t} for g, ids, t in self._sample],
        }

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "InfoDiscovererMethod":
        obj = cls(**params)
        if not isinstance(state, dict):
            raise ValueError("bad infodiscoverer state")
        obj.entropy = TermEntropy.from_dict(state.get("entropy") or {})
        v = len(obj.entropy)
        sample = state.get("sample", [])
        if not isinstance(sample, list):
            raise ValueError("bad infodiscoverer sample")
        for item in sample:
            groups, atoms, title = item.get("groups"), item.get("atoms"), item.get("title")
            if not (
                isinstance(groups, list)
                and len(groups) == 3
                and isinstance(atoms, list)
                and all(isinstance(g, list) and len(g) == len(atoms) for g in groups)
                and isinstance(title, list)
            ):
                raise ValueError("bad infodiscoverer sample page")
            for ids in atoms + [title]:
                if not isinstance(ids, list) or not all(isinstance(i, int) and -1 <= i < v for i in ids):
                    raise ValueError("bad feature ids in infodiscoverer sample page")
            obj._sample.append((groups, atoms, title))
        return obj
