"""The default method on a small generated site: template out, article sentences in."""

import math
import random

import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.engine.methods.sitestats.hybrid import FEATURE_NAMES, TreeEnsemble

SUBJECTS = "the council|our reporter|the new library|a local farmer|the river authority|the school board|a young engineer|the museum".split(
    "|"
)
VERBS = "announced|described|questioned|celebrated|postponed|reviewed|explained|defended".split("|")
OBJECTS = "a plan to repair the old bridge|the budget for next winter|the results of the water survey|an exhibition of early maps|the opening hours of the market|a proposal for safer cycling routes|the history of the harbour|new rules for street parking".split(
    "|"
)
TAILS = "after a long meeting on Tuesday|despite strong objections from residents|with support from volunteers|before the end of the month|in a statement published this morning|to the surprise of many visitors".split(
    "|"
)


def prose(rng: random.Random, n: int) -> list[str]:
    return [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."
        for _ in range(n)
    ]


def site_page(i: int) -> tuple[str, list[str]]:
    rng = random.Random(i)
    paras = [" ".join(prose(rng, 4)) for _ in range(5)]
    related = "".join(
        f'<li><a href="/a/{rng.randrange(999)}">Story number {rng.randrange(999)} headline</a></li>' for _ in range(5)
    )
    html = f"""<html><head><title>Article {i}</title></head><body>
<div id="cookie">We use cookies to improve your experience. Accept all cookies.</div>
<div class="header"><a href="/">Home</a> <a href="/news">News</a> <a href="/sport">Sport</a>
<a href="/weather">Weather</a> <a href="/contact">Contact us</a></div>
<div class="main"><div class="article"><h1>Headline of article {i} about {rng.choice(OBJECTS)}</h1>
{"".join(f"<p>{p}</p>" for p in paras)}
<div class="share">Share this article on Facebook. Share on Twitter.</div></div>
<div class="sidebar"><h3>Most read</h3><ul>{related}</ul>
<div class="ad">Advertisement: Buy the premium subscription today and save forty percent.</div></div></div>
<div class="footer">Copyright Example Gazette Limited. All rights reserved. Privacy policy. Terms of use.</div>
</body></html>"""
    return html, paras


TEMPLATE_PHRASES = [
    "We use cookies",
    "Contact us",
    "Share this article",
    "premium subscription",
    "All rights reserved",
    "Most read",
]


@pytest.fixture(scope="module")
def fitted():
    pages = [site_page(i)[0] for i in range(8)]
    return SiteCleaner().fit([(f"http://example.test/a/{i}", h) for i, h in enumerate(pages)])


def test_template_removed_and_article_kept_on_an_unseen_page(fitted):
    html, paras = site_page(100)
    result = fitted.clean(html, url="http://example.test/a/100")
    for phrase in TEMPLATE_PHRASES:
        assert phrase not in result.text
    kept = sum(1 for p in paras if p in result.text)
    assert kept >= 4, result.text
    assert result.method == "default"
    assert result.sentences and all(s in result.text for s in result.sentences)
    labels = {b.label for b in result.blocks}
    assert labels == {"informative", "noise"}


def test_page_in_the_sample_is_judged_by_the_others(fitted):
    html, paras = site_page(3)  # a page the model was fitted on
    result = fitted.clean(html)
    assert "All rights reserved" not in result.text
    assert sum(1 for p in paras if p in result.text) >= 4


def _rows_by_text(cleaner, html):
    from sst_cleaner.engine._dom import parse_html

    _, rows, _ = cleaner._impl.score_page(parse_html(html))
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    return {s.text: {name: f[i] for name, i in col.items()} for _b, s, f in rows}


