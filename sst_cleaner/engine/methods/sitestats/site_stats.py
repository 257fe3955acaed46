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

A saved model (:meth:`SiteStats.to_dict`) leaves out what cleaning cannot read: the
sentences seen on one page only become a set of short hashes (``sent_once``: cleaning
reads only that they were seen, once) and a length per node (``node_once``: their share
of the node's text); the feature sums of a node seen on one page, and those of a feature
seen once (S = 1, Q = 0), go, as their entropy is 0 whether kept or not. Cleaning with
the loaded model gives what cleaning with the model before the save gives. Learning more
pages into it does not quite: a one-page sentence seen again counts twice site-wide (its
short hash is found) but once in its node, and a dropped feature sum starts again from
the new page's count.
"""

# A page's blocks and sentences, as the model counts them, are made in _analysis.

from __future__ import annotations

import base64
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
        #: of a loaded model, the sentences its saved form kept as seen on one page only:
        #: the first ONCE_HEX hex digits of their hashes, and by node their summed length
        self.sent_once: set[str] = set()
        self.node_once: dict[str, int] = {}
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
        return (
            len(self.sent_df)
            + len(self.sent_len)
            + len(self.page_fps)
            + self.node_entries
            + len(self.sent_once)
            + len(self.node_once)
        )

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
        page_sents = set().union(*node_sents.values())
        _count_elements(self.sent_df, page_sents)
        if self.sent_once:
            self._count_once(page_sents)
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

    def _count_once(self, hashes: Iterable[str]) -> None:
        """Sentences just counted once that a loaded model saw on one page before: twice."""
        once, sent_df = self.sent_once, self.sent_df
        for h in hashes:
            if sent_df[h] == 1:
                short = h[:ONCE_HEX]
                if short in once:
                    sent_df[h] = 2
                    once.discard(short)

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
        if other.sent_once or self.sent_once:
            # a sentence one side learnt once and the other kept as once-seen: twice
            self.sent_once |= other.sent_once
            self._count_once([h for h, c in self.sent_df.items() if c == 1])
        _add_counts(self.node_once, other.node_once)
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
        # the one-page sentences a loaded model keeps as a length: on one page, count 1
        once = self.node_once.get(key, 0) if self.node_once else 0
        tot = once
        rec = once if min_df <= 1 else 0
        if d:
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
        """The saved form (see the module docstring for what it leaves out): hashes in
        base64, a sentence's page count and length in one table, each node's page count,
        sentence counts, one-page length and feature sums in one row."""
        sent_df, sent_len, node_S, node_Q = self.sent_df, self.sent_len, self.node_S, self.node_Q
        once = set(self.sent_once)
        once.update(h[:ONCE_HEX] for h, c in sent_df.items() if c == 1)
        nodes = {}
        for key in chain(self.node_df, (k for k in chain(self.node_sent, node_S) if k not in self.node_df)):
            if _hex_to_b64(key) in nodes:
                continue
            df = self.node_df.get(key, 0)
            sents, one_page = {}, self.node_once.get(key, 0)
            for h, c in self.node_sent.get(key, {}).items():
                if sent_df.get(h, 0) > 1:
                    sents[_hex_to_b64(h)] = c
                else:
                    one_page += c * sent_len.get(h, 1)
            feats: dict[str, object] = {}
            if df > 1:
                q = node_Q.get(key, {})
                for f, sf in node_S.get(key, {}).items():
                    qf = round(q.get(f, 0.0), 6)
                    if sf == 1 and not qf:
                        continue
                    sv = int(sf) if sf == int(sf) else round(float(sf), 6)
                    feats[f] = [sv, qf] if qf else sv
            nodes[_hex_to_b64(key)] = [df, sents, one_page, feats]
        return {
            "n_pages": self.n_pages,
            "page_fps": {_hex_to_b64(k): c for k, c in self.page_fps.items()},
            "sents": {_hex_to_b64(h): [c, sent_len.get(h, 1)] for h, c in sent_df.items() if c > 1},
            "nodes": nodes,
            "once": _pack_once(once),
        }

    @classmethod
    def from_dict(cls, state: dict) -> "SiteStats":
        """A model saved by :meth:`to_dict`, or in the previous format (``sent_df``...)."""
        if "nodes" not in state:
            return cls._from_dict_v1(state)
        obj = cls()
        obj.n_pages = int(state["n_pages"])
        obj.page_fps = {_b64_to_hex(k): int(v) for k, v in state["page_fps"].items()}
        for k, (df, ln) in state["sents"].items():
            h = _b64_to_hex(k)
            obj.sent_df[h] = int(df)
            obj.sent_len[h] = int(ln)
        for k, (df, sents, one_page, feats) in state["nodes"].items():
            key = _b64_to_hex(k)
            if df:
                obj.node_df[key] = int(df)
            if sents:
                obj.node_sent[key] = {_b64_to_hex(h): int(c) for h, c in sents.items()}
            if one_page:
                obj.node_once[key] = int(one_page)
            if feats:
                S: dict[str, float] = {}
                Q: dict[str, float] = {}
                obj.node_S[key] = S
                for f, v in feats.items():
                    if isinstance(v, list):
                        s_f, q = v
                        S[str(f)] = float(s_f)
                        Q[str(f)] = float(q)
                    else:
                        S[str(f)] = float(v)
                if Q:
                    obj.node_Q[key] = Q
        obj.sent_once = _unpack_once(state["once"])
        obj.node_entries = sum(len(d) for tables in (obj.node_sent, obj.node_S, obj.node_Q) for d in tables.values())
        return obj

    @classmethod
    def _from_dict_v1(cls, state: dict) -> "SiteStats":
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


#: hex digits of a sentence hash kept for a sentence seen on one page (48 bits: a chance
#: match among a site's hundred thousand one-page sentences is a few in a billion lookups)
ONCE_HEX = 12
#: base64 characters of one short hash, and how many go in one string of the saved form
#: (strings of a model file are capped at 4096 characters)
ONCE_CHARS = 8
ONCE_PER_STRING = 512


def _hex_to_b64(h: str) -> str:
    """A 16-hex-digit hash (64 bits) as 11 base64url characters, and back."""
    if len(h) != 16:
        raise ValueError(f"not a 64-bit hash: {h[:40]!r}")
    return base64.urlsafe_b64encode(bytes.fromhex(h))[:11].decode("ascii")


def _b64_to_hex(k: str) -> str:
    if len(k) != 11:
        raise ValueError(f"not an 11-character hash: {k[:40]!r}")
    return base64.urlsafe_b64decode(k + "=").hex()


def _pack_once(once: set[str]) -> list[str]:
    """Short hashes (ONCE_HEX hex digits) as base64, concatenated, sorted (a model saved
    twice is the same file)."""
    items = sorted(base64.urlsafe_b64encode(bytes.fromhex(h)).decode("ascii") for h in once)
    return ["".join(items[i : i + ONCE_PER_STRING]) for i in range(0, len(items), ONCE_PER_STRING)]


def _unpack_once(packed: list) -> set[str]:
    out: set[str] = set()
    for s in packed:
        if len(s) % ONCE_CHARS:
            raise ValueError("a string of one-page sentences is not made of whole hashes")
        raw = base64.b64decode(s, altchars=b"-_", validate=True)
        out.update(raw[i : i + ONCE_HEX // 2].hex() for i in range(0, len(raw), ONCE_HEX // 2))
    return out


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
        df = self.stats.sent_df.get(h, 0)
        if not df and self.stats.sent_once and h[:ONCE_HEX] in self.stats.sent_once:
            df = 1
        return df - (1 if h in self._own_sent else 0)

    def node_df(self, key: str) -> int:
        """Other pages that have this node."""
        return self.stats.node_df.get(key, 0) - (1 if key in self._own_nodes else 0)

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
