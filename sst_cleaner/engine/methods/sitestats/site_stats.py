"""Site statistics over style nodes: the evidence the default method learns from a site.

Every text block of a page hangs under a *style path*: the sequence of (TAG, Attr) pairs
from BODY down to the block's element, with positions left out. Two blocks of two pages
with the same style path are the same node of the Site Style Tree when the trees align,
which is what a tolerant match achieves without aligning: a varying ad slot or an optional
share box changes a sibling, not the path of the article body. So the style path is our
SST node identity (``node key``).

For each node the model keeps, incrementally (one page at a time, no page kept):

* ``node_df``: how many pages have the node (the SST's page count of a style node);
* ``node_S`` and ``node_Q``: for each feature (stemmed keyword) the sums S = sum_j tf_ij
  and Q = sum_j tf_ij ln tf_ij over the pages j of the node's collection, so that the
  informative-sentences entropy H(F_i) = -sum_j w_ij log_n w_ij with w_ij = tf_ij / S is
  H = (ln S - Q / S) / ln n, an O(1) look-up (and O(1) to take one page back out). They
  are two plain dicts of numbers rather than one of (S, Q) pairs: S is a count, counted
  in C; Q only moves for a feature seen twice or more on a page (tf ln tf = 0 for tf =
  1), so most features never enter it; and dicts of numbers are not tracked by the
  cyclic garbage collector, where a model's hundred thousand pairs were;
* ``sent_df`` and ``node_sent``: in how many pages each (normalised) sentence occurs,
  site-wide and per node: the exact-recurrence evidence of template text.

``page_fps`` holds a fingerprint of each fitted page so that cleaning a page that is
itself in the sample removes its own contribution: a page is judged only by the *other*
pages of its site, in the transductive setting as in leave-one-out.
"""

# A page's blocks and sentences, as the model counts them, are made in _analysis.

from __future__ import annotations

import math
from itertools import chain
from typing import Hashable, Iterable

from sst_cleaner.engine._dom import PreparedPage

# the page analysis this model learns from, re-exported: it is this module's input
from sst_cleaner.engine.methods.sitestats._analysis import (  # noqa: F401
    BlockInfo,
    BlockText,
    PageAnalysis,
    SentenceInfo,
    analyse_page,
    block_text,
    sentence_hash,
)

try:  # the C loop behind Counter.update, on plain dicts (which the collector need not track)
    from _collections import _count_elements  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Python implementations

    def _count_elements(mapping: dict, iterable: Iterable[Hashable]) -> None:
        get = mapping.get
        for x in iterable:
            mapping[x] = get(x, 0) + 1