def test_feature_groups_give_every_feature_once_in_the_declared_number(fitted):
    from collections import Counter

    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.engine.methods.sitestats import hybrid
    from sst_cleaner.engine.methods.sitestats.site_stats import analyse_page

    groups = hybrid._PAGE_GROUPS + hybrid._PATH_GROUPS + hybrid._BLOCK_GROUPS + hybrid._SENTENCE_GROUPS
    declared = Counter(name for g in groups for name in hybrid._GROUP_NAMES[g]) + Counter(hybrid._POST_PASS)
    assert declared == Counter(FEATURE_NAMES)
    pa = analyse_page(parse_html(site_page(100)[0]))
    impl = fitted._impl
    for view in (impl.stats.page_view(pa), None):
        pg = hybrid.PageContext(view, pa, hybrid.cetd_region(pa, view))
        for g in hybrid._PAGE_GROUPS:
            assert len(g(pg)) == len(hybrid._GROUP_NAMES[g])
        for bi, b in enumerate(pa.blocks):
            for g in hybrid._PATH_GROUPS + hybrid._BLOCK_GROUPS:
                assert len(g(pg, bi, b)) == len(hybrid._GROUP_NAMES[g]), g.__name__
            for s in b.sentences:
                for g in hybrid._SENTENCE_GROUPS:
                    assert len(g(pg, b, s)) == len(hybrid._GROUP_NAMES[g]), g.__name__


def test_a_feature_given_twice_or_never_is_refused(monkeypatch):
    from sst_cleaner.engine.methods.sitestats import hybrid

    monkeypatch.setitem(hybrid._GROUP_NAMES, hybrid._media, ("hint_media", "near_media", "in_li"))
    with pytest.raises(RuntimeError, match=r"twice \['in_li'\], missing \['in_figure'\]"):
        hybrid._assembly()
    # a row is the groups' values joined: FEATURE_NAMES must list them in that order
    monkeypatch.setitem(hybrid._GROUP_NAMES, hybrid._media, ("near_media", "hint_media", "in_figure"))
    with pytest.raises(RuntimeError, match="another order"):
        hybrid._assembly()


def test_rows_are_assembled_by_name(fitted):
    # the vector follows FEATURE_NAMES (the groups' order, checked by _assembly)
    rows = _rows_by_text(fitted, site_page(100)[0])
    for feats in rows.values():
        assert feats["bias"] == 1.0
        assert feats["cohort"] > 0
        assert feats["log_page_chars"] > 0


@pytest.mark.parametrize("fitted_on", [[0], [0, 1]])
def test_with_one_other_page_what_both_carry_counts_as_template(fitted_on):
    # a two-page site: a page is judged by the only other one (fitted on one page, or
    # one of the two judged without itself). A sentence both pages carry is as much
    # template evidence as one on >= 2 other pages of a bigger site; before, the
    # recurrence flags needed 2 other pages and stayed 0, as if the site were unknown.
    cleaner = SiteCleaner().fit([site_page(i)[0] for i in fitted_on])
    html, paras = site_page(1)
    rows = _rows_by_text(cleaner, html)
    footer = rows["Copyright Example Gazette Limited."]
    assert footer["sent_rec"] == 1.0 and footer["sent_rec2"] == 1.0
    first = rows[prose(random.Random(1), 1)[0]]  # the article's first sentence
    assert first["sent_rec"] == 0.0 and first["sent_rec2"] == 0.0
    assert first["page_tmpl"] > 0.2  # the page knows how much of it is template
    # a node's site-wide template share needs 2 other pages to mean anything: none yet
    assert footer["node_share"] == first["node_share"] == 0.0


def test_a_copy_as_the_only_other_page_does_not_erase_the_page():
    # "/" and "/index.html" of a two-page site: everything recurs, nothing is template
    html, paras = site_page(1)
    for other in (html, html.replace("Article 1", "Article 1 (print version)")):
        result = SiteCleaner().fit([html, other]).clean(html)
        assert sum(1 for p in paras if p in result.text) >= 4, result.text


def test_on_a_bigger_site_one_chance_repeat_is_not_template():
    pages = [site_page(i)[0] for i in range(4)]
    twin = pages[0].replace("Most read", "Editors pick")  # shared by page 0 and the cleaned page only
    cleaner = SiteCleaner().fit([twin] + pages[1:])
    html = site_page(9)[0].replace("Most read", "Editors pick")
    rows = _rows_by_text(cleaner, html)
    assert rows["Editors pick"]["sent_rec"] == pytest.approx(1 / 4)
    assert rows["Editors pick"]["sent_rec2"] == 0.0  # on 1 of 4 other pages
    assert rows["Copyright Example Gazette Limited."]["sent_rec2"] == 1.0


