"""Why a page was cleaned as it was: the evidence behind each block, and a report to read it.

    from sst_cleaner import SiteCleaner, explain
    cleaner = SiteCleaner().fit(pages)
    why = cleaner.explain(html, url)        # a PageExplanation
    report = explain(pages, "report.html")  # fits a cleaner, writes one HTML report

:func:`explain_page` cleans the page the normal way (``SiteCleaner.clean``: the labels
and status a user gets) and then, apart from it, reads the evidence again: for the
default method, the scorer's inputs of every sentence (``HybridMethod.score_page``, a
public read-only call that changes nothing in the model), and the paper's page-level
method (CETD) on the same page. Cleaning itself is never instrumented, so explaining
costs the normal path nothing; an explanation costs about three cleans.

:func:`render_report` writes explanations as one self-contained HTML file: inline CSS
allowed by its hash in a strict Content-Security-Policy, no script, no external resource,
no link out of the report; every string that comes from a page is escaped, and the
report's size is bounded (pages, blocks per page, characters per text).
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from sst_cleaner.engine._dom import as_page
from sst_cleaner.engine._limits import run_with_budget
from sst_cleaner.engine._result import INFORMATIVE, CleanResult

if TYPE_CHECKING:
    from sst_cleaner.engine._cleaner import SiteCleaner

#: pages a report shows by default, and at most whatever is asked (a report is read by a
#: person in a browser: past a few hundred pages it is neither readable nor quick to open)
DEFAULT_REPORT_PAGES = 50
MAX_REPORT_PAGES = 500
#: blocks shown per page; the rest are counted
MAX_BLOCKS_PER_PAGE = 400
#: characters of the whole report past which the remaining pages are listed, not shown
MAX_REPORT_CHARS = 16_000_000
#: characters of a block's text shown, and of the start of each sentence listed with its score
MAX_BLOCK_CHARS = 600
MAX_SENTENCE_CHARS = 60
#: sentences listed per block with their scores
MAX_SENTENCES_PER_BLOCK = 8
#: characters of a page's name or URL, of a node's style path and of a page title
MAX_NAME_CHARS = 300
#: template nodes listed per page
MAX_TEMPLATE_NODES = 40
#: a node is listed as template when at least this share of its text recurs on the site
TEMPLATE_NODE_SHARE = 0.5

#: the default method's features shown for a block, their short names and what they mean;
#: the values of a block's first sentence for block-wide features, the mean over its
#: sentences for the sentence ones (SENTENCE_FEATURES)
EVIDENCE = (
    ("node_share", "node template", "share of the block's node's text recurring across the site (SST)"),
    ("node_rate", "node recurrence", "the site's pages having the block's node (share of the page's template cohort)"),
    ("sent_rec", "sentence recurrence", "the site's pages carrying the block's sentences (mean share of the cohort)"),
    ("sent_rec2", "sentences on 2+ pages", "share of its sentences on two or more other pages (informative sentences)"),
    ("entropy", "entropy", "sentence entropy E(S) over the node's pages (mean; informative sentences)"),
    ("link_density", "link density", "share of the block's text inside links"),
    ("in_cetd", "CETD region", "inside CETD's content region, the site's template zeroed (1 yes, 0 no)"),
    ("in_cetd_top", "CETD top", "inside CETD's subtree of largest DensitySum (1 yes, 0 no)"),
    ("in_main", "main container", "inside the page's main container, most of its non-template text (1 yes, 0 no)"),
    ("in_top", "prose container", "inside the densest prose container, as a reader view scores it (1 yes, 0 no)"),
    ("in_article", "article", "inside <article> or <main> (1 yes, 0 no)"),
    ("hint_boiler", "named boilerplate", "a container named as boilerplate: related, share, footer... (1 yes, 0 no)"),
    ("hint_comment", "named comments", "a container named as comments (1 yes, 0 no)"),
    ("in_nav_like", "nav-like", "inside header, footer, nav, aside or form (1 yes, 0 no)"),
    ("cohort", "cohort", "the page's template cohort: share of other pages sharing its most common node"),
)
SENTENCE_FEATURES = frozenset(("sent_rec", "sent_rec2", "entropy"))

#: the two colours of the report (a test finds them in a rendering of it)
KEPT_COLOUR = "#b7e4c7"
REMOVED_COLOUR = "#f4b6b6"


@dataclass
class BlockExplanation:
    """One text block: the verdict the user got and the evidence behind it.

    ``evidence``: the default method's inputs (see :data:`EVIDENCE`), empty for other
    methods; ``sentences``: (text, probability, kept) per sentence (default method);
    ``verdicts``: what each paper method alone says of the block (``"kept"``,
    ``"removed"``, or absent when it has no block at this place)."""

    xpath: str
    text: str
    label: str
    score: float
    evidence: dict = field(default_factory=dict)
    sentences: list = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)
    node: str = ""  # the block's style path, as tags (default method)

    @property
    def kept(self) -> bool:
        return self.label == INFORMATIVE


@dataclass
class TemplateNode:
    """A style node of the page that the site model holds as template."""

    path: str
    pages: int  # pages of the site model having the node
    share: float  # share of its text recurring on the site
    blocks: int  # blocks of this page in the node


@dataclass
class PageExplanation:
    """Everything the report shows of one page."""

    name: str
    url: Optional[str]
    title: str
    status: str
    method: str
    decided: str  # which step of the cleaning made the verdict, in words
    words_kept: int
    words_total: int
    blocks: list[BlockExplanation]
    template_nodes: list[TemplateNode] = field(default_factory=list)
    site_pages: int = 0
    notes: list[str] = field(default_factory=list)
    threshold: Optional[float] = None
    site: str = ""  # the site the page was cleaned as part of, when there are several


# -- explaining -------------------------------------------------------------------------


def explain_page(
    cleaner: "SiteCleaner", page: Any, url: Optional[str] = None, name: Optional[str] = None
) -> PageExplanation:
    """Clean ``page`` with ``cleaner`` and explain the verdict (see the module docstring).

    ``page``: what :meth:`SiteCleaner.clean` takes. The evidence is read within the
    cleaner's page time budget; past it the explanation says so and has the labels only."""
    result = cleaner.clean(page, url)
    source = result.source if result.source is not None else page
    blocks = [BlockExplanation(b.xpath, b.text, b.label, float(b.score)) for b in result.blocks]
    notes: list[str] = []
    impl = cleaner._impl
    exp = PageExplanation(
        name=name or url or _url_of(source) or "page",
        url=url or _url_of(source),
        title=result.title,
        status=result.status,
        method=result.method,
        decided=decision(result, cleaner, cleaner.n_pages - (1 if cleaner.has_learnt(page, url) else 0)),
        words_kept=len(result.text.split()),
        words_total=sum(len(b.text.split()) for b in result.blocks),
        blocks=blocks,
        site_pages=cleaner.n_pages,
        notes=notes,
        threshold=getattr(impl, "threshold", None),
    )
    if result.status == "over_budget":
        notes.append("cleaning ran out of the page's time budget: no evidence was read")
        return exp
    budget = cleaner.limits.page_time_budget or None
    # the verdict is the clean's: evidence that cannot be read costs the page its evidence
    # (said in a note), never its place in the report
    if hasattr(impl, "score_page") and hasattr(impl, "stats"):
        try:
            ok, got = run_with_budget(lambda: _default_evidence(cleaner, impl, source, url, blocks), budget)
        except Exception as exc:
            ok, got = True, None
            notes.append(f"the evidence could not be read: {exc!r}")
        if ok and got is not None:
            exp.template_nodes = got
            if result.status == "site_empty" and result.method.endswith("(page-level)"):
                notes.append(
                    "the site model kept almost nothing, so the page-level scorer decided: the labels and "
                    "block scores are its, the sentences' probabilities shown are the site model's"
                )
        elif not ok:
            notes.append("the evidence took longer than the page's time budget: not shown")
    else:
        notes.append(f"method {cleaner.method!r} gives a score per block, no further evidence")
    try:
        ok, _ = run_with_budget(lambda: _cetd_verdicts(cleaner, source, url, blocks), budget)
        if not ok:
            notes.append("CETD's own verdict took longer than the page's time budget: not shown")
    except Exception as exc:
        notes.append(f"CETD's own verdict could not be read: {exc!r}")
    return exp