class SiteStats:
    """The incremental site model (see module docstring)."""

    def __init__(self) -> None:
        self.n_pages = 0
        self.page_fps: dict[str, int] = {}
        self.sent_df: dict[str, int] = {}
        self.sent_len: dict[str, int] = {}
        self.node_df: dict[str, int] = {}
        self.node_sent: dict[str, dict[str, int]] = {}
        self.node_S: dict[str, dict[str, float]] = {}  # feature -> sum_j tf_ij
        self.node_Q: dict[str, dict[str, float]] = {}  # feature -> sum_j tf_ij ln tf_ij, if != 0
        #: entries of the per-node tables (node_sent, node_S, node_Q) together, kept as
        #: they grow: summing them per page learnt made learning quadratic in the site
        self.node_entries = 0
        self._share_cache: dict[str, float] = {}
        #: PageView._node_entropies of the pages the model has not learnt, by node: the
        #: same for every such page until the model learns again (then replaced, never
        #: emptied in place: a view made before goes on with the dict it took), and a
        #: site's pages share their template's nodes
        self._unseen_entropies: dict[str, tuple] = {}

    @property
    def entries(self) -> int:
        """Entries (dict keys) of every table together, what the site model's cap counts
        (see :mod:`~sst_cleaner.engine._learn_caps`)."""
        return len(self.sent_df) + len(self.sent_len) + len(self.page_fps) + self.node_entries

    # -- learning ---------------------------------------------------------------
    def add(self, pa: PageAnalysis) -> None:
        _check_keyed(pa)
        self.n_pages += 1
        self.page_fps[pa.fingerprint] = self.page_fps.get(pa.fingerprint, 0) + 1
        node_sents: dict[str, set[str]] = {}
        node_feats: dict[str, list[tuple]] = {}  # the node's blocks' features on this page
        sent_len = self.sent_len
        for b in pa.blocks:
            bt = b.text_info
            ns = node_sents.get(b.key)
            if ns is None:
                node_sents[b.key] = set(bt.hashes)
                node_feats[b.key] = [bt.feats]
            else:
                ns.update(bt.hashes)
                node_feats[b.key].append(bt.feats)
            sent_len.update(zip(bt.hashes, bt.lengths))
        # page counts: each key once per page, counted in C
        _count_elements(self.sent_df, set().union(*node_sents.values()))
        _count_elements(self.node_df, node_sents)
        node_sent, node_S, node_Q, log = self.node_sent, self.node_S, self.node_Q, math.log
        grown = 0  # entries the page adds to its nodes' tables
        for key, hs in node_sents.items():
            d = node_sent.get(key)
            if d is None:
                d = node_sent[key] = {}
            grown -= len(d)
            _count_elements(d, hs)
            grown += len(d)
            S = node_S.get(key)
            if S is None:
                S = node_S[key] = {}
            feats = node_feats[key]
            grown -= len(S)
            _count_elements(S, chain.from_iterable(feats))  # S += tf, in C
            grown += len(S)
            # the page's own tf, for Q: counting the occurrences a second time in C is
            # cheaper than adding tf into S with a Python loop
            tf: dict[str, int] = {}
            _count_elements(tf, chain.from_iterable(feats))
            if len(tf) < sum(map(len, feats)):  # some feature is on the page twice or more
                Q = node_Q.get(key)
                if Q is None:
                    Q = node_Q[key] = {}
                grown -= len(Q)
                for f, c in tf.items():
                    if c > 1:
                        Q[f] = Q.get(f, 0.0) + c * log(c)
                grown += len(Q)
        self.node_entries += grown
        self._share_cache.clear()
        self._unseen_entropies = {}  # a new dict: a view made before keeps the old one

    def merge(self, other: "SiteStats") -> None:
        """Add ``other``'s pages, learnt apart (another shard of the same site's pages, see
        :mod:`~sst_cleaner.engine._parallel_fit`): every field is a sum over pages, so the result
        is the model of both page sets (Q up to float rounding). ``other``'s dicts are
        taken over, not copied: do not use it afterwards."""
        self.n_pages += other.n_pages
        for mine, theirs in (
            (self.page_fps, other.page_fps),
            (self.sent_df, other.sent_df),
            (self.node_df, other.node_df),
        ):
            _add_counts(mine, theirs)
        self.sent_len.update(other.sent_len)  # the later pages' length wins, as in add()
        for mine_by_node, theirs_by_node in (
            (self.node_sent, other.node_sent),
            (self.node_S, other.node_S),
            (self.node_Q, other.node_Q),
        ):
            for key, theirs in theirs_by_node.items():  # type: ignore[assignment]
                mine = mine_by_node.get(key)  # type: ignore[assignment]
                if mine is None:
                    mine_by_node[key] = theirs
                    self.node_entries += len(theirs)
                else:
                    self.node_entries -= len(mine)
                    _add_counts(mine, theirs)
                    self.node_entries += len(mine)
        self._share_cache.clear()
        self._unseen_entropies = {}  # a new dict: a view made before keeps the old one

    # -- evidence for one page ------------------------------------------------------
    def page_view(self, pa: PageAnalysis) -> "PageView":
        _check_keyed(pa)
        own = 1 if self.page_fps.get(pa.fingerprint, 0) > 0 else 0
        return PageView(self, pa, own)

    def node_template_share(self, key: str, min_df: int) -> float:
        """Share of the node's text (over all fitted pages) that recurs on >= min_df pages."""
        ck = f"{key}:{min_df}"
        v = self._share_cache.get(ck)
        if v is not None:
            return v
        d = self.node_sent.get(key)
        if not d:
            v = 0.0
        else:
            tot = rec = 0
            for h, c in d.items():
                w = c * self.sent_len.get(h, 1)
                tot += w
                if self.sent_df.get(h, 0) >= min_df:
                    rec += w
            v = rec / tot if tot else 0.0
        self._share_cache[ck] = v
        return v

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "n_pages": self.n_pages,
            "page_fps": self.page_fps,
            "sent_df": self.sent_df,
            "sent_len": self.sent_len,
            "node_df": self.node_df,
            "node_sent": self.node_sent,
            "node_feat": {
                k: {f: [round(float(c), 6), round(self.node_Q.get(k, {}).get(f, 0.0), 6)] for f, c in d.items()}
                for k, d in self.node_S.items()
            },
        }

    @classmethod
    def from_dict(cls, state: dict) -> "SiteStats":
        obj = cls()
        obj.n_pages = int(state["n_pages"])
        obj.page_fps = {str(k): int(v) for k, v in state["page_fps"].items()}
        obj.sent_df = {str(k): int(v) for k, v in state["sent_df"].items()}
        obj.sent_len = {str(k): int(v) for k, v in state["sent_len"].items()}
        obj.node_df = {str(k): int(v) for k, v in state["node_df"].items()}
        obj.node_sent = {str(k): {str(h): int(c) for h, c in d.items()} for k, d in state["node_sent"].items()}
        for k, d in state["node_feat"].items():
            obj.node_S[str(k)] = {str(f): float(v[0]) for f, v in d.items()}
            q = {str(f): float(v[1]) for f, v in d.items() if float(v[1]) != 0.0}
            if q:
                obj.node_Q[str(k)] = q
        obj.node_entries = sum(len(d) for tables in (obj.node_sent, obj.node_S, obj.node_Q) for d in tables.values())
        return obj