def test_a_story_every_page_of_the_site_shares_is_kept():
    # six pages whose articles share their wording (a syndicated story under six URLs,
    # in a template whose chrome changes from page to page): every sentence recurs
    # site-wide, so the site's evidence would keep nothing
    rng = random.Random(7)
    paras = [" ".join(prose(rng, 4)) for _ in range(5)]
    pages = []
    for i in range(6):
        r = random.Random(100 + i)
        nav = " ".join(f'<a href="/{r.randrange(999)}">Section {r.randrange(999)}</a>' for _ in range(4))
        pages.append(
            f"<html><body><div class='nav'>{nav}</div><div class='story'><h1>The shared story</h1>"
            + "".join(f"<p>{p}</p>" for p in paras)
            + "</div></body></html>"
        )
    cleaner = SiteCleaner().fit(pages[1:])
    result = cleaner.clean(pages[0])
    # the story is the page's main container and all of it recurs: the page's own
    # verdict has its say there, and the story is kept
    assert sum(1 for p in paras if p in result.text) >= 4, result.text
    assert result.status == "ok" and result.method == "default"
    # an ordinary page of an ordinary site is not affected
    fitted = SiteCleaner().fit([site_page(i)[0] for i in range(6)])
    normal = fitted.clean(site_page(50)[0])
    assert normal.status == "ok" and normal.method == "default"


def test_a_site_verdict_keeping_nothing_falls_back_to_the_page_and_says_so(monkeypatch):
    fitted = SiteCleaner().fit([site_page(i)[0] for i in range(6)])
    html, paras = site_page(51)
    # a site scorer keeping nothing, a page scorer keeping the article's prose
    monkeypatch.setattr(
        fitted._impl._scorers,
        "predict",
        lambda rows, alone: [1.0 if alone and len(s.text) > 60 else 0.0 for _b, s, _f in rows],
    )
    result = fitted.clean(html)
    assert result.status == "site_empty"
    assert result.method == "default(page-level)"
    assert all(p in result.text for p in paras), result.text


COMMENTS = [
    "I have lived here for twenty years and the bridge was always a problem for the buses.",
    "Thanks for reporting this, my children cross that road every single morning.",
    "Does anyone know whether the market will stay open during the repairs next winter?",
]


def page_with_comments(i: int) -> tuple[str, list[str]]:
    html, paras = site_page(i)
    thread = "".join(
        f'<li class="comment"><div class="comment-author"><a href="/u/{k}">reader{k}</a></div>'
        f'<div class="comment-body"><p>{c}</p></div></li>'
        for k, c in enumerate(COMMENTS)
    )
    section = (
        f'<div id="comments" class="comments-area"><h3>3 comments</h3><ol class="comment-list">{thread}</ol></div>'
    )
    return html.replace('<div class="sidebar">', section + '<div class="sidebar">'), paras


@pytest.mark.parametrize("fit", [False, True])
def test_comments_are_left_out_unless_asked_for(fit):
    pages = [page_with_comments(i)[0] for i in range(6)]
    html, paras = page_with_comments(77)
    plain, keeping = SiteCleaner(), SiteCleaner(include_comments=True)
    if fit:
        plain.fit(pages)
        keeping.fit(pages)
    text = plain.clean(html).text
    assert sum(1 for p in paras if p in text) >= 4, text
    assert not any(c in text for c in COMMENTS), text
    kept = keeping.clean(html).text
    assert all(c in kept for c in COMMENTS), kept
    assert sum(1 for p in paras if p in kept) >= 4, kept


def test_comment_prose_outside_the_main_container_goes_whatever_the_scorer_says(monkeypatch):
    # a scorer that keeps every sentence: the convention rule alone drops the comments,
    # which sit outside the article's prose container; the article stays
    html, paras = page_with_comments(77)
    cleaner = SiteCleaner()
    monkeypatch.setattr(cleaner._impl._scorers, "predict", lambda rows, alone: [1.0] * len(rows))
    text = cleaner.clean(html).text
    assert all(p in text for p in paras), text
    assert not any(c in text for c in COMMENTS), text
    assert "Most read" not in text  # named sidebar, outside the article: the boilerplate rule
    keeping = SiteCleaner(include_comments=True)
    monkeypatch.setattr(keeping._impl._scorers, "predict", lambda rows, alone: [1.0] * len(rows))
    assert all(c in keeping.clean(html).text for c in COMMENTS)