def _url_of(source: Any) -> Optional[str]:
    if isinstance(source, tuple) and source and isinstance(source[0], str) and source[0]:
        return source[0]
    return None


def decision(result: CleanResult, cleaner: "SiteCleaner", others: int) -> str:
    """The step of the cleaning that decided the page (see ``CleanResult.status``), in words;
    ``others``: the pages of the site model other than this one."""
    cut = "the page was cut by a size cap before cleaning; " if result.status == "truncated" else ""
    if result.status == "over_budget":
        if result.method == "cetd" and cleaner.method != "cetd":
            return "over budget: cleaning ran out of the page's time budget, so CETD (page-level) decided"
        return "over budget: cleaning ran out of the page's time budget and the page was returned whole"
    if result.status == "empty_fallback":
        how = "CETD (page-level)" if result.method == "cetd" else "the page's longest prose block"
        return f"the method kept no text of a page with prose (empty_fallback): {how} decided"
    if result.status == "site_empty":
        if result.method.endswith("(page-level)"):
            return (
                "site model kept almost nothing (site_empty): the page-level scorer decided, "
                "less the site's template sentences"
            )
        return (
            "site model kept almost nothing (site_empty) and the page alone adds only the site's "
            "template (a stub page): what the site model kept"
        )
    if result.method.endswith("(page-level)"):
        why = "the cleaner has learnt no page of the site" if not cleaner.n_pages else "no other page of the site"
        return cut + f"page-level fallback: judged alone ({why})"
    if result.method == "default":
        if others > 0:
            return cut + f"site model: judged with the evidence of the site's {others} other learnt pages"
        return cut + "judged alone: the site model has no other page of the site"
    if result.method != cleaner.method:
        return cut + f"method {cleaner.method!r} fell back to {result.method!r}"
    return cut + f"method {result.method!r}" + (f" with a model of {cleaner.n_pages} pages" if cleaner.n_pages else "")