class SiteStatsModel:
    """What every method built on :class:`SiteStats` shares: learning is adding pages."""

    stats: SiteStats
    #: the site model reached its entry cap (a page was refused): it reads no more pages
    full = False

    @property
    def n_pages(self) -> int:
        return self.stats.n_pages

    def fit(self, pages: list[PreparedPage]) -> None:
        self.stats = SiteStats()
        self.full = False
        for p in pages:
            if not self.apply_page(analyse_page(p, judged=False)):
                break  # full: the pages left are not read (SiteCleaner counts them)

    def partial_fit(self, page: PreparedPage) -> None:
        self.apply_page(self.prepare_page(page))

    # partial_fit in two steps, so that SiteCleaner can bound it: the analysis touches no
    # model state and may be interrupted; the update is small by construction (learn_caps)
    def prepare_page(self, page: PreparedPage) -> PageAnalysis:
        return analyse_page(page, judged=False)

    def apply_page(self, pa: PageAnalysis) -> bool:
        """Learn an analysed page, within the per-page caps; False (nothing learnt) when
        the site model is full."""
        from sst_cleaner.engine import _learn_caps as learn_caps

        pa, adds = learn_caps.for_learning(pa)
        if learn_caps.stats_entries(self.stats) + adds > learn_caps.MAX_SITE_ENTRIES:
            self.full = True
            return False
        self.stats.add(pa)
        return True

    def shard_state(self) -> SiteStats:
        """What a process that learnt some of the site's pages sends back to be merged."""
        return self.stats

    def merge_shard(self, stats: SiteStats) -> None:
        """Add another shard's pages (see :mod:`~sst_cleaner.engine._parallel_fit`)."""
        self.stats.merge(stats)


def _check_keyed(pa: PageAnalysis) -> None:
    if not pa.keyed:
        raise ValueError("the page was analysed for judging alone (analyse_page(site=False)), without node keys")


def _add_counts(mine: dict, theirs: dict) -> None:
    get = mine.get
    for k, v in theirs.items():
        mine[k] = get(k, 0) + v