def test_a_thread_nested_in_the_article_s_container_goes_too(monkeypatch):
    # the thread sits inside the article's prose container: its name alone says it is
    # the readers', and a scorer keeping every sentence does not bring it back
    html, paras = page_with_comments(78)
    html = html.replace('<div id="comments"', '<div id="moved"', 1)
    start, end = html.index('<div id="moved"'), html.index('<div class="sidebar">')
    section = html[start:end].replace('<div id="moved"', '<div id="comments"', 1)
    html = html[:start] + html[end:]
    html = html.replace('<div class="share">', section + '<div class="share">', 1)
    cleaner = SiteCleaner()
    monkeypatch.setattr(cleaner._impl._scorers, "predict", lambda rows, alone: [1.0] * len(rows))
    text = cleaner.clean(html).text
    assert all(p in text for p in paras), text
    assert not any(c in text for c in COMMENTS), text
    assert "reader1" not in text


def test_boilerplate_named_text_outside_the_article_goes_and_inside_it_is_the_scorer_s(monkeypatch):
    # a scorer keeping every sentence: what sits in containers named sidebar, share or
    # footer outside the article's prose container goes by rule; a box named like
    # boilerplate inside the article is left to the scorer, as is an unnamed aside
    html, paras = site_page(79)
    box = '<div class="related-note"><p>This story was updated with the council statement.</p></div>'
    aside = '<div class="aside-box"><p>Opening hours of the town library this week.</p></div>'
    html = html.replace("</h1>", "</h1>" + box, 1).replace('<div class="footer">', aside + '<div class="footer">', 1)
    cleaner = SiteCleaner()
    monkeypatch.setattr(cleaner._impl._scorers, "predict", lambda rows, alone: [1.0] * len(rows))
    text = cleaner.clean(html).text
    assert all(p in text for p in paras), text
    for gone in ("Most read", "premium subscription", "All rights reserved"):
        assert gone not in text, (gone, text)
    # inside the article's container (its share box too) the scorer decides
    assert "council statement" in text and "Share this article" in text, text
    assert "town library" in text, text


def test_a_figure_s_caption_goes_unless_figures_are_the_page(monkeypatch):
    # a scorer keeping every sentence: the photo's caption and credit inside the
    # article go by rule; a page that is mostly figures (a gallery) keeps them
    html, paras = site_page(80)
    figure = (
        '<figure><img src="/p/1.jpg" alt=""><figcaption>Workers on the bridge at dawn on Monday. '
        "Photo: Example Agency</figcaption></figure>"
    )
    html = html.replace("</h1>", "</h1>" + figure, 1)
    cleaner = SiteCleaner()
    monkeypatch.setattr(cleaner._impl._scorers, "predict", lambda rows, alone: [1.0] * len(rows))
    text = cleaner.clean(html).text
    assert all(p in text for p in paras), text
    assert "Workers on the bridge" not in text and "Example Agency" not in text, text
    gallery = "".join(
        f'<figure><img src="/p/{k}.jpg" alt=""><figcaption>{p}</figcaption></figure>' for k, p in enumerate(paras)
    )
    page = f"<html><body><h1>Pictures of the week</h1>{gallery}</body></html>"
    assert all(p in cleaner.clean(page).text for p in paras)


def test_clean_before_fit_works():
    html, paras = site_page(5)
    result = SiteCleaner().clean(html)
    assert result.method == "default(page-level)"
    assert sum(1 for p in paras if p in result.text) >= 3


def test_partial_fit_and_save_load_round_trip(tmp_path, fitted):
    cleaner = SiteCleaner()
    for i in range(4):
        cleaner.partial_fit(site_page(i)[0])
    assert cleaner.n_pages == 4
    path = tmp_path / "model.json"
    fitted.save(path)
    again = SiteCleaner.load(path)
    assert again.n_pages == fitted.n_pages == 8
    html, _ = site_page(42)
    assert again.clean(html).text == fitted.clean(html).text


def test_tree_ensemble_walks_trees_like_by_hand():
    # one stump: x[1] <= 0.5 -> -2, else +2; baseline 0.5
    names = FEATURE_NAMES
    spec = {
        "features": list(names),
        "baseline": 0.5,
        "trees": [
            {
                "feature": [1, 0, 0],
                "threshold": [0.5, 0, 0],
                "left": [1, 0, 0],
                "right": [2, 0, 0],
                "leaf": [False, True, True],
                "value": [0, -2.0, 2.0],
                "depth": 1,
            }
        ],
    }
    ens = TreeEnsemble(spec)
    import math

    x = [[0.0] * len(names), [0.0] * len(names)]
    x[1][1] = 0.9
    p = ens.predict(x)
    assert math.isclose(p[0], 1 / (1 + math.exp(1.5)))
    assert math.isclose(p[1], 1 / (1 + math.exp(-2.5)))