def _by_xpath(blocks: list[BlockExplanation]) -> dict:
    """xpath -> the blocks at it, in page order (two blocks may share an element)."""
    out: dict = {}
    for b in blocks:
        out.setdefault(b.xpath, []).append(b)
    return out


def _default_evidence(
    cleaner: "SiteCleaner", impl: Any, source: Any, url: Optional[str], blocks: list[BlockExplanation]
) -> list[TemplateNode]:
    """The default method's scorer inputs per block (written into ``blocks``) and the page's
    template nodes, read with its public ``score_page`` on a page parsed again."""
    from sst_cleaner.engine.methods.sitestats.hybrid import FEATURE_NAMES

    position = {n: i for i, n in enumerate(FEATURE_NAMES)}
    page = as_page(source, url, cleaner.limits)
    pa, rows, probs = impl.score_page(page)
    targets = _by_xpath(blocks)
    taken: dict = {}
    nodes: dict = {}
    i = 0
    for b in pa.blocks:
        n = len(b.text_info.sentences)
        mine = rows[i : i + n]
        mine_p = probs[i : i + n]
        i += n
        xpath = page.xpath_of(b.block.element)
        k = taken.get(xpath, 0)
        taken[xpath] = k + 1
        at = targets.get(xpath, [])
        tags = tuple(b.ancestors)
        path = "/".join(tags if tags[-1:] == (b.tag,) else (*tags, b.tag))[-MAX_NAME_CHARS:]
        if b.key:
            seen = nodes.setdefault(b.key, [path, 0])
            seen[1] += 1
        if k >= len(at) or not mine:
            continue
        target = at[k]
        target.node = path
        first = mine[0][2]
        for name, _short, _doc in EVIDENCE:
            j = position[name]
            if name in SENTENCE_FEATURES:
                target.evidence[name] = sum(f[j] for _b, _s, f in mine) / len(mine)
            else:
                target.evidence[name] = first[j]
        target.sentences = [(s.text, float(p), p >= impl.threshold) for (_b, s, _f), p in zip(mine, mine_p)]
    stats = impl.stats
    if not stats.n_pages:
        return []
    min_df = max(1, min(2, stats.n_pages))
    out = []
    for key, (path, count) in nodes.items():
        share = stats.node_template_share(key, min_df)
        if share >= TEMPLATE_NODE_SHARE:
            out.append(TemplateNode(path, int(stats.node_df.get(key, 0)), share, count))
    out.sort(key=lambda t: (-t.share, -t.pages, t.path))
    return out[:MAX_TEMPLATE_NODES]


