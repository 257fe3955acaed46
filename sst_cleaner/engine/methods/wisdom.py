"""WISDOM: intrapage informative structure mining on the DOM tree.

Kao, Ho & Chen, "WISDOM: Web Intrapage Informative Structure Mining Based on Document
Object Model" (IEEE TKDE 2005). Names follow the paper:

Phase 1 (3.1), node information:

* ``EN(t) = -sum_j w_j log_n w_j`` over the site's pages (``w_j`` the term's normalised
  frequency in page j), kept incrementally as pages arrive (:class:`TermEntropy`, the
  paper's update rule), and the term weight ``W(t) = 1 - EN(t)``.
* per node ``N`` of the DOM tree (elements *and* text nodes: the DOM's text nodes are
  children too, so a paragraph with a link has two or three children, not one):
  ``ALEN`` (length of its own anchor text), ``CLEN`` (length of its own other text),
  ``API`` (anchor precision index, anchors only: ``sum 1/EN(t)`` over the terms shared by
  the anchor text plus a bounded surrounding text (``API_CONTEXT`` characters each side)
  and the linked page, when that page is in the model), ``CII`` (mean ``W`` of the
  terms of the node's innerText).
* ``SII(N, f) = -sum_j w_j log_m w_j`` over the ``m`` non-dummy children of ``N``
  (children carrying text), ``w_j = f(n_j) / sum_k f(n_k)``; 0 when ``m < 2``.

Phase 2 (3.2): the information coverage tree aggregates ``ALEN_A``, ``CLEN_A``,
``API_A``, ``TLEN_A = CLEN_A + ALEN_A`` bottom-up; ``MIB(k, f_A, ST)`` (Fig. 8) pops the
node of largest ``f_A`` and takes it when ``SII(N, f_A) > ST`` or ``N`` is a leaf, if it
meets the type constraint (article: ``CII >= 1 - TC_article``; TOC:
``API_A / #anchors >= TC_TOC``), else pushes its children. Article blocks are mined with
``f_A = CLEN_A``, TOC blocks with ``f_A = API_A``.

Phase 3 (3.3): DSTM merges the skeleton node's siblings that meet the type constraint and
have a smaller ``f_A``; 1-CSTM applies DSTM to the first nonsingleton ancestor; condensing
drops, inside the merged subtrees, the subtrees whose root fails the type constraint.
Condensing only drops block-level elements (layout containers, 3.3: "these dummy
subtrees are mainly tags for the page layout"): dropping an inline link out of a
sentence would cut the article's own words.

API needs the linked pages in the model. Where it cannot be computed (section 4.4, Fig.
21: most meaningful anchors get API 0, e.g. the site sample holds few linked pages),
TOC blocks are mined with ``f_A = ALEN_A`` and ``SII(ALEN_A)`` instead, and the TOC type
constraint becomes the anchor text's own information: the mean ``W`` of the anchor terms
in ``T(N)`` must reach ``1 - TC_article`` (a menu repeated on every page has ``W`` near 0).
``toc_feature`` = ``"auto"`` (the paper's zero-API ratio decides per page), ``"api"`` or
``"alen"``.

Defaults are the paper's: ``k = 1``, ``ST = 0.8``, ``TC = (0.8 article, 1.25 TOC)``, DSTM
and 1-CSTM.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Callable, Optional
from urllib.parse import urldefrag, urljoin

import numpy as np
from lxml import etree

from sst_cleaner.engine._dom import BLOCK_TAGS, PreparedPage
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult
from sst_cleaner.engine._segment import text_blocks
from sst_cleaner.engine._text import BoundedMemo, count_features, features
from sst_cleaner.engine.methods.infodiscoverer import TermEntropy, page_fallback

#: characters of text taken on each side of an anchor for API ("bounded surrounding text")
API_CONTEXT = 50
#: EN below this counts as this in 1/EN: a term seen in one model page only (EN = 0) and
#: in an anchor of a page outside the model would otherwise weigh infinitely
EN_FLOOR = 0.05
#: an anchor is "meaningful" for the API/ALEN choice when its text has this many chars
MEANINGFUL_ALEN = 10
#: share of meaningful anchors with API 0 above which ALEN replaces API (auto mode)
ZERO_API_RATIO = 0.5

ELEMENT, TEXT = 0, 1


def normalize_url(url: str) -> str:
    """The key of a page in the model: absolute URL without its fragment."""
    return urldefrag(url.strip())[0]


#: the terms of a short text node, kept: a page repeats its short texts (link labels,
#: table cells, glyphs) and a text node's terms cost more than the rest of its step
_SHORT_TEXT = 64
_short_text_terms = BoundedMemo(lambda text: tuple(features(text)), max_size=20_000)


def _text_terms(text: str) -> tuple[str, ...] | list[str]:
    return _short_text_terms[text] if len(text) <= _SHORT_TEXT else features(text)


class InformationTree:
    _toc_kept: set  # set by WisdomMethod for link_blocks
    """Phase 1 and the ICT of one page, as flat arrays in pre-order (parents first).

    Text nodes are nodes: ``el[i]`` is the element holding the text (``text_of[i]``).
    """

    def __init__(self, page: PreparedPage, entropy: TermEntropy, page_terms: dict[str, set]):
        self.page = page
        self.href: dict[int, str] = {}
        self._urls: dict[str, Optional[str]] = {}  # href -> page key (see _url_of)
        own, depth = self._node_information(entropy, page_terms)
        self._coverage_tree(own, depth)

    # -- phase 1 (3.1): node information ---------------------------------------------
    def _node_information(self, entropy: TermEntropy, page_terms: dict[str, set]) -> tuple[list[list], list[int]]:
        """Build the tree (elements and text nodes, pre-order) with each node's own
        CLEN, ALEN, API, anchor count and term-weight sums; returns those columns
        (clen, alen, api, nanchor, wsum, nterm, awsum, anterm) and the nodes' depths."""
        # kept whole with its closures: it runs per node of every page, where method
        # calls and attribute look-ups instead of closure cells cost measurable time
        page = self.page
        self.parent: list[int] = []
        self.kind: list[int] = []
        self.el: list = []
        self.block_el: list = []  # the text block element a text node belongs to
        self.children: list[list[int]] = []
        clen: list[float] = []
        alen: list[float] = []
        api: list[float] = []
        nanchor: list[int] = []
        wsum: list[float] = []
        nterm: list[int] = []
        awsum: list[float] = []
        anterm: list[int] = []
        base = page.url or ""

        def add(kind: int, el: etree._Element, par: int, block: etree._Element) -> int:
            i = len(self.parent)
            self.parent.append(par)
            self.kind.append(kind)
            self.el.append(el)
            self.block_el.append(block)
            self.children.append([])
            depth.append(depth[par] + 1 if par >= 0 else 0)
            if par >= 0:
                self.children[par].append(i)
            # one append each, written out: this runs for every node of every page
            clen.append(0.0)
            alen.append(0.0)
            api.append(0.0)
            wsum.append(0.0)
            awsum.append(0.0)
            nanchor.append(0)
            nterm.append(0)
            anterm.append(0)
            return i

        anchor_terms: list[list[int]] = []  # open anchors' term ids (innermost last)
        anchor_node: list[int] = []
        index_get = entropy.index.get
        en_arr = entropy._en
        depth: list[int] = []

        def add_text(text: Optional[str], par: int, block: etree._Element) -> None:
            if not text:
                return
            t = " ".join(text.split())
            if not t:
                return
            i = add(TEXT, self.el[par], par, block)
            terms = _text_terms(t)
            if terms:
                # W(t) = 1 - EN(t); a term in no model page has EN 0
                ws = 0.0
                for term in terms:
                    j = index_get(term)
                    ws += 1.0 if j is None else 1.0 - float(en_arr[j])
                wsum[i] = ws
                nterm[i] = len(terms)
            if anchor_node:
                alen[i] = len(t)
                awsum[i] = wsum[i]
                anterm[i] = nterm[i]
                anchor_terms[-1].extend(terms)  # type: ignore[arg-type]
            else:
                clen[i] = len(t)

        stack: list[int] = []
        block_stack: list = []
        root = page.root
        for event, el in etree.iterwalk(root, events=("start", "end")):
            tag = el.tag
            if not isinstance(tag, str):
                continue
            if event == "start":
                if tag in BLOCK_TAGS or el is root:
                    block_stack.append(el)
                i = add(ELEMENT, el, stack[-1] if stack else -1, block_stack[-1])
                stack.append(i)
                if tag == "a" and el.get("href"):
                    nanchor[i] = 1
                    anchor_node.append(i)
                    anchor_terms.append([])
                add_text(el.text, i, block_stack[-1])
            else:
                i = stack.pop()
                if anchor_node and anchor_node[-1] == i:
                    anchor_node.pop()
                    terms = anchor_terms.pop()
                    api[i] = self._anchor_api(i, el, terms, base, entropy, page_terms)
                    if anchor_terms:  # nested anchors: the outer one sees the inner text too
                        anchor_terms[-1].extend(terms)
                if tag in BLOCK_TAGS or el is root:
                    block_stack.pop()
                if el is not root and stack:
                    add_text(el.tail, stack[-1], block_stack[-1])
        return [clen, alen, api, nanchor, wsum, nterm, awsum, anterm], depth

    def _anchor_api(
        self, i: int, el: etree._Element, terms: list[int], base: str, entropy: TermEntropy, page_terms: dict[str, set]
    ) -> float:
        """API of anchor node ``i`` (0 unless it links a page of the model), its URL kept
        in ``self.href``: ``sum 1/EN(t)`` over the terms of its text and a bounded
        surrounding text that the linked page shares."""
        url = self._url_of(el.get("href", "").strip(), base)
        if not url:
            return 0.0
        self.href[i] = url
        linked = page_terms.get(url)
        if linked is None:
            return 0.0
        # bounded surrounding text: before the anchor and after it
        prev = el.getprevious()
        before = (prev.tail if prev is not None else el.getparent().text) or ""
        after = el.tail or ""
        ctx = features(before[-API_CONTEXT:]) + features(after[:API_CONTEXT])
        ids = [t for t in set(entropy.ids(terms + ctx)) if t >= 0 and t in linked]  # type: ignore[arg-type]
        if not ids:
            return 0.0
        en = np.maximum(entropy.entropy_of_ids(ids), EN_FLOOR)
        return float((1.0 / en).sum())

    def _url_of(self, href: str, base: str) -> Optional[str]:
        """The page key ``href`` links to, or None; kept per href, as a page links the
        same pages again and again (its navigation, its index)."""
        if href in self._urls:
            return self._urls[href]
        url = None
        if href and not href.lower().startswith(("javascript:", "mailto:", "tel:", "#")):
            try:
                url = normalize_url(urljoin(base, href))
            except ValueError:
                url = None
        self._urls[href] = url
        return url

    # -- phase 2 (3.2): the information coverage tree ----------------------------------
    def _coverage_tree(self, own: list[list], depth: list[int]) -> None:
        """Aggregate the own columns bottom-up into ``CLEN_A``, ``ALEN_A``, ``API_A``,
        ``TLEN_A`` and the sums behind CII; list each node's non-dummy children."""
        self.n = n = len(self.parent)
        self.api = np.asarray(own[2])
        self.alen = np.asarray(own[1])
        names = ("clen", "alen", "api", "nanchor", "wsum", "nterm", "awsum", "anterm")
        mat = np.asarray(own, dtype=np.float64).T.reshape(n, len(names))
        if n > 1:
            # one level at a time from the deepest (children have larger ids): each
            # level adds into its parents
            dep = np.asarray(depth)
            par = np.asarray(self.parent)
            order = np.argsort(-dep, kind="stable")
            dsorted = dep[order]
            cuts = np.flatnonzero(np.diff(dsorted)) + 1
            for idx in np.split(order, cuts):
                if dep[idx[0]] == 0:
                    continue
                np.add.at(mat, par[idx], mat[idx])
        agg = {name: mat[:, j].copy() for j, name in enumerate(names)}
        self.CLEN_A = agg["clen"]
        self.ALEN_A = agg["alen"]
        self.API_A = agg["api"]
        self.TLEN_A = self.CLEN_A + self.ALEN_A
        self.NANCHOR_A = agg["nanchor"]
        self.WSUM_A, self.NTERM_A = agg["wsum"], agg["nterm"]
        self.AWSUM_A, self.ANTERM_A = agg["awsum"], agg["anterm"]
        # non-dummy children: those carrying text
        tlen = self.TLEN_A
        self.kids = [[c for c in ch if tlen[c] > 0] for ch in self.children]

    # -- indices --------------------------------------------------------------------
    def cii(self, i: int) -> float:
        """CII(N): mean term weight W over the node's innerText (-1 without terms)."""
        k = self.NTERM_A[i]
        return float(self.WSUM_A[i] / k) if k else -1.0

    def anchor_cii(self, i: int) -> float:
        k = self.ANTERM_A[i]
        return float(self.AWSUM_A[i] / k) if k else -1.0

    def sii(self, i: int, f: np.ndarray) -> float:
        """SII(N, f) over the non-dummy children of N."""
        kids = self.kids[i]
        m = len(kids)
        if m < 2:
            return 0.0
        vals = f[kids]
        total = float(vals.sum())
        if total <= 0:
            return 0.0
        w = vals[vals > 0] / total
        return float(-(w * np.log(w)).sum() / math.log(m))

    def zero_api_ratio(self) -> float:
        """Share of meaningful anchors (anchor text >= MEANINGFUL_ALEN chars) with API 0."""
        anchors = [
            i for i in range(self.n) if self.kind[i] == ELEMENT and i in self.href and self.ALEN_A[i] >= MEANINGFUL_ALEN
        ]
        if not anchors:
            return 1.0
        return sum(1 for i in anchors if self.api[i] <= 0) / len(anchors)