def test_tree_ensemble_places_a_files_features_by_name():
    # a file listing the features in another order splits on the same names
    names = FEATURE_NAMES
    stump = {"threshold": [0.5, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0], "leaf": [False, True, True]}
    stump["value"] = [0, -2.0, 2.0]
    ens = TreeEnsemble({"features": list(names), "baseline": 0.0, "trees": [dict(stump, feature=[3, 0, 0])]})
    backwards = list(reversed(names))
    at = backwards.index(names[3])
    ens2 = TreeEnsemble({"features": backwards, "baseline": 0.0, "trees": [dict(stump, feature=[at, 0, 0])]})
    x = [[0.0] * len(names) for _ in range(2)]
    x[1][3] = 0.9
    assert list(ens.predict(x)) == list(ens2.predict(x))
    assert ens.predict(x)[0] < 0.5 < ens.predict(x)[1]


def test_tree_ensemble_rejects_bad_indices():
    spec = {
        "features": list(FEATURE_NAMES),
        "baseline": 0.0,
        "trees": [{"feature": [999], "threshold": [0.0], "left": [0], "right": [0], "leaf": [True], "value": [0.0]}],
    }
    with pytest.raises(ValueError):
        TreeEnsemble(spec)
    spec2 = {"features": list(FEATURE_NAMES) + ["extra"], "baseline": 0.0, "trees": []}
    with pytest.raises(ValueError):
        TreeEnsemble(spec2)  # trained on other features
    spec3 = {"features": list(FEATURE_NAMES[:-1]) + [FEATURE_NAMES[0]], "baseline": 0.0, "trees": []}
    with pytest.raises(ValueError):
        TreeEnsemble(spec3)  # one feature twice, one missing


def _hint_row(cleaner: SiteCleaner, html: str, needle: str) -> dict:
    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.engine.methods.sitestats.hybrid import cetd_region, sentence_features
    from sst_cleaner.engine.methods.sitestats.site_stats import analyse_page

    pa = analyse_page(parse_html(html))
    for _b, s, f in sentence_features(None, pa, cetd_region(pa, None)):
        if needle.lower() in s.text.lower():
            return dict(zip(FEATURE_NAMES, f))
    raise AssertionError(f"{needle!r} not on the page")


def test_a_page_wide_container_named_sidebar_or_comments_does_not_mark_the_article():
    # CMSs name the BODY or the page's wrapper after what the page has somewhere; the
    # article inside it is not boilerplate for that, a real sidebar still is
    html, paras = site_page(3)
    html = html.replace("<body>", '<body class="single-post has-sidebar comments-open">')
    html = html.replace('<div class="main">', '<div class="main page-wrap sidebar-right">')
    article = _hint_row(SiteCleaner(), html, paras[0][:40])
    assert article["hint_boiler"] == 0.0 and article["hint_comment"] == 0.0
    assert article["hint_content"] == 1.0  # "main", "article": positive names stay
    ad = _hint_row(SiteCleaner(), html, "premium subscription")
    assert ad["hint_boiler"] == 1.0 and ad["near_boiler"] == 1.0


def _era2(html: str) -> str:
    """The same page in another template: every element one level deeper, renamed."""
    return html.replace("<body>", '<body><div class="v2">').replace("</body>", "</div></body>")


def test_site_evidence_is_blended_with_the_page_by_the_share_of_pages_sharing_its_template(monkeypatch):
    from sst_cleaner.engine.methods.sitestats import hybrid

    # two template eras: five pages of one, two of the other; a page of the small era
    # shares its template with about a third of the other pages
    old = [site_page(i)[0] for i in range(5)]
    new = [_era2(site_page(i)[0]) for i in range(10, 12)]
    cleaner = SiteCleaner().fit(old + new)
    impl = cleaner._impl
    monkeypatch.setattr(impl._scorers, "predict", lambda rows, alone: [0.0 if alone else 1.0] * len(rows))
    page = _era2(site_page(13)[0])
    from sst_cleaner.engine._dom import parse_html

    pa = hybrid.analyse_page(parse_html(page))
    rows, probs = impl._score(pa, impl._page_view(pa))
    cohort = rows[0][2][FEATURE_NAMES.index("cohort")]
    assert cohort < hybrid.COHORT_TRUSTED
    trust = cohort / hybrid.COHORT_TRUSTED
    # comment and boilerplate rules aside, every sentence gets trust * site + (1 - trust) * page
    assert max(probs) == pytest.approx(trust)
    # a page of the big era is judged by the site's evidence alone
    pa = hybrid.analyse_page(parse_html(site_page(14)[0]))
    rows, probs = impl._score(pa, impl._page_view(pa))
    assert rows[0][2][FEATURE_NAMES.index("cohort")] >= hybrid.COHORT_TRUSTED
    assert max(probs) == 1.0