def _entropy(S: float, Q: float, own_tf: int, ln_n: float) -> float:
    """H = (ln S - Q / S) / ln n from a feature's sums (S, Q) over the node's pages, with
    the page's own ``own_tf`` occurrences taken out; clipped to [0, 1]."""
    if own_tf:
        S -= own_tf
        Q -= own_tf * _log(own_tf)
    if S <= 0:
        return 0.0
    h = (_log(S) - Q / S) / ln_n
    # min(1, max(0, h)) without the two builtin calls (run per feature of every node)
    return 1.0 if h > 1.0 else (h if h > 0.0 else 0.0)


_log = math.log


class PageView:
    """The site's evidence about one page, with the page's own contribution removed."""

    def __init__(self, stats: SiteStats, pa: PageAnalysis, own: int):
        self.stats = stats
        self.pa = pa
        self.own = own
        self.n_other = stats.n_pages - own
        #: other pages a sentence must recur on to count as template: 2, so that one
        #: chance repeat is not template, or the only other page when there is just one
        self.recur_df = max(1, min(2, self.n_other))
        # the page's own per-node feature counts (to take them back out of S and Q)
        own_tf: dict[str, dict[str, int]] = {}
        if own:
            for b in pa.blocks:
                tf = own_tf.get(b.key)
                if tf is None:
                    tf = own_tf[b.key] = {}
                _count_elements(tf, b.text_info.feats)
        self._own_tf = own_tf
        self._own_sent = set(chain.from_iterable([b.text_info.hashes for b in pa.blocks])) if own else set()
        self._own_nodes = set(own_tf)  # every block's node, when own
        # node -> _node_entropies(node); without the page's own counts, the model's
        self._h_cache: dict[str, tuple] = {} if own else stats._unseen_entropies

    def sentence_df(self, h: str) -> int:
        """Other pages on which the sentence occurs."""
        return self.stats.sent_df.get(h, 0) - (1 if h in self._own_sent else 0)

    def node_df(self, key: str) -> int:
        """Other pages that have this node."""
        return self.stats.node_df.get(key, 0) - (1 if key in self._own_nodes else 0)

    def node_sentence_df(self, key: str, h: str) -> int:
        d = self.stats.node_sent.get(key)
        c = d.get(h, 0) if d else 0
        if c and self.own and h in self._own_sent and key in self._own_nodes:
            c -= 1
        return c

    def feature_entropy(self, key: str, feat: str) -> float:
        """H(F) over the node's collection of OTHER pages, log base n (0 when n <= 1)."""
        n = self.node_df(key)
        if n <= 1:
            return 0.0
        S = self.stats.node_S.get(key, {}).get(feat)
        if S is None:
            return 0.0
        t = self._own_tf.get(key, {}).get(feat, 0) if self.own else 0
        return _entropy(S, self.stats.node_Q.get(key, {}).get(feat, 0.0), t, math.log(n))

    def sentence_entropy(self, key: str, s: SentenceInfo) -> float:
        """E(S): mean feature entropy of the sentence's features (informative-sentences 4.3).

        Equal to the mean of :meth:`feature_entropy` over ``s.feats``; a node's entropies
        are computed once per page (template sentences repeat the node's features) and
        the node's look-ups are made once per page too (see :meth:`_node_entropies`).
        """
        feats = s.feats
        if not feats:
            return 0.0
        node = self._h_cache.get(key)
        if node is None:
            node = self._h_cache[key] = self._node_entropies(key)
        cache, sums, logs, own_tf, ln_n = node
        if not sums:
            return 0.0
        total = 0.0
        for f in feats:
            h = cache.get(f)
            if h is None:
                S = sums.get(f)
                h = 0.0 if S is None else _entropy(S, logs.get(f, 0.0), own_tf.get(f, 0) if own_tf else 0, ln_n)
                cache[f] = h
            total += h
        return total / len(feats)

    def _node_entropies(self, key: str) -> tuple:
        """What :meth:`sentence_entropy` reads of node ``key``: (its entropies so far by
        feature, the sums S and Q of its features, the page's own counts, ln n); no sums
        when the node is on at most one other page."""
        n = self.node_df(key)
        sums = self.stats.node_S.get(key) if n > 1 else None
        if not sums:
            return {}, None, None, None, 0.0
        own_tf = self._own_tf.get(key) if self.own else None
        return {}, sums, self.stats.node_Q.get(key, {}), own_tf, math.log(n)
