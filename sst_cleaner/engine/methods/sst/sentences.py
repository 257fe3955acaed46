"""Informative sentences over SST nodes (the SST "informative sentences" paper, 4.2-4.5).

Each SST node (here: a style path, see :mod:`sst_cleaner.engine.methods.sitestats.site_stats`) holds the
collection of its segments across the site's pages. For a feature F_i of a node whose
collection has n documents, w_ij = tf_ij / sum_j tf_ij and
H(F_i) = -sum_j w_ij log_n w_ij (0 when n <= 1); a sentence's entropy E(S) is the mean H
of its features (4.3), and E(S) > T means the sentence is redundant (4.4). A sentence is
judged by the *other* pages of the site (its own page's counts are taken out), so a page
of the sample and a page never seen are treated alike.

T is per node (4.4): :meth:`SentencesMethod.tune` picks it on the grid 0.0..1.0 (step 0.1)
that maximises the F1 of the node's sentences against gold texts. Without labels, every
node uses ``threshold`` (default 0.5: the best single value on the news and blog dev
corpora, portal and sites-dev; regular documentation sites prefer 0.9).
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from sst_cleaner.engine._dom import PreparedPage, as_page
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, Block, CleanResult
from sst_cleaner.engine._text import words
from sst_cleaner.engine.methods.sitestats.site_stats import (
    BlockInfo,
    SentenceInfo,
    SiteStats,
    SiteStatsModel,
    analyse_page,
)

GRID = tuple(round(0.1 * i, 1) for i in range(11))


def gold_share(tokens: list[str], gold_trigrams: set, gold_joined: str) -> float:
    """Share of the sentence's token trigrams found in the gold (short sentences: exact
    token-sequence match). Token-set overlap would not do: comments and navigation share
    most of their words with the article."""
    if len(tokens) >= 3:
        grams = list(zip(tokens, tokens[1:], tokens[2:]))
        return sum(1 for g in grams if g in gold_trigrams) / len(grams)
    return 1.0 if (" " + " ".join(tokens) + " ") in gold_joined else 0.0


@register_method("sentences")
class SentencesMethod(SiteStatsModel):
    """Parameters: ``threshold`` (the T of nodes without a tuned value, 0.5)."""

    def __init__(self, threshold: float = 0.5):
        self.threshold = float(threshold)
        self.stats = SiteStats()
        #: node key -> tuned T
        self.node_thresholds: dict[str, float] = {}

    def _scored(self, page: PreparedPage) -> Iterator[tuple[BlockInfo, list[tuple[SentenceInfo, float]]]]:
        pa = analyse_page(page)
        view = self.stats.page_view(pa)
        check_budget()
        for bi, b in enumerate(pa.blocks):
            if not bi & 31:  # a clock read costs a microsecond: every few dozen blocks
                check_budget()
            yield b, [(s, view.sentence_entropy(b.key, s)) for s in b.sentences]

    def clean(self, page: PreparedPage) -> CleanResult:
        blocks: list[Block] = []
        for b, scored in self._scored(page):
            t = self.node_thresholds.get(b.key, self.threshold)
            kept = [s.text for s, e in scored if e <= t]
            mean_e = sum(e for _, e in scored) / len(scored)
            blocks.append(
                Block(
                    page.xpath_of(b.block.element),
                    b.block.text,
                    INFORMATIVE if kept else NOISE,
                    1.0 - mean_e,
                    sentences=kept,
                )
            )
        # each informative block's line is its kept sentences, not its whole text
        return CleanResult.from_blocks(blocks, "sentences", page.title)

    def tune(self, labeled_pages: Iterable[tuple]) -> dict[str, float]:
        """Pick T per node from ``(page, gold_text)`` pairs (page: html, (url, html) or a
        prepared page) of this site: for each node, the grid value with the best F1 of
        its sentences (tokens of informative sentences vs tokens of sentences found in
        the gold). Nodes not seen in the labelled pages keep ``threshold``."""
        per_node: dict[str, list[tuple[float, int, bool]]] = {}
        for page, gold in labeled_pages:
            gseq = words(gold)
            tri = set(zip(gseq, gseq[1:], gseq[2:]))
            joined = " " + " ".join(gseq) + " "
            for b, scored in self._scored(as_page(page)):
                rows = per_node.setdefault(b.key, [])
                for s, e in scored:
                    toks = words(s.text)
                    rows.append((e, len(toks), gold_share(toks, tri, joined) >= 0.5))
        for key, rows in per_node.items():
            best_t, best_f = self.threshold, -1.0
            for t in GRID:
                tp = sum(n for e, n, good in rows if good and e <= t)
                fp = sum(n for e, n, good in rows if not good and e <= t)
                fn = sum(n for e, n, good in rows if good and e > t)
                if tp == 0:
                    f = 1.0 if (fp == 0 and fn == 0) else 0.0
                else:
                    f = 2 * tp / (2 * tp + fp + fn)
                if f > best_f + 1e-12:
                    best_t, best_f = t, f
            self.node_thresholds[key] = best_t
        return dict(self.node_thresholds)

    def to_dict(self) -> dict:
        return {"site_stats": self.stats.to_dict(), "node_thresholds": self.node_thresholds}

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "SentencesMethod":
        obj = cls(**params)
        obj.stats = SiteStats.from_dict(state["site_stats"])
        thr = state.get("node_thresholds", {})
        if not isinstance(thr, dict):
            raise ValueError("node_thresholds must be an object")
        obj.node_thresholds = {str(k): float(v) for k, v in thr.items() if 0.0 <= float(v) <= 1.0}
        return obj
