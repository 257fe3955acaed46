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
site model that keeps (almost) nothing of a page hands it to that scorer too, whose
verdict then drops the site's template (``status == "site_empty"``; a stub page, nothing
but the template, comes back with what the site model kept, often nothing).
"""

from __future__ import annotations

# One module: the feature groups and the method that scores their
# rows change together (a feature is added in both; the page context they read is in
# _page_context).
import math
from typing import Any, Callable, Optional, TypeVar

from sst_cleaner.engine._dom import PreparedPage
from sst_cleaner.engine._limits import check_budget
from sst_cleaner.engine._registry import register_method
from sst_cleaner.engine._result import INFORMATIVE, NOISE, STATUS_SITE_EMPTY, Block, CleanResult
from sst_cleaner.engine.methods.sitestats._names import HINT_BOILER, HINT_COMMENT, HINT_CONTENT, HINT_MEDIA
from sst_cleaner.engine.methods.sitestats._page_context import PAGE_WIDE_SHARE as PAGE_WIDE_SHARE  # re-exported
from sst_cleaner.engine.methods.sitestats._page_context import PageContext
from sst_cleaner.engine.methods.sitestats._regions import CetdRegion as CetdRegion  # re-exported
from sst_cleaner.engine.methods.sitestats._regions import cetd_region as cetd_region  # re-exported (training reads it)
from sst_cleaner.engine.methods.sitestats._scorer import Scorers as Scorers  # re-exported (public here first)
from sst_cleaner.engine.methods.sitestats._scorer import TreeEnsemble as TreeEnsemble  # re-exported (tests use it)
from sst_cleaner.engine.methods.sitestats._scorer import load_scorer
from sst_cleaner.engine.methods.sitestats.site_stats import (
    BlockInfo,
    PageAnalysis,
    PageView,
    SentenceInfo,
    SiteStats,
    SiteStatsModel,
    analyse_page,
)

FEATURE_NAMES = (
    # in the order the groups below give them (page, path, block, sentence, post-pass):
    # a sentence's row is their values joined, with no reordering (see _assembly)
    "bias",
    "page_tmpl",  # share of the page's text that is template
    "log_page_chars",  # the page's text, non-template
    "page_link_share",  # share of the page's text inside links
    "page_code_share",  # share of the page's text in pre, code and tables
    # share of the page's text set in code type (code, pre, kbd...): a reference manual's
    # signatures and names, never a news page's; where it is high, links and listings
    # outside the prose container are the page's matter, where it is nil they are teasers
    "page_mono_share",
    "page_code_words",  # share of its words shaped like code (identifiers, operators)
    "node_share",  # share of the node's text that recurs site-wide
    "node_rate",  # share of the page's template cohort having the node (see cohort)
    "node_new",  # node never seen on another page
    "is_heading",
    "in_li",
    "in_pre_or_table",
    "in_nav_like",  # inside header/footer/nav/aside/form
    "hint_comment",
    "hint_boiler",
    "hint_content",  # class/id names of the ancestors
    # what the block's own container is called (its element and the two above it)
    "near_comment",
    "near_boiler",
    "near_content",
    "hint_media",
    "near_media",
    "in_figure",  # captions, galleries, photo credits
    "link_density",
    "log_block_chars",
    "rel_pos",  # position of the block in the page (0..1)
    "log_links",  # links in the block
    "in_cetd",  # inside CETD content region (template zeroed)
    "in_cetd_top",  # inside the CETD subtree of largest DensitySum
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
    "in_main",  # inside the page's main container (holds most of its non-template text)
    "main_tmpl",  # share of the main container's text that is template
    "in_wide",
    "wide_tmpl",  # the same for the container holding nine tenths of it
    "in_article",  # inside <article> or <main>
    # the densest prose container, as a reader-view extractor scores it (see _prose_scores)
    "in_top",
    "after_top",
    "top_ratio",
    "top_share",
    # records: the block's element or one of its two containers repeated as siblings of
    # one kind (teasers, gallery slides, list items, paragraphs), and how long they are
    "log_same_sibs",  # the most siblings of one tag and class among the three levels
    "sib_log_chars",  # mean text of those siblings
    "entropy",  # E(S) over the node's other pages
    "sent_rec",  # share of the page's template cohort carrying this exact sentence (see cohort)
    "sent_rec2",  # sentence on >= 2 other pages
    "log_sent_words",
    "stop_ratio",
    "ends_punct",
    "dup_in_page",  # the sentence occurs more than once on the page
    # the page's template cohort: a host whose pages span several template eras shares
    # its template with the pages of the same era only, so recurrence is measured against
    # the most widespread node of the page (about the era's share of the sample), not
    # against all other pages; on a site of one template the cohort is about 1
    "cohort",  # the largest share of other pages having one of the page's nodes
)


#: where each feature sits in the vector, derived from FEATURE_NAMES once
_POSITION = {name: i for i, name in enumerate(FEATURE_NAMES)}
_REC, _NODE_RATE, _COHORT = _POSITION["sent_rec"], _POSITION["node_rate"], _POSITION["cohort"]

#: (the ancestors' tags are analyse_page's context tags, whose headings are these)
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_NAV_LIKE = frozenset(("header", "footer", "nav", "aside", "form"))


# ---------------------------------------------------------------------------------------
# The feature groups. Each declares the names of its features and returns their values
# in that order (a tuple: a row is made per sentence of every page, and tuples are what
# Python joins fastest); FEATURE_NAMES lists them in group order (checked, _assembly).
# ---------------------------------------------------------------------------------------
_GROUP_NAMES: dict = {}

_Group = TypeVar("_Group", bound=Callable[..., tuple])


def _features(*names: str) -> Callable[[_Group], _Group]:
    """Declare the features a group gives, in the order it returns them."""

    def declare(group: _Group) -> _Group:
        _GROUP_NAMES[group] = names
        return group

    return declare


@_features(
    "bias", "page_tmpl", "log_page_chars", "page_link_share", "page_code_share", "page_mono_share", "page_code_words"
)
def _page_level(pg: PageContext) -> tuple:
    """The same for every sentence of the page."""
    return (
        1.0,
        pg.page_tmpl,
        pg.log_page_chars,
        pg.page_link_share,
        pg.page_code_share,
        pg.page_mono_share,
        pg.page_code_words,
    )


@_features("node_share", "node_rate", "node_new")
def _site_node(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """Site recurrence of the block's style node (SST); node_rate is measured against
    the cohort later (_add_cohort)."""
    view = pg.view
    if view is None or not pg.judged:
        return 0.0, 0.0, 1.0
    ndf = view.node_df(b.key)
    node_share = view.stats.node_template_share(b.key, 2 + view.own)
    return node_share, ndf / pg.n_other, 1.0 if ndf == 0 else 0.0


@_features("link_density", "log_block_chars", "rel_pos", "log_links")
def _block_shape(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """What the block is: its size, links and position on the page."""
    blk = b.block
    return (
        pg.blink[bi],
        math.log1p(len(blk.text)),
        bi / pg.nb,
        math.log1p(blk.n_links),
    )


@_features("is_heading", "in_li", "in_pre_or_table", "in_nav_like")
def _element_kind(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """What the block's element and its ancestors are."""
    anc = b.ancestors
    tag = b.tag
    return (
        1.0 if (tag in _HEADINGS or not _HEADINGS.isdisjoint(anc)) else 0.0,
        1.0 if (tag in ("li", "dd", "dt") or "li" in anc) else 0.0,
        1.0 if (tag in ("pre", "td", "th") or "pre" in anc or "table" in anc) else 0.0,
        1.0 if not _NAV_LIKE.isdisjoint(anc) or tag in _NAV_LIKE else 0.0,
    )