def test_a_page_judged_alone_that_keeps_nothing_keeps_its_best_rated_sentences(monkeypatch):
    html, paras = site_page(21)
    cleaner = SiteCleaner()

    def unsure(rows, alone):  # every sentence under the threshold, the article's the best
        return [0.4 if "class" not in s.text and len(s.text) > 60 else 0.1 for _b, s, _f in rows]

    monkeypatch.setattr(cleaner._impl._scorers, "predict", unsure)
    text = cleaner.clean(html).text
    assert sum(1 for p in paras if p in text) >= 4, text
    assert "All rights reserved" not in text
    # a scorer sure of nothing rescues nothing: the method keeps no text, and the cleaner
    # says its text is the empty-output fallback's
    monkeypatch.setattr(cleaner._impl._scorers, "predict", lambda rows, alone: [0.0] * len(rows))
    from sst_cleaner.engine._dom import parse_html

    assert cleaner._impl.clean(parse_html(html)).text == ""
    result = cleaner.clean(html)
    assert result.status == "empty_fallback" and sum(1 for p in paras if p in result.text) >= 4


def test_a_run_of_short_like_siblings_is_told_from_an_article_s_paragraphs():
    # the "Most read" list: five <li> of one kind, a headline each; the article: five
    # <p> of one kind, four sentences each
    html, paras = site_page(4)
    teaser = _hint_row(SiteCleaner(), html, "Story number")
    article = _hint_row(SiteCleaner(), html, paras[2][:40])
    assert teaser["log_same_sibs"] == pytest.approx(math.log1p(5))
    assert article["log_same_sibs"] == pytest.approx(math.log1p(5))
    assert teaser["sib_log_chars"] < math.log1p(40) < math.log1p(200) < article["sib_log_chars"]
    alone = _hint_row(SiteCleaner(), html, "premium subscription")  # the ad: one of its kind
    assert alone["log_same_sibs"] == pytest.approx(math.log1p(1))


def _reference_page(seed: int) -> tuple[str, list[str]]:
    """A generated API reference page: a sidebar of member links, the type's long
    description in a ``div.docblock``, then each member's signature and a short
    description of its own in a ``div.docblock`` of the same kind."""
    rng = random.Random(seed)
    members = [f"member_{seed}_{k}" for k in range(6)]
    intro = prose(rng, 4)
    own = [f"The {m} call " + prose(rng, 1)[0] for m in members]
    side = "".join(f'<li><a href="#{m}">{m}</a></li>' for m in members)
    body = "".join(
        f'<section class="method"><h4 class="code-header">fn {m}(&amp;self) -&gt; usize</h4>'
        f'<div class="docblock"><p>{d}</p></div></section>'
        for m, d in zip(members, own)
    )
    html = (
        f'<html><body><nav class="sidebar"><h2>Methods</h2><ul>{side}</ul></nav>'
        f'<section id="main-content"><h1>Struct Widget{seed}</h1>'
        f'<details class="top-doc"><div class="docblock">{"".join(f"<p>{p}</p>" for p in intro)}</div></details>'
        f"<h2>Implementations</h2>{body}</section></body></html>"
    )
    return html, intro + own


def test_the_members_of_a_reference_page_are_read_with_its_description():
    # each member's description sits in a container of the kind the page's best prose
    # container is; the sidebar's links to the members are not among them
    html, texts = _reference_page(1)
    cleaner = SiteCleaner()
    member = _hint_row(cleaner, html, texts[-1][:30])
    assert member["in_top"] == 1.0 and member["top_ratio"] == 1.0
    assert _hint_row(cleaner, html, "member_1_3")["in_top"] == 0.0  # the sidebar link
    text = cleaner.clean(html).text
    assert sum(1 for t in texts if t in text) == len(texts), text