def _cetd_verdicts(cleaner: "SiteCleaner", source: Any, url: Optional[str], blocks: list[BlockExplanation]) -> None:
    """CETD (the text-density paper's method, page by page) on the same page: its verdict
    on each block at the same place."""
    from sst_cleaner.engine._cleaner import SiteCleaner

    cetd = SiteCleaner("cetd", limits=cleaner.limits).clean(source, url)
    if cetd.status == "over_budget":
        return
    theirs = _by_xpath([BlockExplanation(b.xpath, b.text, b.label, b.score) for b in cetd.blocks])
    seen: dict = {}
    for b in blocks:
        k = seen.get(b.xpath, 0)
        seen[b.xpath] = k + 1
        at = theirs.get(b.xpath, [])
        if k < len(at):
            b.verdicts["CETD"] = "kept" if at[k].kept else "removed"


def explain(
    pages: Iterable[Any],
    output: Union[str, "os.PathLike[str]", None] = None,
    *,
    cleaner: Optional["SiteCleaner"] = None,
    method: Optional[str] = None,
    max_pages: int = DEFAULT_REPORT_PAGES,
    title: str = "sst-cleaner: why each block was kept or removed",
) -> str:
    """The HTML report (see :func:`render_report`) of the first ``max_pages`` of ``pages``
    (pages of ONE site, as :meth:`SiteCleaner.fit` takes them), written to ``output`` when
    given. Without ``cleaner``, one is learnt from ``pages`` (``method``: the default one);
    with it, ``pages`` are only explained."""
    from sst_cleaner.engine._cleaner import SiteCleaner
    from sst_cleaner.engine._registry import DEFAULT_METHOD

    max_pages = check_max_pages(max_pages)
    pages = list(pages)
    if cleaner is None:
        cleaner = SiteCleaner(method or DEFAULT_METHOD).fit(pages)
    explained = [
        explain_page(cleaner, p, name=f"page {k}" if _url_of(p) is None else None)
        for k, p in enumerate(pages[:max_pages], 1)
    ]
    report = render_report(explained, title=title, not_shown=max(0, len(pages) - max_pages))
    if output is not None:
        write_report(output, report)
    return report


def check_max_pages(max_pages: int) -> int:
    if not isinstance(max_pages, int) or isinstance(max_pages, bool) or not 1 <= max_pages <= MAX_REPORT_PAGES:
        raise ValueError(f"max_pages must be a number from 1 to {MAX_REPORT_PAGES}, got {max_pages!r}")
    return max_pages


