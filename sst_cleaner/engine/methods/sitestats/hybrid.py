"""The default method: site evidence subtracts, page evidence selects, sentence by sentence.

Each sentence of a page is described by the three kinds of evidence the papers give, and
small boosted-tree scorers (learnt on the dev corpora by ``benchmarks/train_default.py``,
shipped as ``data/default_scorer.json``, evaluated with numpy by :mod:`._scorer`) weigh them:

* **structure** (SST, Yi, Liu & Li): how many other pages have the sentence's style node,
  and how much of that node's text recurs across pages (a node whose text is template on
  the other pages is a template node even where its text is new: a nav with a new item,
  a "most read" list);
* **words** (informative sentences): the sentence entropy E(S) over the node's collection
  and the number of other pages that carry the exact sentence;
* **density** (CETD, Sun, Song & Liao): whether the sentence lies in the content region
  that Algorithm 2 picks once the site's template text is zeroed out and in its subtree
  of largest DensitySum, the container a reader-view extractor would pick (Readability's
  paragraph scoring), plus the block's link density and prose-likeness (length,
  stop-word share);
* **containers**: template and link share of the block's containers and neighbours, and
  whether the block lies in the page's main container (the deepest element holding at
  least half of the page's non-template text) or in the wide one (nine tenths of it).

A page with no other page of its site to compare with (before fit, a site of one page)
is judged by a second scorer, learnt on pages seen alone: the page-level fallback. A
site model that keeps (almost) nothing of a page hands it to that scorer too
(``status == "site_empty"``).
"""

from __future__ import annotations

import math
from typing import Optional

from sst_cleaner.engine._dom import PreparedPage
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, STATUS_SITE_EMPTY, Block, CleanResult
from sst_cleaner.engine.methods.cetd import covered_elements, extract_content
from sst_cleaner.engine.methods.sitestats._scorer import Scorers as Scorers  # re-exported (public here first)
from sst_cleaner.engine.methods.sitestats._scorer import TreeEnsemble as TreeEnsemble  # re-exported (tests use it)
from sst_cleaner.engine.methods.sitestats._scorer import load_scorer
from sst_cleaner.engine.methods.sitestats.site_stats import (
    HINT_COMMENT,
    HINT_MEDIA,
    BlockInfo,
    PageAnalysis,
    PageView,
    SentenceInfo,
    SiteStats,
    SiteStatsModel,
    analyse_page,
)

FEATURE_NAMES = (
    "bias",
    "entropy",  # E(S) over the node's other pages
    "sent_rec",  # share of the page's template cohort carrying this exact sentence (see cohort)
    "sent_rec2",  # sentence on >= 2 other pages
    "node_share",  # share of the node's text that recurs site-wide
    "node_rate",  # share of the page's template cohort having the node (see cohort)
    "node_new",  # node never seen on another page
    "in_cetd",  # inside CETD content region (template zeroed)
    "link_density",
    "log_block_chars",
    "log_sent_words",
    "stop_ratio",
    "ends_punct",
    "is_heading",
    "in_li",
    "in_pre_or_table",
    "in_nav_like",  # inside header/footer/nav/aside/form
    "rel_pos",  # position of the block in the page (0..1)
    # context: the containers above the block (1, 2 and 3 levels up) and the neighbours
    "up1_log_chars",
    "up1_tmpl",
    "up1_link",
    "up2_log_chars",
    "up2_tmpl",
    "up2_link",
    "up3_log_chars",
    "up3_tmpl",
    "up3_link",
    "prev_tmpl",
    "prev_link",
    "next_tmpl",
    "next_link",
    "page_tmpl",  # share of the page's text that is template
    "hint_comment",
    "hint_boiler",
    "hint_content",  # class/id names of the ancestors
    "in_main",  # inside the page's main container (holds most of its non-template text)
    "main_tmpl",  # share of the main container's text that is template
    "in_wide",
    "wide_tmpl",  # the same for the container holding nine tenths of it
    # what the block's own container is called (its element and the two above it)
    "near_comment",
    "near_boiler",
    "near_content",
    "in_article",  # inside <article> or <main>
    # the densest prose container, as a reader-view extractor scores it (see _prose_scores)
    "in_top",
    "after_top",
    "top_ratio",
    "top_share",
    "log_links",  # links in the block
    "log_page_chars",  # the page's text, non-template
    "in_cetd_top",  # inside the CETD subtree of largest DensitySum
    "hint_media",
    "near_media",
    "in_figure",  # captions, galleries, photo credits
    "dup_in_page",  # the sentence occurs more than once on the page
    "page_link_share",  # share of the page's text inside links
    "page_code_share",  # share of the page's text in pre, code and tables
    # the page's template cohort: a host whose pages span several template eras shares
    # its template with the pages of the same era only, so recurrence is measured against
    # the most widespread node of the page (about the era's share of the sample), not
    # against all other pages; on a site of one template the cohort is about 1
    "cohort",  # the largest share of other pages having one of the page's nodes
)