def test_a_prose_container_without_a_class_has_no_kin():
    html, texts = _reference_page(2)
    html = html.replace('class="docblock"', "")
    member = _hint_row(SiteCleaner(), html, texts[-1][:30])
    assert member["in_top"] == 0.0


def _page_with_listing(i: int) -> str:
    """A site page whose article container also holds a listing every page of the site
    shares (a reference page's inherited members)."""
    html, _paras = site_page(i)
    listing = "".join(
        f"<p>Inherited member number {k} returns the value of the widget property unchanged.</p>" for k in range(12)
    )
    return html.replace('<div class="share">', f'<div class="members">{listing}</div><div class="share">')


def _page_with_inherited(i: int) -> str:
    """A reference-like page: its description (the main container), beside it the
    listing of inherited members every page of the site shares (their names are links)
    and a note of its own, the three in one content area; a sidebar outside it."""
    rng = random.Random(i)
    own = "".join(f"<p>{' '.join(prose(rng, 4))}</p>" for _ in range(4))
    items = "".join(
        f'<li><a href="/base#m{k}">base_method_{k}</a> connects a handler to the base object signal number {k}</li>'
        for k in range(40)
    )
    stories = "".join(
        f'<li><a href="/a/{rng.randrange(999)}">Story number {rng.randrange(999)}</a></li>' for _ in range(3)
    )
    return (
        f'<html><body><div class="header"><a href="/">Home</a> <a href="/api">API</a></div>'
        f'<div class="wrap"><div class="article"><h1>Class Widget{i}</h1>{own}</div>'
        f'<div class="inherited"><h3>Methods inherited from Base</h3><ul>{items}</ul></div>'
        f'<div class="notes"><p>{" ".join(prose(rng, 2))}</p></div></div>'
        f'<div class="sidebar"><h3>Most read</h3><ul>{stories}</ul></div></body></html>'
    )


def _split_verdict(monkeypatch, make_page, seed: int) -> tuple[dict, dict]:
    """(first row's features, sentence -> probability) of page ``seed`` of a site of six
    made by ``make_page``, judged by a site scorer that drops everything and a page
    scorer that keeps everything."""
    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.engine.methods.sitestats import hybrid

    impl = SiteCleaner().fit([make_page(i) for i in range(6)])._impl
    monkeypatch.setattr(impl._scorers, "predict", lambda rows, alone: [1.0 if alone else 0.0] * len(rows))
    pa = hybrid.analyse_page(parse_html(make_page(seed)))
    rows, probs = impl._score(pa, impl._page_view(pa))
    return dict(zip(FEATURE_NAMES, rows[0][2])), {s.text: p for (_b, s, _f), p in zip(rows, probs)}


def test_where_the_wide_container_recurs_the_page_s_verdict_keeps_its_listings(monkeypatch):
    from sst_cleaner.engine.methods.sitestats import hybrid

    f0, verdict = _split_verdict(monkeypatch, _page_with_inherited, 33)
    assert f0["wide_tmpl"] >= hybrid.WIDE_RECURRING and f0["cohort"] >= hybrid.COHORT_TRUSTED
    assert verdict["base_method_7 connects a handler to the base object signal number 7"] == 1.0
    assert all(p == 0.0 for t, p in verdict.items() if "Most read" in t or "Story number" in t)  # named sidebar


def test_where_the_main_container_recurs_the_page_s_verdict_keeps_its_matter(monkeypatch):
    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.engine.methods.sitestats import hybrid

    f0, verdict = _split_verdict(monkeypatch, _page_with_listing, 31)
    assert f0["main_tmpl"] >= hybrid.MAIN_RECURRING and f0["cohort"] >= hybrid.COHORT_TRUSTED
    assert verdict["Inherited member number 3 returns the value of the widget property unchanged."] == 1.0
    assert all(p == 0.0 for t, p in verdict.items() if "Story number" in t)  # links, outside
    # where the main container is the page's own, the site's verdict stands alone
    pa = hybrid.analyse_page(parse_html(site_page(32)[0]))
    cleaner2 = SiteCleaner().fit([site_page(i)[0] for i in range(6)])
    monkeypatch.setattr(cleaner2._impl._scorers, "predict", lambda rows, alone: [1.0 if alone else 0.0] * len(rows))
    rows, probs = cleaner2._impl._score(pa, cleaner2._impl._page_view(pa))
    assert dict(zip(FEATURE_NAMES, rows[0][2]))["main_tmpl"] < hybrid.MAIN_RECURRING
    assert max(probs) == 0.0


