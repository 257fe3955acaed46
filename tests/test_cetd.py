"""CETD (Sun, Song & Liao): densities, DensitySum, threshold and Algorithm 2 on pages
small enough to work out on paper; the ``cetd`` method through ``SiteCleaner``."""

from __future__ import annotations

import math

import pytest
from lxml import etree

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine._result import INFORMATIVE, NOISE
from sst_cleaner.engine.methods.cetd import (
    CETDMethod,
    comment_like,
    compute_densities,
    extract_content,
    label_blocks,
    select_content,
    threshold_of,
)

# Example 3.1 of the paper (the FT page), verbatim
FT = """<html><body><div class="main">
  <div class="article">
    <div class="story-header">
      Lunch with the FT: Biz Stone</div>
    <div class="story-body">
      Though the value of the company was
      <a>recently estimated at $3.7bn</a>
    </div></div></div></body></html>"""


def _by_class(d, cls):
    return next(i for i, el in enumerate(d.elements) if el.get("class") == cls)


def _by_id(d, ident):
    return next(i for i, el in enumerate(d.elements) if el.get("id") == ident)


def test_counts_and_text_density_match_example_3_2():
    d = compute_densities(parse_html(FT).root)
    # Example 3.2: Chars / Tags / Density of the five tags
    expected = {
        "main": (91, 4, 22.75),
        "article": (91, 3, 91 / 3),
        "story-header": (28, 1, 28.0),
        "story-body": (63, 1, 63.0),
    }
    for cls, (c, t, td) in expected.items():
        i = _by_class(d, cls)
        assert d.C[i] == c
        assert max(d.T[i], 1) == t
        assert d.TD[i] == pytest.approx(td)
    a = next(i for i, el in enumerate(d.elements) if el.tag == "a")
    assert (d.C[a], d.T[a], d.TD[a]) == (28, 0, 28.0)
    assert (d.LC[_by_class(d, "story-body")], d.LT[_by_class(d, "story-body")]) == (28, 1)
    assert (d.C_b, d.LC_b) == (91, 28)


def test_composite_text_density_by_hand():
    d = compute_densities(parse_html(FT).root)
    ratio = 28 / 91  # LC_b / C_b
    # story-header: C=28, T=0->1, LC=0 (LC -> 1 in C/LC only), LT=0->1, nLC=28
    #   log arg = 28/1 * 1/1 = 28; base = ln(28/28*0 + ratio*28 + e) = ln(11.333) = 2.4278
    #   CTD = 28 * ln 28 / ln 2.4278 = 28 * 3.3322 / 0.8870 = 105.19
    header = d.CTD[_by_class(d, "story-header")]
    assert header == pytest.approx(28 * math.log(28) / math.log(math.log(ratio * 28 + math.e)))
    assert header == pytest.approx(105.19, abs=0.01)
    # story-body: C=63, T=1, LC=28, LT=1, nLC=35
    #   log arg = 63/28 * 1/1 = 2.25; base = ln(63/35*28 + ratio*63 + e) = ln(72.503) = 4.2836
    #   CTD = 63 * ln 2.25 / ln 4.2836 = 63 * 0.81093 / 1.45477 = 35.12
    assert d.CTD[_by_class(d, "story-body")] == pytest.approx(35.12, abs=0.01)
    # a subtree of hyperlinks only has CTD 0 (its log argument is 1)
    a = next(i for i, el in enumerate(d.elements) if el.tag == "a")
    assert d.CTD[a] == 0.0


def test_every_ctd_is_eq_2_as_written():
    # the shortcut for subtrees of links only (and the nav's <div> of links) gives what
    # Eq. 2 gives, to the bit
    d = compute_densities(parse_html(FT.replace("</div></div></div>", NAV_LINKS + "</div></div></div>")).root)
    ratio = d.LC_b / d.C_b
    for c, t, lc, lt, ctd in zip(d.C, d.T, d.LC, d.LT, d.CTD):
        if not c:
            assert ctd == 0.0
            continue
        t, lt = t or 1, lt or 1
        base = math.log((c / ((c - lc) or 1)) * lc + ratio * c + math.e)
        assert repr(ctd) == repr(c / t * math.log((c / (lc or 1)) * (t / lt)) / math.log(base))


NAV_LINKS = '<ul class="nav"><li><a href="/1">One</a></li><li><a href="/2">Two <b>2</b></a></li></ul>'


NAV_VS_CONTENT = (
    "<html><body>"
    '<div id="nav"><a href="/1">aaaa</a><a href="/2">bbbb</a></div>'
    '<div id="main"><p>' + "x" * 40 + "</p><p>" + "y" * 40 + "</p></div>"
    "</body></html>"
)