def sentence_features(
    view: Optional[PageView], pa: PageAnalysis, in_cetd: set
) -> list[tuple[BlockInfo, SentenceInfo, list[float]]]:
    """One feature vector per sentence of the page (order = page order)."""
    rows = []
    nb = max(1, len(pa.blocks) - 1)
    n_other = view.n_other if view is not None else 0
    # per block: chars, template chars (sentences on >= 2 other pages), link chars;
    # summed into every ancestor so each container knows what it holds. Summed in one
    # pass children-before-parents (reverse document order), so the cost is linear in
    # the elements however deep the page is.
    agg: dict = {}
    btmpl: list[float] = []
    total = tmpl_total = 0
    for b in pa.blocks:
        blk = b.block
        n = len(blk.text)
        t = 0
        if view is not None and n_other > 0:
            t = sum(len(s.text) for s in b.sentences if view.sentence_df(s.hash) >= view.recur_df)
        t = min(t, n)
        btmpl.append(t / max(1, n))
        total += n
        tmpl_total += t
        agg[blk.element] = [n, t, blk.link_chars]
    for el in reversed(list(pa.page.root.iter())):
        a = agg.get(el)
        if a is None:
            continue
        parent = el.getparent()
        if parent is None:
            continue
        pa_ = agg.get(parent)
        if pa_ is None:
            agg[parent] = list(a)
        else:
            pa_[0] += a[0]
            pa_[1] += a[1]
            pa_[2] += a[2]
    page_tmpl = tmpl_total / max(1, total)
    # The main container: walking down from the root, the child that holds at least half
    # of the page's non-template text, as deep as such a child exists. What lies inside
    # it is the page's own matter even where its words recur (a byline inside the
    # article); what lies outside it rarely is. The wide main container holds nine tenths
    # of it: on a reference manual, where the listings every page shares (inherited
    # methods, trait implementations) sit beside the page's own description, it is the
    # content area those listings belong to.
    root = pa.page.root
    content_total = total - tmpl_total
    main = _deepest_holding(root, agg, content_total, 0.5)
    wide = _deepest_holding(root, agg, content_total, 0.9)
    wide_agg = agg.get(wide, (0, 0, 0))
    wide_tmpl = wide_agg[1] / max(1, wide_agg[0])
    in_wide_set = set(wide.iter()) if wide is not root else None
    main_agg = agg.get(main, (0, 0, 0))
    main_tmpl = main_agg[1] / max(1, main_agg[0])
    in_main_set = set(main.iter()) if main is not root else None

    top, top_ratio_of, top_share = _prose_container(pa, agg, btmpl, content_total)
    in_top_set = set(top.iter()) if top is not None else set()
    last_top = max((bi for bi, b in enumerate(pa.blocks) if b.block.element in in_top_set), default=-1)
    log_page_chars = math.log1p(content_total)
    page_counts: dict = {}
    code_chars = link_total = 0
    for b in pa.blocks:
        for s in b.sentences:
            page_counts[s.hash] = page_counts.get(s.hash, 0) + 1
        link_total += b.block.link_chars
        if (
            b.tag in ("pre", "code", "td", "th")
            or "pre" in b.ancestors
            or "code" in b.ancestors
            or "table" in b.ancestors
        ):
            code_chars += len(b.block.text)
    page_link_share = link_total / max(1, total)
    page_code_share = code_chars / max(1, total)
    cetd_top: frozenset = getattr(in_cetd, "top", frozenset())

    def up(el, k):
        for _ in range(k):
            p = el.getparent()
            if p is None:
                break
            el = p
        a = agg.get(el, (0, 0, 0))
        c = max(1, a[0])
        return [math.log1p(a[0]), a[1] / c, a[2] / c]

    nblocks = len(pa.blocks)
    for bi, b in enumerate(pa.blocks):
        blk = b.block
        link_density = blk.link_chars / max(1, len(blk.text))
        anc = b.ancestors
        is_heading = (
            1.0
            if (b.tag in ("h1", "h2", "h3", "h4", "h5", "h6") or any(a[0] == "h" and a[1:].isdigit() for a in anc))
            else 0.0
        )
        in_li = 1.0 if (b.tag in ("li", "dd", "dt") or "li" in anc) else 0.0
        in_pre = 1.0 if (b.tag in ("pre", "td", "th") or "pre" in anc or "table" in anc) else 0.0
        nav_like = (
            1.0
            if any(a in ("header", "footer", "nav", "aside", "form") for a in anc)
            or b.tag in ("header", "footer", "nav", "aside", "form")
            else 0.0
        )
        if view is not None and n_other > 0:
            ndf = view.node_df(b.key)
            node_rate = ndf / n_other
            node_share = view.stats.node_template_share(b.key, 2 + view.own)
            node_new = 1.0 if ndf == 0 else 0.0
        else:
            node_rate = node_share = 0.0
            node_new = 1.0
        cetd = 1.0 if blk.element in in_cetd else 0.0
        log_chars = math.log1p(len(blk.text))
        ctx = up(blk.element, 1) + up(blk.element, 2) + up(blk.element, 3)
        if bi > 0:
            pb = pa.blocks[bi - 1].block
            ctx += [btmpl[bi - 1], pb.link_chars / max(1, len(pb.text))]
        else:
            ctx += [1.0, 1.0]
        if bi + 1 < nblocks:
            nbk = pa.blocks[bi + 1].block
            ctx += [btmpl[bi + 1], nbk.link_chars / max(1, len(nbk.text))]
        else:
            ctx += [1.0, 1.0]
        ctx.append(page_tmpl)
        ctx += [float(bool(b.hints & 1)), float(bool(b.hints & 2)), float(bool(b.hints & 4))]
        ctx += [
            1.0 if in_main_set is None or blk.element in in_main_set else 0.0,
            main_tmpl,
            1.0 if in_wide_set is None or blk.element in in_wide_set else 0.0,
            wide_tmpl,
        ]
        nh = b.near_hints
        in_top = blk.element in in_top_set
        ctx += [
            float(bool(nh & 1)),
            float(bool(nh & 2)),
            float(bool(nh & 4)),
            1.0 if ("article" in anc or "main" in anc or b.tag in ("article", "main")) else 0.0,
            1.0 if in_top else 0.0,
            1.0 if (not in_top and bi > last_top >= 0) else 0.0,
            top_ratio_of(blk.element),
            top_share,
            math.log1p(blk.n_links),
            log_page_chars,
            1.0 if blk.element in cetd_top else 0.0,
            float(bool(b.hints & HINT_MEDIA)),
            float(bool(nh & HINT_MEDIA)),
            1.0 if ("figure" in anc or "figcaption" in anc or b.tag in ("figure", "figcaption")) else 0.0,
        ]
        for s in b.sentences:
            if view is not None and n_other > 0:
                sdf = view.sentence_df(s.hash)
                rec = sdf / n_other
                rec2 = 1.0 if sdf >= view.recur_df else 0.0
                ent = view.sentence_entropy(b.key, s)
            else:
                rec = rec2 = ent = 0.0
            ends = 1.0 if s.text[-1:] in ".!?\"'”。！？:" else 0.0
            page_ctx = [1.0 if page_counts[s.hash] > 1 else 0.0, page_link_share, page_code_share]
            rows.append(
                (
                    b,
                    s,
                    [
                        1.0,
                        ent,
                        rec,
                        rec2,
                        node_share,
                        node_rate,
                        node_new,
                        cetd,
                        link_density,
                        log_chars,
                        math.log1p(s.n_words),
                        s.stop_ratio,
                        ends,
                        is_heading,
                        in_li,
                        in_pre,
                        nav_like,
                        bi / nb,
                    ]
                    + ctx
                    + page_ctx,
                )
            )
    _add_cohort(rows)
    return rows


