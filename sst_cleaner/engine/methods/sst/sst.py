"""The Site Style Tree method (Yi, Liu & Li, KDD 2003) as ``SiteCleaner(method="sst")``.

Fig. 8 of the paper: build the SST from the site's pages (:mod:`.page_style_tree`,
:mod:`.site_style_tree`), compute composite importance and mark the maximal noisy /
meaningful element nodes (:mod:`.importance`), then clean a page by mapping it onto the
SST (:mod:`.mapping`).

Output unit: the page's text blocks (:func:`sst_cleaner.engine._segment.text_blocks`); a block
is informative when its element is kept by the mapping, its score is the CompImp of the
SST element node it was mapped to (1 for a style never seen). With ``local_noise`` (3.6,
third point) the sentences of a kept block whose every feature is locally noisy in its
SST leaf (on every page of that leaf and spread evenly: "Share this", "Posted by") are
dropped, and a block left with none is noise.

The SST grows page by page (``partial_fit``); importance is brought up to date
incrementally (only over the paths the new page touched, see
:func:`sst_cleaner.engine.methods.sst.importance.refresh`) at the end of ``fit``/``partial_fit``, so that
``clean`` never modifies the model (a model loaded from JSON is scored on its first use).

Before any page is learnt, or with a single page (every node would have ``m = 1`` and
CompImp 1), the page-level CETD method cleans the page (``result.method == "cetd"``).

Parameters: ``t`` noise threshold (0.4), ``gamma`` attenuating factor (0.9), ``match``
``"exact"`` (the paper) or ``"tolerant"`` (LCS alignment of child sequences, see
:mod:`.site_style_tree`), ``tolerance`` (0.6), ``merge`` (3.6 merge of sibling element
nodes, True), ``merge_freq``/``merge_sim`` (0.85/0.85), ``local_noise`` (True),
``epsilon`` (0.01), ``max_features`` (features stored per leaf element node, 400),
``principal_class`` (False: keys with the first class name only, see
:func:`sst_cleaner.engine.methods.sst.page_style_tree.element_key`).

Model state (``to_dict``): ``{"n_pages": N, "tree": <style_tree_json.tree_to_dict>}``.
"""

from __future__ import annotations

from typing import Any, Optional

from sst_cleaner.engine._dom import PreparedPage
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult
from sst_cleaner.engine._segment import text_blocks
from sst_cleaner.engine._text import features, split_sentences
from sst_cleaner.engine.methods.cetd import extract_content, label_blocks
from sst_cleaner.engine.methods.sst.importance import (
    EPSILON,
    GAMMA,
    MERGE_FREQ,
    MERGE_SIM,
    T_DEFAULT,
    locally_noisy_features,
    refresh,
)
from sst_cleaner.engine.methods.sst.mapping import map_page, resolve_labels
from sst_cleaner.engine.methods.sst.page_style_tree import PageNode, build_page_tree
from sst_cleaner.engine.methods.sst.site_style_tree import ElementNode, SiteStyleTree
from sst_cleaner.engine.methods.sst.style_tree_json import TreeFormatError, tree_from_dict, tree_to_dict


def _page_level(page: PreparedPage) -> CleanResult:
    """The fallback without a usable site model: CETD's page-level labels."""
    return CleanResult.from_blocks(label_blocks(page, extract_content(page.root)), "cetd", page.title)