def test_the_share_of_code_type_text_tells_a_reference_page_from_an_article():
    # inline code inside a paragraph counts, code nested in code counts once, and an
    # article set in plain type has none
    para = "Call <code>open_file()</code> and press <kbd>q</kbd> to leave the viewer when done."
    page = "<html><body><main><h1>Files</h1><p>{}</p><pre>{}</pre></main></body></html>"
    nested = _hint_row(SiteCleaner(), page.format(para, "<code>x = read()</code>"), "press")
    flat = _hint_row(SiteCleaner(), page.format(para, "x = read()"), "press")
    assert nested["page_mono_share"] == flat["page_mono_share"]
    words = "Files Call open_file() and press q to leave the viewer when done. x = read()"
    assert nested["page_mono_share"] == pytest.approx(len("open_file()q" + "x = read()") / len(words), abs=0.05)
    # words shaped like code count whatever they are set in: open_file(), =, read()
    assert nested["page_code_words"] == pytest.approx(3 / len(words.split()))
    html, paras = site_page(3)
    article = _hint_row(SiteCleaner(), html, paras[0][:40])
    assert article["page_mono_share"] == 0.0 and article["page_code_words"] == 0.0


def test_a_generator_that_sets_signatures_in_table_cells_still_reads_as_code():
    rows = "".join(
        f'<tr><td class="memItemLeft">const Matrix&lt;T&gt; &amp;</td><td class="memItemRight">'
        f'<a href="#m{k}">solve_{k}</a>(const MatrixBase&lt;Rhs&gt; &amp;b) const</td></tr>'
        for k in range(8)
    )
    html = (
        f"<html><body><div class='contents'><p>Solves the linear system.</p><table>{rows}</table></div></body></html>"
    )
    row = _hint_row(SiteCleaner(), html, "linear system")
    assert row["page_mono_share"] == 0.0
    assert row["page_code_words"] > 0.3


def test_outside_a_prose_container_named_as_boilerplate_names_say_nothing(monkeypatch):
    # a blog whose posts and sidebar boxes are all "widget"s: the profile box, full of
    # commas, reads as the page's prose container; the post beside it, in a container
    # named as boilerplate too, is left to the scorer rather than dropped by its name
    rng = random.Random(5)
    post = prose(rng, 12)
    outlets = ", ".join(f"the Daily Paper number {k}" for k in range(12))
    html = (
        "<html><body><div id='main-wrapper'><div class='widget Blog'><div class='post'>"
        f"<div class='post-body'><div>{''.join(f'<span>{p}</span><br/>' for p in post)}</div></div></div></div></div>"
        "<div id='sidebar-wrapper'><div class='widget Profile'><dl class='profile-datablock'>"
        f"<dd>My work has appeared in {outlets}.</dd><dd>Before that I was, in order, {outlets}.</dd>"
        "</dl></div><div class='widget BlogArchive'><ul>"
        + "".join(f"<li><a href='/2012/{k}'>Archive of the month number {k}</a></li>" for k in range(24))
        + "</ul></div></div></body></html>"
    )
    cleaner = SiteCleaner()
    assert _hint_row(cleaner, html, "Daily Paper number 3")["in_top"] == 1.0
    assert _hint_row(cleaner, html, post[0][:30])["hint_boiler"] == 1.0
    monkeypatch.setattr(cleaner._impl._scorers, "predict", lambda rows, alone: [1.0] * len(rows))
    text = cleaner.clean(html).text
    assert all(p in text for p in post), text


def test_a_page_analysed_before_any_fit_is_judged_alone_after_one(fitted):
    # clean analyses a page without node keys when the model is empty; were a page learnt
    # before its view is asked for, the page is still judged alone, never refused
    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.engine.methods.sitestats import hybrid

    pa = hybrid.analyse_page(parse_html(site_page(100)[0]), site=False)
    assert fitted._impl.stats.n_pages and fitted._impl._page_view(pa) is None
    keyed = hybrid.analyse_page(parse_html(site_page(100)[0]))
    assert fitted._impl._page_view(keyed) is not None