@_features("in_cetd", "in_cetd_top")
def _density(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """CETD: the content region and its subtree of largest DensitySum."""
    el = b.block.element
    return 1.0 if el in pg.in_cetd else 0.0, 1.0 if el in pg.cetd_top else 0.0


@_features(
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
)
def _context(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """The containers 1, 2 and 3 levels above the block, and its neighbours (a missing
    neighbour counts as all template, all links)."""
    btmpl, blink = pg.btmpl, pg.blink
    prev = (btmpl[bi - 1], blink[bi - 1]) if bi > 0 else (1.0, 1.0)
    next_ = (btmpl[bi + 1], blink[bi + 1]) if bi + 1 < len(btmpl) else (1.0, 1.0)
    return pg.above(b.block.element) + prev + next_


@_features("hint_comment", "hint_boiler", "hint_content", "near_comment", "near_boiler", "near_content")
def _hints(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """What the containers are called: any ancestor (hint_*), the block's element and the
    two above it (near_*)."""
    h, nh = pg.hints[bi]
    return (
        float(bool(h & HINT_COMMENT)),
        float(bool(h & HINT_BOILER)),
        float(bool(h & HINT_CONTENT)),
        float(bool(nh & HINT_COMMENT)),
        float(bool(nh & HINT_BOILER)),
        float(bool(nh & HINT_CONTENT)),
    )


@_features(
    "in_main", "main_tmpl", "in_wide", "wide_tmpl", "in_article", "in_top", "after_top", "top_ratio", "top_share"
)
def _containers(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """Whether the block lies in the page's main, wide, article and prose containers, and
    how template those are."""
    el = b.block.element
    anc = b.ancestors
    in_top = el in pg.in_top_set
    return (
        1.0 if pg.in_main_set is None or el in pg.in_main_set else 0.0,
        pg.main_tmpl,
        1.0 if pg.in_wide_set is None or el in pg.in_wide_set else 0.0,
        pg.wide_tmpl,
        1.0 if ("article" in anc or "main" in anc or b.tag in ("article", "main")) else 0.0,
        1.0 if in_top else 0.0,
        1.0 if (not in_top and bi > pg.last_top >= 0) else 0.0,
        pg.top_ratio_of(el),
        pg.top_share,
    )


@_features("log_same_sibs", "sib_log_chars")
def _records(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """Whether the block sits in a run of like siblings (a teaser list, a gallery, the
    paragraphs of an article), and how much text each of them holds: a run of short
    records is a list of links to elsewhere far more often than the page's matter."""
    el = b.block.element
    parent = el.getparent()
    if parent is None:
        return 0.0, 0.0
    n, chars = pg.like_siblings(parent, el)
    up_n, up_chars = pg.records_above(parent)  # shared by the blocks of one container
    if up_n > n:
        n, chars = up_n, up_chars
    return math.log1p(n), math.log1p(chars)


@_features("hint_media", "near_media", "in_figure")
def _media(pg: PageContext, bi: int, b: BlockInfo) -> tuple:
    """Captions, galleries, photo credits."""
    anc = b.ancestors
    h, nh = pg.hints[bi]
    return (
        float(bool(h & HINT_MEDIA)),
        float(bool(nh & HINT_MEDIA)),
        1.0 if ("figure" in anc or "figcaption" in anc or b.tag in ("figure", "figcaption")) else 0.0,
    )


@_features("entropy", "sent_rec", "sent_rec2")
def _site_sentence(pg: PageContext, b: BlockInfo, s: SentenceInfo) -> tuple:
    """Site recurrence of the sentence itself (informative sentences); sent_rec is
    measured against the cohort later (_add_cohort)."""
    view = pg.view
    if view is None or not pg.judged:
        return 0.0, 0.0, 0.0
    sdf = view.sentence_df(s.hash)
    return view.sentence_entropy(b.key, s), sdf / pg.n_other, 1.0 if sdf >= view.recur_df else 0.0


@_features("log_sent_words", "stop_ratio", "ends_punct", "dup_in_page")
def _sentence_shape(pg: PageContext, b: BlockInfo, s: SentenceInfo) -> tuple:
    """Whether the sentence reads as prose, and whether the page repeats it."""
    return (
        math.log1p(s.n_words),
        s.stop_ratio,
        1.0 if s.text[-1:] in ".!?\"'”。！？:" else 0.0,
        1.0 if pg.page_counts[s.hash] > 1 else 0.0,
    )


_PAGE_GROUPS = (_page_level,)
#: the groups that read only the block's style path (its node, element, ancestors and
#: their names as the page reads them) and the page, never its position: computed once
#: per path of the page (see _path_key), as a page repeats a few hundred paths over
#: thousands of blocks
_PATH_GROUPS = (_site_node, _element_kind, _hints, _media)
_BLOCK_GROUPS = (_block_shape, _density, _context, _containers, _records)
_SENTENCE_GROUPS = (_site_sentence, _sentence_shape)
#: given by _add_cohort once all the page's rows are known (a placeholder until then)
_POST_PASS = ("cohort",)


def _assembly() -> None:
    """Refuses groups that do not give every feature of FEATURE_NAMES exactly once, in its
    order, when their values are joined in group order (page, path, block, sentence,
    post-pass): a row is made per sentence of every page, and joined values need no
    reordering."""
    groups = _PAGE_GROUPS + _PATH_GROUPS + _BLOCK_GROUPS + _SENTENCE_GROUPS
    joined = [name for group in groups for name in _GROUP_NAMES[group]]
    joined += _POST_PASS
    if len(joined) != len(set(joined)) or set(joined) != set(FEATURE_NAMES):
        twice = sorted({n for n in joined if joined.count(n) > 1})
        raise RuntimeError(
            f"feature groups must give every feature exactly once: twice {twice}, "
            f"missing {sorted(set(FEATURE_NAMES) - set(joined))}, unknown {sorted(set(joined) - set(FEATURE_NAMES))}"
        )
    if tuple(joined) != FEATURE_NAMES:
        raise RuntimeError(f"feature groups give {joined}, FEATURE_NAMES lists them in another order")


_assembly()
_N_FEATURES = len(FEATURE_NAMES)
_POST_PLACEHOLDER = (0.0,) * len(_POST_PASS)


def sentence_features(
    view: Optional[PageView], pa: PageAnalysis, in_cetd: set
) -> list[tuple[BlockInfo, SentenceInfo, list[float]]]:
    """One feature vector per sentence of the page (order = page order), in
    FEATURE_NAMES order: the page's groups run once, the path groups once per style path,
    each block's groups once per block, each sentence's groups once per sentence, and the
    cohort once the page's rows are all known."""
    pg = PageContext(view, pa, in_cetd)
    page_values: tuple = ()
    for page_group in _PAGE_GROUPS:
        page_values += page_group(pg)
    rows = []
    by_path: dict = {}
    for bi, b in enumerate(pa.blocks):
        if not bi & 31:  # a clock read costs a microsecond: every few dozen blocks
            check_budget()
        path = _path_key(b, pg.hints[bi])
        block_values = by_path.get(path)
        if block_values is None:
            block_values = page_values
            for path_group in _PATH_GROUPS:
                block_values += path_group(pg, bi, b)
            by_path[path] = block_values
        # a block's and a sentence's own values are joined first: the long tuple of what
        # they share is copied once, not once per group
        own: tuple = ()
        for block_group in _BLOCK_GROUPS:
            own += block_group(pg, bi, b)
        block_values += own
        for s in b.text_info.sentences:
            own = ()
            for sentence_group in _SENTENCE_GROUPS:
                own += sentence_group(pg, b, s)
            values = [*block_values, *own, *_POST_PLACEHOLDER]
            if len(values) != _N_FEATURES:  # a group gave more or fewer values than it names
                raise RuntimeError(f"feature groups gave {len(values)} values for {_N_FEATURES} features")
            rows.append((b, s, values))
    _add_cohort(rows)
    return rows


def _path_key(b: BlockInfo, hints: tuple[int, int]) -> tuple:
    """Everything the path groups read of a block: its style path (node, ancestors), tag and
    ``hints`` (its names as the page reads them): equal keys get equal values from them."""
    return b.block.state, b.tag, hints


_HINT_BOILER, _REC2, _NODE_SHARE = (_POSITION[n] for n in ("hint_boiler", "sent_rec2", "node_share"))
_HINT_COMMENT, _IN_TOP, _IN_FIGURE = _POSITION["hint_comment"], _POSITION["in_top"], _POSITION["in_figure"]
_IN_MAIN, _MAIN_TMPL, _LINK_DENSITY = _POSITION["in_main"], _POSITION["main_tmpl"], _POSITION["link_density"]
_IN_WIDE, _WIDE_TMPL = _POSITION["in_wide"], _POSITION["wide_tmpl"]


def _site_template(f: list) -> bool:
    """A sentence of the site's template: on at least recur_df other pages, in a node
    whose text is wholly template across the site (a site row's features)."""
    return f[_REC2] > 0.5 and f[_NODE_SHARE] >= 0.99


def _recurring_boilerplate(f: list) -> bool:
    return f[_HINT_BOILER] > 0.5 and _site_template(f)


def _add_cohort(rows: list) -> None:
    """Measure sent_rec and node_rate against the page's template cohort (see
    FEATURE_NAMES) and fill in the cohort, in place. Chosen by leave-one-corpus-out over
    keeping the shares of all other pages beside the cohort ones."""
    cohort = max((f[_NODE_RATE] for _b, _s, f in rows), default=0.0)
    if cohort == 0.0:  # every row holds it already (_POST_PLACEHOLDER): every page judged alone
        return
    for _b, _s, f in rows:
        rec = f[_REC] / cohort
        f[_REC] = rec if rec < 1.0 else 1.0  # min(1.0, rec), without the builtin's call
        f[_NODE_RATE] = f[_NODE_RATE] / cohort
        f[_COHORT] = cohort


# ---------------------------------------------------------------------------------------
# The method
# ---------------------------------------------------------------------------------------
#: a site model's result with fewer kept words than this is "nearly empty"
#: a page is judged with its site's evidence when at least this many other pages of the
#: site are in the model, else alone (see the module docstring)
MIN_OTHER_PAGES = 1
NEARLY_EMPTY_WORDS = 10
#: a page judged alone that keeps fewer than NEARLY_EMPTY_WORDS keeps the sentences scored
#: at least this share of its best one
RESCUE_SHARE = 0.5
#: the share of the site's other pages sharing the page's template (its cohort) from
#: which the site's evidence is taken alone; below it the page's own verdict is blended in
COHORT_TRUSTED = 0.7
#: ... or, judged by one other page only, less than this share of the page's words while
#: the page alone keeps three times as much (measured on all sites with more other pages,
#: this check cost sites-dev's site mode, so it is kept to this case)
ONE_OTHER_SHARE = 0.1
#: the share of the page's main container that recurs on the site from which the page
#: scorer's verdict may keep a sentence there (see HybridMethod._with_page_verdict)
MAIN_RECURRING = 0.3
#: ... and of the wide one (nine tenths of the page's own text), where a reference page's
#: inherited listings sit beside its main container
WIDE_RECURRING = 0.5


def _without_site_template(view: PageView, rows: list, probs: list) -> list:
    """The page scorer's ``probs`` with the site's template sentences (``rows``: the site
    rows of the same sentences) at 0: a page judged alone cannot tell the site's nav bar
    from its own matter, the site's evidence can. Unchanged when the page has a single
    other page to compare with: what recurs on it may be a copy of the page ("/" and
    "/index.html"), not a template."""
    if view.recur_df < 2:
        return probs
    return [0.0 if _site_template(f) else p for (_b, _s, f), p in zip(rows, probs)]


def _main_matter(f: list) -> bool:
    """In the page's main container, not named as boilerplate, mostly not link text."""
    return f[_IN_MAIN] > 0.5 and f[_HINT_BOILER] < 0.5 and f[_LINK_DENSITY] < 0.5


def _page_has_say(first: list) -> Optional[Callable[[list], bool]]:
    """Which of a page's rows the page scorer may keep (see
    HybridMethod._with_page_verdict), from the page's first row: None, those of the main
    container where MAIN_RECURRING of it recurs, those of the wide one (not named as
    boilerplate, links too: an inherited member's name is a link) where WIDE_RECURRING of
    it does."""
    main = first[_MAIN_TMPL] >= MAIN_RECURRING
    if first[_WIDE_TMPL] >= WIDE_RECURRING:
        return lambda f: (main and _main_matter(f)) or (f[_IN_WIDE] > 0.5 and f[_HINT_BOILER] < 0.5)
    return _main_matter if main else None


def _is_comment_prose(f: list, b: BlockInfo, s: SentenceInfo) -> bool:
    """A sentence of a reader's comment: prose (four words or more, mostly not link text)
    inside a container named as comments. The scorer follows the article convention and
    drops comments; ``include_comments=True`` keeps what this says is one."""
    blk = b.block
    return f[_HINT_COMMENT] > 0.5 and s.n_words >= 4 and blk.link_chars * 2 < len(blk.text)


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

    def score_page(self, page: PreparedPage) -> tuple[PageAnalysis, list, list]:
        """(analysis, rows, probabilities): every sentence of the page with its score."""
        pa = analyse_page(page, site=self.stats.n_pages > 0)  # else judged alone
        return (pa,) + self._score(pa, self._page_view(pa))

    def _page_view(self, pa: PageAnalysis) -> Optional[PageView]:
        """The site's evidence about the page (None before any fit, or for an analysis
        made before it, to be judged alone: a page learnt meanwhile changes nothing)."""
        return self.stats.page_view(pa) if self.stats.n_pages and pa.keyed else None

    def _judge(self, pa: PageAnalysis, view: Optional[PageView], plain: Optional[dict]) -> tuple[list, Any]:
        """(rows, the scorer's probabilities) of the page's sentences, judged with
        ``view``, or alone when it is None; ``plain``: the dict kept across the calls for
        one page (see :func:`cetd_region`), which also keeps the judgement alone: the
        cohort's blend and the nearly-empty check both ask for it."""
        if view is None and plain is not None and "alone" in plain:
            return plain["alone"]
        region = cetd_region(pa, view, plain)
        check_budget()
        rows = sentence_features(view, pa, region)
        check_budget()
        judged = rows, self._scorers.predict(rows, view is None) if rows else []
        check_budget()
        if view is None and plain is not None:
            plain["alone"] = judged
        return judged

    def _score(self, pa: PageAnalysis, view: Optional[PageView], plain: Optional[dict] = None) -> tuple[list, list]:
        """(rows, probabilities) of the page's sentences, judged with ``view`` (None, or
        fewer than MIN_OTHER_PAGES other pages: the page alone); ``plain``: see
        :func:`cetd_region`."""
        if view is not None and view.n_other < MIN_OTHER_PAGES:
            view = None
        rows, probs = self._judge(pa, view, plain)
        if not rows:
            return rows, []
        if view is not None:
            probs = self._with_page_verdict(pa, rows, probs, plain)
        out = self._apply_rules(rows, probs, view is None)
        if view is None:
            self._rescue(rows, out)
        return rows, out

    def _with_page_verdict(self, pa: PageAnalysis, rows: list, probs: Any, plain: Optional[dict]) -> Any:
        """The site scorer's verdict where the page's own has a say. Where the site's
        recurring text reaches into the page's main container (MAIN_RECURRING of it
        recurs: a reference page's shared listings), a sentence there, not named as
        boilerplate and mostly not link text, keeps the page scorer's verdict when that
        is higher; where it reaches into the wide container (WIDE_RECURRING of it), so
        does any sentence there not named as boilerplate. The site's evidence is as
        good as the share of the site's pages that share the page's template (its
        cohort): below COHORT_TRUSTED the page's own verdict takes the rest of the
        weight."""
        first = rows[0][2]
        trust = min(1.0, first[_COHORT] / COHORT_TRUSTED)
        say = _page_has_say(first)
        if trust >= 1.0 and say is None:
            return probs
        alone = self._judge(pa, None, plain)[1]
        if say is not None:
            probs = [max(p, q) if say(f) else p for (_b, _s, f), p, q in zip(rows, probs, alone)]
        if trust < 1.0:
            probs = [trust * p + (1.0 - trust) * q for p, q in zip(probs, alone)]
        return probs

    def _rescue(self, rows: list, probs: list) -> None:
        """A page judged alone that keeps (almost) nothing keeps, in place, what the
        scorer rates at least RESCUE_SHARE of its best sentence: a reader who fetched
        the page came for something on it, and the scorer's ranking is still its best
        guess of what."""
        if self._kept_words(rows, probs) >= NEARLY_EMPTY_WORDS:
            return
        best = max(probs, default=0.0)
        if best <= 0.0:
            return
        floor = RESCUE_SHARE * best
        for i, p in enumerate(probs):
            if p >= floor:
                probs[i] = max(p, self.threshold)

    def _apply_rules(self, rows: list, probs: Any, alone: bool) -> list:
        """The scorers' probabilities with the two conventions made rules, in one pass:
        a sentence in a container named as boilerplate (related, share, footer...) goes
        when it lies outside the page's main prose container, or when it recurs across
        the site in a node wholly template, whatever its place on the page says;
        whatever lies in a container named as comments goes, the readers' prose and the
        names, dates and reply links around it, inside the page's main prose container
        too (a thread nested in the article's container), unless ``include_comments``
        keeps all comment prose. A name only the page's wrapper carries says nothing
        (see local_hints), nor do names outside a prose container that is itself named
        as boilerplate (a blog's comma-rich profile box chosen over the post, both in
        "widget" containers). A figure's text (captions, photo credits) goes too, unless
        figures hold half of the page's words: then they are what the page is."""
        out = []
        words = sum(s.n_words for _b, s, _f in rows)
        figures = words > 2 * sum(s.n_words for _b, s, f in rows if f[_IN_FIGURE] > 0.5)
        top = [(s.n_words, f[_HINT_BOILER] > 0.5) for _b, s, f in rows if f[_IN_TOP] > 0.5]
        top_words = sum(n for n, _named in top)
        names_say = not (top_words and 2 * sum(n for n, named in top if named) >= top_words)
        for (b, s, f), p in zip(rows, probs):
            if figures and f[_IN_FIGURE] > 0.5:
                p = 0.0
            outside = names_say and f[_HINT_BOILER] > 0.5 and f[_IN_TOP] < 0.5
            if outside or (not alone and _recurring_boilerplate(f)):
                p = 0.0
            if self.include_comments:
                if _is_comment_prose(f, b, s):
                    p = 1.0
            elif f[_HINT_COMMENT] > 0.5:
                p = 0.0
            out.append(p)
        return out

    def clean(self, page: PreparedPage) -> CleanResult:
        pa = analyse_page(page, site=self.stats.n_pages > 0)  # else judged alone
        check_budget()
        view = self._page_view(pa)
        plain: dict = {}
        rows, probs = self._score(pa, view, plain)
        check_budget()
        if view is None:
            return self._result(page, pa, rows, probs, "default(page-level)")
        if view.n_other < MIN_OTHER_PAGES:  # judged alone already: nothing to fall back to
            return self._result(page, pa, rows, probs, "default")
        kept = self._kept_words(rows, probs)
        # against a single other page, a copy of the page ("/" and "/index.html") makes
        # everything recur: a verdict keeping little of the page is checked as well
        suspect = view.n_other == 1 and kept < ONE_OTHER_SHARE * sum(s.n_words for _b, s, _f in rows)
        if kept < NEARLY_EMPTY_WORDS or suspect:
            # The site's evidence left (almost) nothing: a page whose own matter recurs
            # across the site, or a page unlike the sample. The page-level verdict is the
            # better guess, and the status says the site model did not make it.
            bar = kept if kept < NEARLY_EMPTY_WORDS else 3 * kept
            alone_rows, alone_probs = self._score(pa, None, plain)
            if self._kept_words(alone_rows, alone_probs) > bar:
                own = _without_site_template(view, rows, alone_probs)
                if self._kept_words(alone_rows, own) > bar:
                    result = self._result(page, pa, alone_rows, own, "default(page-level)")
                else:
                    # all the page alone adds is the site's template: a stub page (the
                    # site's nav, header and footer around a title) has nothing more
                    # than the site model kept, often nothing, and says so
                    result = self._result(page, pa, rows, probs, "default")
                result.status = STATUS_SITE_EMPTY
                return result
        return self._result(page, pa, rows, probs, "default")

    def _kept_words(self, rows: list, probs: list) -> int:
        return sum(s.n_words for (_b, s, _f), p in zip(rows, probs) if p >= self.threshold)

    def _result(self, page: PreparedPage, pa: PageAnalysis, rows: list, probs: list, method: str) -> CleanResult:
        """Blocks labelled by their sentences: a block is informative when one of its
        sentences is kept, and scores the mean of its sentences' probabilities."""
        threshold = self.threshold
        xpath_of = page.xpath_of
        blocks: list[Block] = []
        lines: list[str] = []
        sentences: list[str] = []
        # rows hold every sentence of every block, block after block (sentence_features),
        # so a block's rows are the next len(b.sentences)
        i = 0
        for bi, b in enumerate(pa.blocks):
            if not bi & 127:
                check_budget()
            n = len(b.text_info.sentences)
            total = 0.0
            kept: list[str] = []
            for j in range(i, i + n):
                p = probs[j]
                total += p
                if p >= threshold:
                    kept.append(rows[j][1].text)
            blk = b.block
            label = INFORMATIVE if kept else NOISE
            blocks.append(Block(xpath_of(blk.element), blk.text, label, total / max(1, n), kept))
            if kept:
                lines.append(" ".join(kept))
                sentences.extend(kept)
            i += n
        return CleanResult(text="\n".join(lines), sentences=sentences, blocks=blocks, method=method, title=page.title)

    def to_dict(self) -> dict:
        return {"site_stats": self.stats.to_dict()}

    @classmethod
    def from_dict(cls, state: dict, **params: Any) -> "HybridMethod":
        obj = cls(**params)
        obj.stats = SiteStats.from_dict(state["site_stats"])
        return obj