def write_report(path: Union[str, "os.PathLike[str]"], report: str) -> None:
    """Write ``report`` atomically (a crash never leaves half a report)."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(report)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# -- the report -------------------------------------------------------------------------

_CSS = f"""
body{{font:14px/1.45 sans-serif;margin:0 1.5em 3em;color:#1d1d1d;background:#fff}}
h1{{font-size:1.4em}} h2{{font-size:1.2em;margin-top:2em;border-top:3px solid #555;padding-top:.6em}}
h3{{font-size:1em;margin:1.2em 0 .4em}}
table{{border-collapse:collapse;margin:.4em 0}}
td,th{{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}}
.num{{text-align:right;font-variant-numeric:tabular-nums}}
.legend span{{display:inline-block;padding:0 .5em;margin-right:1em}}
.lk{{border:2px solid #1b7f3b}} .lr{{border:2px solid #b42318}}
.block{{margin:6px 0;padding:6px 8px;border:3px solid}}
.kept{{background:{KEPT_COLOUR};border-color:#1b7f3b}}
.removed{{background:{REMOVED_COLOUR};border-color:#b42318}}
.head{{font-size:12px;color:#333;margin-bottom:3px;font-family:monospace;word-break:break-all}}
.text{{white-space:pre-wrap;word-break:break-word}}
.ev{{font-size:12px;margin-top:4px}} .ev table{{background:#fff}}
.note{{color:#8a4b00}} .meta td:first-child{{font-weight:bold}}
.s-kept{{color:#135d2b}} .s-removed{{color:#8c1c13}}
.st-ok{{color:#135d2b}} .st-other{{color:#8a4b00}}
"""
_CSS_HASH = base64.b64encode(hashlib.sha256(_CSS.encode("utf-8")).digest()).decode("ascii")
#: nothing may load or run: the only thing allowed is the report's own style sheet, by hash
CSP = (
    f"default-src 'none'; style-src '{'sha256-' + _CSS_HASH}'; img-src 'none'; font-src 'none'; "
    "script-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; "
    "child-src 'none'; worker-src 'none'; manifest-src 'none'; form-action 'none'; base-uri 'none'"
)


def _clip(text: Any, limit: int) -> str:
    """``text`` as a string of at most ``limit`` characters (an ellipsis says it was cut)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _e(text: Any, limit: int = MAX_NAME_CHARS) -> str:
    """A string from a page, safe in HTML text and in quoted attributes: cut to ``limit``,
    control characters and lone surrogates (a file name that is not UTF-8) replaced, and
    ``& < > " '`` escaped."""
    text = _clip(text, limit)
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = "".join(c if c.isprintable() or c in "\n\t" else "\ufffd" for c in text)
    return html.escape(text, quote=True)


def _num(value: float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def render_report(
    pages: list[PageExplanation], *, title: str = "sst-cleaner explain", not_shown: int = 0, skipped: Iterable[str] = ()
) -> str:
    """One self-contained HTML document of ``pages`` (at most :data:`MAX_REPORT_PAGES`:
    the rest are counted with ``not_shown``; past :data:`MAX_REPORT_CHARS` the remaining
    pages are listed without their section); ``skipped``: inputs that could not be read
    or cleaned, listed as such."""
    if len(pages) > MAX_REPORT_PAGES:
        not_shown += len(pages) - MAX_REPORT_PAGES
        pages = pages[:MAX_REPORT_PAGES]
    skipped = list(skipped)
    sections: list[str] = []
    size = 0
    for k, p in enumerate(pages, 1):
        section = "\n".join(_page_section(k, p))
        size += len(section)
        if size > MAX_REPORT_CHARS:
            break
        sections.append(section)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP, quote=True)}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head><body>",
        f"<h1>{_e(title)}</h1>",
        '<p class="legend"><span class="lk">kept (informative)</span><span class="lr">removed (noise)</span></p>',
        "<details><summary>What the evidence of a block means</summary><table>",
        *(f"<tr><td>{_e(short)}</td><td>{_e(doc)}</td></tr>" for _name, short, doc in EVIDENCE),
        "<tr><td>sentences</td><td>each sentence's probability (kept at the threshold or above) "
        "and its start</td></tr>",
        "<tr><td>CETD</td><td>the verdict of CETD alone (the text-density paper's method, page by page)</td></tr>",
        "</table></details>",
        "<h2>Pages</h2>",
        '<table class="pages"><tr><th>#</th><th>page</th><th>status</th><th>decided by</th>'
        "<th>words kept</th><th>of</th></tr>",
    ]
    for k, p in enumerate(pages, 1):
        cls = "st-ok" if p.status == "ok" else "st-other"
        number = f'<a href="#p{k}">{k}</a>' if k <= len(sections) else str(k)
        out.append(
            f'<tr><td class="num">{number}</td><td>{_e(p.name)}</td>'
            f'<td class="{cls}">{_e(p.status)}</td><td>{_e(p.decided)}</td>'
            f'<td class="num">{p.words_kept}</td><td class="num">{p.words_total}</td></tr>'
        )
    out.append("</table>")
    if len(sections) < len(pages):
        out.append(
            f'<p class="note">The report reached its size cap: the last {len(pages) - len(sections)} pages '
            "of the list are not shown.</p>"
        )
    if not_shown:
        out.append(f'<p class="note">{not_shown} more pages not shown (the report shows at most the first ones).</p>')
    if skipped:
        out.append(f"<h3>Not explained ({len(skipped)})</h3><ul>")
        out.extend(f"<li>{_e(s)}</li>" for s in skipped[:MAX_REPORT_PAGES])
        out.append("</ul>")
    out.extend(sections)
    out.append("</body></html>\n")
    return "\n".join(out)


def _page_section(k: int, p: PageExplanation) -> list[str]:
    out = [f'<h2 id="p{k}">{k}. {_e(p.name)}</h2>', '<table class="meta">']
    rows = [
        ("URL", p.url or ""),
        ("site", p.site),
        ("title", p.title),
        ("status", p.status),
        ("method", p.method),
        ("decided by", p.decided),
        ("words kept", f"{p.words_kept} of {p.words_total}"),
        ("site model", f"{p.site_pages} pages learnt"),
    ]
    if p.threshold is not None:
        rows.append(("threshold", f"a sentence is kept when its probability is at least {_num(p.threshold)}"))
    for label, value in rows:
        if not value:
            continue
        out.append(f"<tr><td>{label}</td><td>{_e(value)}</td></tr>")
    out.append("</table>")
    for note in p.notes:
        out.append(f'<p class="note">{_e(note)}</p>')
    if p.template_nodes:
        out.append("<h3>The site model's template nodes on this page</h3>")
        out.append(
            "<table><tr><th>style path</th><th>pages of the model having it</th>"
            "<th>share of its text recurring</th><th>blocks here</th></tr>"
        )
        for t in p.template_nodes:
            out.append(
                f'<tr><td class="head">{_e(t.path)}</td><td class="num">{t.pages} of {p.site_pages}</td>'
                f'<td class="num">{_num(t.share)}</td><td class="num">{t.blocks}</td></tr>'
            )
        out.append("</table>")
    out.append(f"<h3>Blocks ({len(p.blocks)})</h3>")
    for b in p.blocks[:MAX_BLOCKS_PER_PAGE]:
        out.extend(_block(b))
    if len(p.blocks) > MAX_BLOCKS_PER_PAGE:
        out.append(f'<p class="note">{len(p.blocks) - MAX_BLOCKS_PER_PAGE} more blocks not shown.</p>')
    return out


_SHORT = {name: short for name, short, _doc in EVIDENCE}


def _block(b: BlockExplanation) -> list[str]:
    verdict = "kept" if b.kept else "removed"
    head = f"{verdict} · score {_num(b.score)} · {_e(b.xpath)}"
    if b.verdicts:
        head += " · " + ", ".join(f"{_e(m)}: {_e(v)}" for m, v in sorted(b.verdicts.items()))
    out = [
        f'<div class="block {verdict}"><div class="head">{head}</div>',
        f'<div class="text">{_e(b.text, MAX_BLOCK_CHARS)}</div>',
    ]
    if b.evidence:
        line = " · ".join(f"{_e(_SHORT.get(n, n))} {_num(float(v))}" for n, v in b.evidence.items())
        node = f"node {_e(b.node)} · " if b.node else ""
        out.append(f'<div class="ev">{node}{line}</div>')
    if b.sentences:
        shown = [
            f'<span class="{"s-kept" if kept else "s-removed"}">{_num(prob)} {_e(text, MAX_SENTENCE_CHARS)}</span>'
            for text, prob, kept in b.sentences[:MAX_SENTENCES_PER_BLOCK]
        ]
        more = len(b.sentences) - MAX_SENTENCES_PER_BLOCK
        if more > 0:
            shown.append(f"{more} more")
        out.append(f'<div class="ev">sentences: {" | ".join(shown)}</div>')
    out.append("</div>")
    return out