@register_method("sst")
class SSTMethod:
    """``SiteCleaner`` method "sst" (see the module docstring for the parameters)."""

    def __init__(
        self,
        t: float = T_DEFAULT,
        gamma: float = GAMMA,
        match: str = "exact",
        tolerance: float = 0.6,
        merge: bool = True,
        merge_freq: float = MERGE_FREQ,
        merge_sim: float = MERGE_SIM,
        local_noise: bool = True,
        epsilon: float = EPSILON,
        max_features: int = 400,
        principal_class: bool = False,
    ):
        if match not in ("exact", "tolerant"):
            raise ValueError(f"match must be 'exact' or 'tolerant', not {match!r}")
        self.t = float(t)
        self.gamma = float(gamma)
        self.match = match
        self.tolerance = float(tolerance)
        self.merge = bool(merge)
        self.merge_freq = float(merge_freq)
        self.merge_sim = float(merge_sim)
        self.local_noise = bool(local_noise)
        self.epsilon = float(epsilon)
        self.max_features = int(max_features)
        self.principal_class = bool(principal_class)
        self.sst = self._new_tree()
        self._noisy_feats: dict[int, frozenset] = {}

    def _new_tree(self) -> SiteStyleTree:
        return SiteStyleTree(self.match, self.tolerance, self.max_features, self.principal_class)

    def _page_tree(self, page: PreparedPage, content: bool = True) -> PageNode:
        return build_page_tree(page.root, content=content, principal=self.sst.principal)

    @property
    def n_pages(self) -> int:
        return self.sst.n_pages

    # -- learning -----------------------------------------------------------------------
    def fit(self, pages: list[PreparedPage]) -> None:
        self.sst = self._new_tree()
        for page in pages:
            self.sst.add_page(self._page_tree(page))
        self.scored_tree()

    def partial_fit(self, page: PreparedPage) -> None:
        # the refresh only rescores the paths this page went through; doing it here
        # rather than in the next clean keeps clean read-only (SiteCleaner may interrupt
        # a clean that overruns its time budget: a half-done 3.6 merge would corrupt
        # the model, an interrupted partial_fit never happens)
        self.sst.add_page(self._page_tree(page))
        self.scored_tree()

    def scored_tree(self) -> SiteStyleTree:
        """The SST with importance and noise flags up to date."""
        if self.sst.computed_version != self.sst.version:
            self._noisy_feats = {}
        refresh(self.sst, self.t, self.gamma, self.merge, self.merge_freq, self.merge_sim)
        return self.sst

    # -- cleaning -----------------------------------------------------------------------
    def element_labels(self, page: PreparedPage) -> Optional[dict]:
        """``{element: (label, CompImp, SST element node or None)}`` for every element of
        the page, or None when the model has fewer than two pages (no site evidence)."""
        if self.sst.n_pages < 2:
            return None
        sst = self.scored_tree()
        info, _ = resolve_labels(map_page(sst, self._page_tree(page, False), False), page.root)
        return info

    def clean(self, page: PreparedPage) -> CleanResult:
        if self.sst.n_pages < 2:
            return _page_level(page)
        sst = self.scored_tree()
        # checks only after scored_tree: the model is never left half-scored
        check_budget()
        mapping = map_page(sst, self._page_tree(page, False), descend_meaningful=self.local_noise)
        check_budget()
        info, leaf_of = resolve_labels(mapping, page.root)
        check_budget()
        blocks: list[Block] = []
        xpath_of = page.xpath_of
        for bi, tb in enumerate(text_blocks(page.root)):
            if not bi & 63:  # a clock read costs a microsecond: every few dozen blocks
                check_budget()
            el = tb.element
            label, comp, _node = info.get(el, (INFORMATIVE, 1.0, None))
            text = tb.text
            sentences = None
            if label == INFORMATIVE and self.local_noise:
                leaf = leaf_of.get(el)
                if leaf is not None and leaf.leaf_n >= 2:
                    text, sentences = self._drop_local_noise(leaf, text)
                    if not text:
                        label, text = NOISE, tb.text
            # a block whose locally noisy sentences were dropped carries the kept ones
            # (its text is them joined), which from_blocks takes as they are
            blocks.append(Block(xpath_of(el), text, label, float(comp), sentences))
        return CleanResult.from_blocks(blocks, "sst", page.title)

    def _drop_local_noise(self, leaf: ElementNode, text: str) -> tuple[str, Optional[list]]:
        noisy = self._noisy_feats.get(id(leaf))
        if noisy is None:
            noisy = self._noisy_feats[id(leaf)] = locally_noisy_features(leaf, self.epsilon)
        if not noisy:
            return text, None
        sents = split_sentences(text)
        kept = []
        for s in sents:
            fs = features(s)
            if fs and all(f in noisy for f in fs):
                continue
            kept.append(s)
        if len(kept) == len(sents):
            return text, None
        return " ".join(kept), kept

    # -- persistence --------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"n_pages": self.sst.n_pages, "tree": tree_to_dict(self.sst)}

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "SSTMethod":
        from sst_cleaner.engine._model_io import ModelFormatError

        obj = cls(**params)
        if not isinstance(state, dict) or "tree" not in state:
            raise ModelFormatError("sst model state has no 'tree'")
        try:
            tree = tree_from_dict(state["tree"])
        except TreeFormatError as exc:
            raise ModelFormatError(f"bad sst model: {exc}") from exc
        if tree.match != obj.match or tree.principal != obj.principal_class:
            raise ModelFormatError(f"model was built with match={tree.match!r}, params differ")
        obj.sst = tree
        if tree.n_pages >= 2:
            obj.scored_tree()
        return obj