_REC, _NODE_RATE = FEATURE_NAMES.index("sent_rec"), FEATURE_NAMES.index("node_rate")
_IN_TOP = FEATURE_NAMES.index("in_top")


def _add_cohort(rows: list) -> None:
    """Measure sent_rec and node_rate against the page's template cohort (see
    FEATURE_NAMES) and append the cohort, in place. Chosen by leave-one-corpus-out over
    keeping the shares of all other pages beside the cohort ones."""
    cohort = max((f[_NODE_RATE] for _b, _s, f in rows), default=0.0)
    for _b, _s, f in rows:
        if cohort > 0:
            f[_REC] = min(1.0, f[_REC] / cohort)
            f[_NODE_RATE] = f[_NODE_RATE] / cohort
        f.append(cohort)


def _deepest_holding(root, agg: dict, content_total: int, share: float):
    """Walking down from the root, the child holding at least ``share`` of the page's
    non-template text, as deep as such a child exists (the root if none)."""
    node = root
    if content_total <= 0:
        return node
    while True:
        best, best_c = None, -1
        for ch in node:
            a = agg.get(ch)
            if a is not None and a[0] - a[1] > best_c:
                best, best_c = ch, a[0] - a[1]
        if best is None or best_c < share * content_total:
            return node
        node = best