def test_density_sum_winner_is_content_div_not_nav():
    d = compute_densities(parse_html(NAV_VS_CONTENT).root)
    nav, main = _by_id(d, "nav"), _by_id(d, "main")
    # TD: nav 8/2 = 4, main 80/2 = 40, body 88/6
    assert d.TD[nav] == 4.0 and d.TD[main] == 40.0 and d.TD[0] == pytest.approx(88 / 6)
    # DensitySum (TD): main = 40 + 40, nav = 4 + 4, body = 4 + 40, each p = its text node's 40
    ds = d.density_sum("td")
    assert (ds[main], ds[nav], ds[0]) == (80.0, 8.0, 44.0)
    for kind in ("td", "ctd"):
        assert d.max_density_sum(kind)[0] == main
        roots = extract_content(parse_html(NAV_VS_CONTENT).root, density=kind)
        assert [el.get("id") for el in roots] == ["main"]


def test_threshold_is_smallest_density_on_path_to_body():
    d = compute_densities(parse_html(NAV_VS_CONTENT).root)
    # path main -> body: min(40, 88/6) = 14.67 (TD)
    assert threshold_of(d, "td") == pytest.approx(88 / 6)
    main = _by_id(d, "main")
    assert threshold_of(d, "ctd") == pytest.approx(min(d.CTD[main], d.CTD[0]))


TWO_BLOCKS = (
    "<html><body>"
    '<div id="wrap"><div id="a1"><p>' + "x" * 40 + "</p><p>" + "y" * 40 + "</p></div>"
    '<div id="nav"><a href="/1">aaaa</a><a href="/2">bbbb</a></div></div>'
    '<div id="a2"><p>' + "z" * 30 + "</p><p>" + "w" * 30 + "</p></div>"
    "</body></html>"
)


def test_algorithm_2_keeps_two_content_blocks():
    page = parse_html(TWO_BLOCKS)
    d = compute_densities(page.root)
    a1, a2 = _by_id(d, "a1"), _by_id(d, "a2")
    # TD: a1 80/2 = 40 (DensitySum 80, the page's largest), wrap 88/6, a2 60/2 = 30
    # (DensitySum 60), body 148/10
    assert d.max_density_sum("td")[0] == a1
    assert d.density_sum("td")[a2] == 60.0
    # threshold = min(40, 88/6, 148/10) = 14.67; body and wrap reach it and lead to a1;
    # nav (4) does not; a2 (30) does, and its own max-DensitySum element is itself
    assert threshold_of(d, "td") == pytest.approx(88 / 6)
    assert select_content(d, "td") == [a1, a2]
    assert select_content(d, "ctd") == [a1, a2]
    blocks = label_blocks(page, [d.elements[a1], d.elements[a2]], d)
    kept = [b.text for b in blocks if b.label == INFORMATIVE]
    assert kept == ["x" * 40, "y" * 40, "z" * 30, "w" * 30]
    assert [b.text for b in blocks if b.label == NOISE] == ["aaaabbbb"]


def test_ignore_zeroes_a_subtree():
    page = parse_html(TWO_BLOCKS)
    is_a1 = lambda el: el.get("id") == "a1"  # noqa: E731
    d = compute_densities(page.root, ignore=is_a1)
    a1, a2 = _by_id(d, "a1"), _by_id(d, "a2")
    assert d.C[a1] == 0 and d.C[a1 + 1] == 0  # a1 and its first <p>
    assert d.T[a1] == 2  # the tags are still there
    assert d.C_b == 68  # 8 link characters + 60
    assert d.ignored == [a1]
    # DensitySum: a2 = 30 + 30 = 60, body = TD(wrap) 8/6 + TD(a2) 30 = 31.3: a2 wins,
    # threshold = min(30, TD(body) 68/10) = 6.8, wrap (8/6) is below it
    assert d.max_density_sum("td")[0] == a2
    assert threshold_of(d, "td") == pytest.approx(6.8)
    assert select_content(d, "td") == [a2]
    # even inside a content root, ignored text is never labelled informative
    blocks = label_blocks(page, [page.root], d)
    assert {b.text for b in blocks if b.label == INFORMATIVE} == {"aaaabbbb", "z" * 30, "w" * 30}
    # extract_content hands its densities (and so the ignore) on to label_blocks
    roots = extract_content(page.root, ignore=is_a1, density="td")
    assert [el.get("id") for el in roots] == ["a2"]
    assert roots.densities.ignored == [a1]
    labels = {b.text: b.label for b in label_blocks(page, roots)}
    assert labels == {"x" * 40: NOISE, "y" * 40: NOISE, "aaaabbbb": NOISE, "z" * 30: INFORMATIVE, "w" * 30: INFORMATIVE}


def test_page_without_links_falls_back_to_text_density():
    d = compute_densities(parse_html("<html><body><div><p>hello world</p><p>again</p></div></body></html>").root)
    assert d.LC_b == 0
    assert d.CTD == d.TD


def test_br_separated_text_counts_as_text_node_children():
    html = (
        "<html><body><div id='nav'><a href='/'>home</a> <a href='/x'>news</a></div>"
        "<div id='post'>" + "<br>".join(["w" * 30] * 4) + "</div></body></html>"
    )
    d = compute_densities(parse_html(html).root)
    post = _by_id(d, "post")
    assert d.runs[post] == [30, 30, 30, 30]
    # with text nodes as children the post's DensitySum is the sum of four text nodes
    assert d.density_sum("td")[post] == 120.0
    assert d.density_sum("td", text_nodes=False)[post] == 0.0  # its <br> children have no text
    assert d.max_density_sum("ctd")[0] == post