def mib(tree: InformationTree, k: int, f_a: np.ndarray, st: float, tc: Callable[[int], bool]) -> list[int]:
    """MIB(k, f_A, ST) (Fig. 8): top-down greedy search of at most k informative blocks."""
    found: list[int] = []
    if tree.n == 0 or f_a[0] <= 0:
        return found
    heap: list[tuple[float, int]] = [(-float(f_a[0]), 0)]  # "Cheap": max-heap on f_A
    while len(found) < k and heap:
        _neg, node = heapq.heappop(heap)
        kids = [c for c in tree.kids[node] if f_a[c] > 0]
        if not kids or tree.sii(node, f_a) > st:
            if tc(node):
                found.append(node)
        else:
            for c in kids:
                heapq.heappush(heap, (-float(f_a[c]), c))
    return found


def dstm(tree: InformationTree, s: int, f_a: np.ndarray, tc: Callable[[int], bool]) -> list[int]:
    """Direct sibling tree merging: siblings of ``s`` meeting the type constraint with a
    smaller f_A (larger ones were already judged by MIB)."""
    p = tree.parent[s]
    if p < 0:
        return []
    return [c for c in tree.kids[p] if c != s and 0 < f_a[c] < f_a[s] and tc(c)]


def first_nonsingleton_ancestor(tree: InformationTree, s: int, f_a: np.ndarray) -> int:
    """P_1: the first ancestor of ``s`` that has a non-dummy sibling (-1 if none)."""
    a = tree.parent[s]
    while a > 0:
        p = tree.parent[a]
        if p >= 0 and sum(1 for c in tree.kids[p] if f_a[c] > 0) > 1:
            return a
        a = p
    return -1