def _prose_container(pa: PageAnalysis, agg: dict, btmpl: list, content_total: int):
    """The container a reader-view extractor would pick (Readability's scoring, on our
    blocks): every prose block of 25+ characters that is not template scores 1 + its
    commas + a point per 100 characters (at most 3), given whole to its parent and half
    to its grandparent; a container's score is scaled by its share of non-link text.

    Returns (the best container or None, block element -> best score among its three
    nearest containers / the best score, the best container's share of the page's
    non-template text)."""
    score: dict = {}
    for b, t in zip(pa.blocks, btmpl):
        blk = b.block
        n = len(blk.text)
        if n < 25 or t >= 0.5 or blk.link_chars * 2 > n:
            continue
        s = 1.0 + blk.text.count(",") + min(3, n // 100)
        parent = blk.element.getparent()
        if parent is None:
            continue
        score[parent] = score.get(parent, 0.0) + s
        grand = parent.getparent()
        if grand is not None:
            score[grand] = score.get(grand, 0.0) + s / 2
    best, best_s = None, 0.0
    final: dict = {}
    for el, s in score.items():
        a = agg.get(el)
        if a is None:
            continue
        s *= 1.0 - a[2] / max(1, a[0])
        final[el] = s
        if s > best_s:
            best, best_s = el, s
    if best is None:
        return None, lambda el: 0.0, 0.0

    def ratio(el) -> float:
        r = 0.0
        for _ in range(3):
            el = el.getparent()
            if el is None:
                break
            r = max(r, final.get(el, 0.0))
        return r / best_s

    a = agg[best]
    return best, ratio, (a[0] - a[1]) / max(1, content_total)


class CetdRegion(set):
    """Elements inside the CETD content region (every content root of Algorithm 2), with
    ``top``: the elements inside the one subtree of largest DensitySum. Algorithm 2's
    threshold adds a handful of further roots on a typical news page (captions, bylines,
    related lists, comments); the paper's gold kept comments, an article's does not."""

    top: frozenset = frozenset()


def cetd_region(pa: PageAnalysis, view: Optional[PageView]) -> CetdRegion:
    """The CETD content region, computed with template sentences zeroed."""

    ignore = None
    if view is not None and view.n_other > 0:
        doomed = set()
        for b in pa.blocks:
            if all(view.sentence_df(s.hash) >= view.recur_df for s in b.sentences):
                doomed.add(b.block.element)
        if doomed:
            ignore = doomed.__contains__
    roots = extract_content(pa.page.root, ignore=ignore)
    region = CetdRegion(covered_elements(roots))
    d = roots.densities
    if d is not None and len(d):
        region.top = frozenset(d.elements[d.max_density_sum()[0]].iter())
    return region


# ---------------------------------------------------------------------------------------
# The method
# ---------------------------------------------------------------------------------------
#: a site model's result with fewer kept words than this is "nearly empty"
NEARLY_EMPTY_WORDS = 10
#: ... or, judged by one other page only, less than this share of the page's words while
#: the page alone keeps three times as much (measured on all sites with more other pages,
#: this check cost sites-dev's site mode, so it is kept to this case)
ONE_OTHER_SHARE = 0.1


def _is_comment_prose(b: BlockInfo, s: SentenceInfo) -> bool:
    """A sentence of a reader's comment: prose (four words or more, mostly not link text)
    inside a container named as comments. The scorer follows the article convention and
    drops comments; ``include_comments=True`` keeps what this says is one."""
    blk = b.block
    return bool(b.hints & HINT_COMMENT) and s.n_words >= 4 and blk.link_chars * 2 < len(blk.text)


@register_method("default")
class HybridMethod(SiteStatsModel):
    """Site evidence + page evidence, decided per sentence by the learnt scorer.

    Parameters: ``threshold`` (probability above which a sentence is kept, 0.5),
    ``scorer`` (path of another scorer JSON, for experiments), ``include_comments``
    (keep readers' comments, which the article convention the scorer follows drops).
    Model state: the :class:`~sst_cleaner.engine.methods.sitestats.site_stats.SiteStats` of the site.
    """

    def __init__(self, threshold: float = 0.5, scorer: Optional[str] = None, include_comments: bool = False):
        self.threshold = float(threshold)
        self.scorer = scorer
        self.include_comments = bool(include_comments)
        self.stats = SiteStats()
        self._scorers = load_scorer(scorer)

    def score_page(self, page: PreparedPage):
        """(analysis, rows, probabilities): every sentence of the page with its score."""
        pa = analyse_page(page)
        view = self.stats.page_view(pa) if self.stats.n_pages else None
        return (pa,) + self._score(pa, view)

    def _score(self, pa: PageAnalysis, view: Optional[PageView]) -> tuple[list, list]:
        """(rows, probabilities) of the page's sentences, judged with ``view`` (None:
        the page alone)."""
        rows = sentence_features(view, pa, cetd_region(pa, view))
        if not rows:
            return rows, []
        # a page with no other page of its site to compare with is judged alone
        alone = view is None or view.n_other == 0
        probs = self._scorers.predict(rows, alone)
        if self.include_comments:
            probs = [1.0 if _is_comment_prose(b, s) else p for (b, s, _f), p in zip(rows, probs)]
        else:
            # the article convention, made a rule where the scorers are unsure of it:
            # comment prose outside the page's main prose container goes (inside it, a
            # container named like comments is more often the article's own wording)
            probs = [0.0 if f[_IN_TOP] < 0.5 and _is_comment_prose(b, s) else p for (b, s, f), p in zip(rows, probs)]
        return rows, probs

    def clean(self, page: PreparedPage) -> CleanResult:
        pa = analyse_page(page)
        view = self.stats.page_view(pa) if self.stats.n_pages else None
        rows, probs = self._score(pa, view)
        if view is None:
            return self._result(page, pa, rows, probs, "default(page-level)")
        kept = self._kept_words(rows, probs)
        # against a single other page, a copy of the page ("/" and "/index.html") makes
        # everything recur: a verdict keeping little of the page is checked as well
        suspect = view.n_other == 1 and kept < ONE_OTHER_SHARE * sum(s.n_words for _b, s, _f in rows)
        if kept < NEARLY_EMPTY_WORDS or suspect:
            # The site's evidence left (almost) nothing: a page whose own matter recurs
            # across the site, or a page unlike the sample. The page-level verdict is the
            # better guess, and the status says the site model did not make it.
            alone_rows, alone_probs = self._score(pa, None)
            if self._kept_words(alone_rows, alone_probs) > (kept if kept < NEARLY_EMPTY_WORDS else 3 * kept):
                result = self._result(page, pa, alone_rows, alone_probs, "default(page-level)")
                result.status = STATUS_SITE_EMPTY
                return result
        return self._result(page, pa, rows, probs, "default")

    def _kept_words(self, rows, probs) -> int:
        return sum(s.n_words for (_b, s, _f), p in zip(rows, probs) if p >= self.threshold)

    def _result(self, page: PreparedPage, pa: PageAnalysis, rows, probs, method: str) -> CleanResult:
        kept_by_block: dict = {}
        score_by_block: dict = {}
        for (b, s, _f), p in zip(rows, probs):
            acc = score_by_block.setdefault(id(b), [0.0, 0])
            acc[0] += float(p)
            acc[1] += 1
            if p >= self.threshold:
                kept_by_block.setdefault(id(b), []).append(s.text)
        blocks: list[Block] = []
        lines: list[str] = []
        sentences: list[str] = []
        for b in pa.blocks:
            kept = kept_by_block.get(id(b))
            acc = score_by_block.get(id(b), [0.0, 1])
            label = INFORMATIVE if kept else NOISE
            blocks.append(
                Block(
                    page.xpath_of(b.block.element), b.block.text, label, acc[0] / max(1, acc[1]), sentences=kept or []
                )
            )
            if kept:
                lines.append(" ".join(kept))
                sentences.extend(kept)
        return CleanResult(text="\n".join(lines), sentences=sentences, blocks=blocks, method=method, title=page.title)

    def to_dict(self) -> dict:
        return {"site_stats": self.stats.to_dict()}

    @classmethod
    def from_dict(cls, state: dict, **params) -> "HybridMethod":
        obj = cls(**params)
        obj.stats = SiteStats.from_dict(state["site_stats"])
        return obj