def test_inline_content_root_labels_its_block():
    body = "Some words of a long article that sits inside a font tag, as old pages did. " * 3
    html = (
        "<html><body><div><a href='/a'>one</a> <a href='/b'>two</a></div>"
        "<p>Intro: <font>" + body + "<br>" + body + "</font></p></body></html>"
    )
    page = parse_html(html)
    d = compute_densities(page.root)
    roots = [d.elements[i] for i in select_content(d)]
    assert [el.tag for el in roots] == ["font"]
    strict = label_blocks(page, roots, d, inline_share=None)
    assert all(b.label == NOISE for b in strict)  # the block element <p> is outside <font>
    lenient = label_blocks(page, roots, d)  # inline_share=0.5
    # the <font> holds 454 of the block's 460 characters
    assert [b.text for b in lenient if b.label == INFORMATIVE] == [f"Intro: {body}{body}".strip()]


def test_deep_page_does_not_crash():
    depth = 5000
    root = etree.Element("body")
    el = root
    for _ in range(depth):
        el = etree.SubElement(el, "div")
    el.text = "deep text " * 10
    nav = etree.SubElement(root, "div")
    for k in range(3):
        etree.SubElement(nav, "a").text = f"link {k}"
    d = compute_densities(root)
    assert len(d) == depth + 1 + 4
    assert d.T[0] == depth + 4
    roots = extract_content(root)
    assert roots and all(r is not nav for r in roots)
    # the same through the page parser and the method (parse_html flattens what is
    # deeper than its depth limit, and loses what follows a nesting deeper than 2048)
    html = "<html><body>" + "<div>" * 2000 + "deep text " * 10 + "</div>" * 2000 + "</body></html>"
    result = SiteCleaner(method="cetd").clean(html)
    assert "deep text" in result.text


def test_comment_like():
    assert comment_like(etree.fromstring('<ol class="commentlist"/>'))
    assert comment_like(etree.fromstring('<div id="comments"/>'))
    assert not comment_like(etree.fromstring('<div class="entry"/>'))


ARTICLE = (
    "<html><head><title>A story</title></head><body>"
    "<ul><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li><li><a href='/s'>Sport</a></li></ul>"
    "<div class='story'><h1>A story</h1>"
    "<p>The first paragraph of the story is long enough to be the content. It goes on.</p>"
    "<p>A second paragraph adds more words, so that the density is clearly high here.</p></div>"
    "<div class='foot'><a href='/c'>Contact</a> | <a href='/p'>Privacy</a></div>"
    "</body></html>"
)


def test_method_through_site_cleaner_and_round_trip(tmp_path):
    cleaner = SiteCleaner(method="cetd")
    result = cleaner.clean(ARTICLE)  # before any fit
    assert result.method == "cetd" and result.title == "A story"
    assert "first paragraph" in result.text and "second paragraph" in result.text
    assert "Home" not in result.text and "Privacy" not in result.text
    assert result.text.splitlines()[0] == "A story"
    assert result.sentences[:2] == ["A story", "The first paragraph of the story is long enough to be the content."]
    assert {b.label for b in result.blocks} == {INFORMATIVE, NOISE}
    # three pages (one page given three times would be learnt once)
    cleaner.fit([("http://s.test/1", ARTICLE), ("http://s.test/2", ARTICLE)])
    cleaner.partial_fit(ARTICLE, url="http://s.test/3")
    assert cleaner.n_pages == 3
    path = tmp_path / "cetd.json"
    td = SiteCleaner(method="cetd", density="td")
    td.save(path)
    loaded = SiteCleaner.load(path)
    assert loaded.method == "cetd" and loaded._impl.density == "td"
    assert loaded.clean(ARTICLE).text == td.clean(ARTICLE).text
    cleaner.save(path)
    again = SiteCleaner.load(path)
    assert again.n_pages == 3 and again.clean(ARTICLE).text == result.text
    with pytest.raises(ValueError):
        CETDMethod(density="htd")


def test_skip_comments_lets_the_article_win_over_a_longer_thread():
    para = "<p>" + "The article says something worth reading about the topic at hand. " * 2 + "</p>"
    comment = "<li><p>" + "A reader replies at length with an opinion of their own, again. " * 3 + "</p></li>"
    html = (
        "<html><body><ul><li><a href='/'>Home</a></li><li><a href='/n'>News</a></li></ul>"
        "<div class='post'>" + para * 2 + "</div>"
        "<ol class='commentlist'>" + comment * 6 + "</ol></body></html>"
    )
    plain = SiteCleaner(method="cetd").clean(html)
    assert "A reader replies" in plain.text  # the thread has the largest DensitySum
    skipped = SiteCleaner(method="cetd", skip_comments=True).clean(html)
    assert "The article says" in skipped.text and "A reader replies" not in skipped.text