def condense(tree: InformationTree, roots: list[int], tc: Callable[[int], bool]) -> tuple[set, set]:
    """Expanded subtrees minus the block-level subtrees failing the type constraint.

    Returns (kept nodes, dropped subtree roots)."""
    kept: set = set()
    dropped: set = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i in kept:
            continue
        if i not in roots and tree.kind[i] == ELEMENT and tree.el[i].tag in BLOCK_TAGS and not tc(i):
            dropped.add(i)
            continue
        kept.add(i)
        stack.extend(tree.children[i])
    return kept, dropped


def expand(
    tree: InformationTree, skeleton: list[int], f_a: np.ndarray, tc: Callable[[int], bool], cstm: int = 1
) -> list[int]:
    """DSTM then k-CSTM (k = ``cstm``) around every skeleton node; returns subtree roots."""
    out: list[int] = []
    seen: set = set()
    for s in skeleton:
        group = [s] + dstm(tree, s, f_a, tc)
        anc = s
        for _ in range(cstm):
            anc = first_nonsingleton_ancestor(tree, anc, f_a)
            if anc < 0:
                break
            group += dstm(tree, anc, f_a, tc)
        for g in group:
            if g not in seen:
                seen.add(g)
                out.append(g)
    # a root inside another root's subtree is covered already
    roots = set(out)
    final = []
    for g in out:
        a = tree.parent[g]
        covered = False
        while a >= 0:
            if a in roots:
                covered = True
                break
            a = tree.parent[a]
        if not covered:
            final.append(g)
    return sorted(final)


@register_method("wisdom")
class WisdomMethod:
    """WISDOM as a ``SiteCleaner`` method.

    Parameters: ``k`` (blocks per type, 1), ``st`` (SII threshold ST, 0.8), ``tc_article``
    (0.8), ``tc_toc`` (1.25), ``cstm`` (k of k-CSTM, 1; 0 = DSTM only), ``toc_feature``
    ("auto", "api", "alen"), ``keep_page_terms`` (keep each page's term set for API;
    turn off to save memory when no link blocks are needed).

    Output: article blocks feed ``text``; TOC blocks are ``link_blocks``
    (``{"xpath": ..., "links": [absolute urls]}``). ``Block.score`` is the CII of the
    text block's element subtree.
    """

    def __init__(
        self,
        k: int = 1,
        st: float = 0.8,
        tc_article: float = 0.8,
        tc_toc: float = 1.25,
        cstm: int = 1,
        toc_feature: str = "auto",
        keep_page_terms: bool = True,
    ):
        if toc_feature not in ("auto", "api", "alen"):
            raise ValueError(f"toc_feature must be 'auto', 'api' or 'alen', not {toc_feature!r}")
        if int(k) < 1:
            raise ValueError("k must be at least 1")
        self.k = int(k)
        self.st = float(st)
        self.tc_article = float(tc_article)
        self.tc_toc = float(tc_toc)
        self.cstm = int(cstm)
        self.toc_feature = toc_feature
        self.keep_page_terms = bool(keep_page_terms)
        self.entropy = TermEntropy()
        self.page_terms: dict[str, set] = {}

    @property
    def n_pages(self) -> int:
        return self.entropy.n

    # -- learning -------------------------------------------------------------------
    def fit(self, pages: list[PreparedPage]) -> None:
        for page in pages:
            self.partial_fit(page)

    def partial_fit(self, page: PreparedPage) -> None:
        """Add one page: its term frequencies update EN incrementally (no old page is read
        again); its term set is kept under its URL for the API of links to it."""
        counts = count_features(f for b in text_blocks(page.root) for f in features(b.text))
        for f in features(page.title):
            counts[f] = counts.get(f, 0) + 1
        self.entropy.add_page(counts)
        if self.keep_page_terms and page.url:
            self.page_terms[normalize_url(page.url)] = set(self.entropy.ids(counts))

    # -- cleaning -------------------------------------------------------------------
    def analyse(self, page: PreparedPage) -> tuple[InformationTree, set, list[int], str]:
        """Mine the page's IS: (tree, article nodes kept, TOC block roots, TOC feature)."""
        tree = InformationTree(page, self.entropy, self.page_terms)
        min_cii = 1.0 - self.tc_article

        def tc_article(i: int) -> bool:
            return tree.cii(i) >= min_cii

        f_art = tree.CLEN_A
        skeleton = mib(tree, self.k, f_art, self.st, tc_article)
        roots = expand(tree, skeleton, f_art, tc_article, self.cstm)
        article_nodes, _dropped = condense(tree, roots, tc_article)

        feature = self.toc_feature
        if feature == "auto":
            feature = "alen" if tree.zero_api_ratio() > ZERO_API_RATIO else "api"
        if feature == "api":
            f_toc = tree.API_A

            def tc_toc(i: int) -> bool:
                a = tree.NANCHOR_A[i]
                return a > 0 and tree.API_A[i] / a >= self.tc_toc
        else:
            f_toc = tree.ALEN_A

            def tc_toc(i: int) -> bool:
                return tree.NANCHOR_A[i] > 0 and tree.anchor_cii(i) >= min_cii

        toc_skeleton = mib(tree, self.k, f_toc, self.st, tc_toc)
        toc_roots = expand(tree, toc_skeleton, f_toc, tc_toc, self.cstm)
        toc_kept, _ = condense(tree, toc_roots, tc_toc)
        toc_blocks = [r for r in toc_roots if r in toc_kept]
        tree._toc_kept = toc_kept  # for link_blocks
        return tree, article_nodes, toc_blocks, feature

    def link_blocks(self, tree: InformationTree, toc_blocks: list[int]) -> list[dict]:
        out = []
        kept: set = getattr(tree, "_toc_kept", set())
        for r in toc_blocks:
            links: list[str] = []
            seen: set = set()
            stack = [r]
            order = []
            while stack:
                i = stack.pop()
                if i not in kept:
                    continue
                order.append(i)
                stack.extend(reversed(tree.children[i]))
            for i in order:
                url = tree.href.get(i)
                if url and url not in seen:
                    seen.add(url)
                    links.append(url)
            el = tree.el[r]
            out.append({"xpath": tree.page.xpath_of(el), "links": links})
        return out

    def clean(self, page: PreparedPage) -> CleanResult:
        if self.entropy.n < 2:
            return page_fallback(page)
        tree, article_nodes, toc_blocks, _feature = self.analyse(page)
        check_budget()
        # text block label: informative when most of its characters are article text
        in_chars: dict[int, int] = {}
        all_chars: dict[int, int] = {}
        for i in range(tree.n):
            if tree.kind[i] != TEXT:
                continue
            key = id(tree.block_el[i])
            ln = int(tree.TLEN_A[i])
            all_chars[key] = all_chars.get(key, 0) + ln
            if i in article_nodes:
                in_chars[key] = in_chars.get(key, 0) + ln
        node_of = {id(tree.el[i]): i for i in range(tree.n) if tree.kind[i] == ELEMENT}
        check_budget()
        blocks: list[Block] = []
        for bi, tb in enumerate(text_blocks(page.root)):
            if not bi & 63:  # a clock read costs a microsecond: every few dozen blocks
                check_budget()
            key = id(tb.element)
            tot = all_chars.get(key, 0)
            share = in_chars.get(key, 0) / tot if tot else 0.0
            ni = node_of.get(key)
            score = tree.cii(ni) if ni is not None else 0.0
            blocks.append(
                Block(page.xpath_of(tb.element), tb.text, INFORMATIVE if share >= 0.5 else NOISE, max(score, 0.0))
            )
        return CleanResult.from_blocks(blocks, "wisdom", page.title, self.link_blocks(tree, toc_blocks))

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"entropy": self.entropy.to_dict(), "page_terms": {u: sorted(ids) for u, ids in self.page_terms.items()}}

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "WisdomMethod":
        obj = cls(**params)
        if not isinstance(state, dict):
            raise ValueError("bad wisdom state")
        obj.entropy = TermEntropy.from_dict(state.get("entropy") or {})
        v = len(obj.entropy)
        pt = state.get("page_terms", {})
        if not isinstance(pt, dict):
            raise ValueError("bad wisdom page_terms")
        for url, ids in pt.items():
            if not (
                isinstance(url, str) and isinstance(ids, list) and all(isinstance(i, int) and 0 <= i < v for i in ids)
            ):
                raise ValueError("bad wisdom page_terms entry")
            obj.page_terms[url] = set(ids)
        return obj
