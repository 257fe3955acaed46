"""WISDOM on hand-built pages whose answer is worked out on paper."""

import math

import numpy as np
import pytest

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine.methods.infodiscoverer import TermEntropy
from sst_cleaner.engine.methods.wisdom import InformationTree, condense, expand, mib


def test_incremental_entropy_equals_batch_on_random_data():
    rng = np.random.default_rng(7)
    n_pages, n_terms = 40, 60
    tf = rng.integers(0, 6, size=(n_pages, n_terms)) * (rng.random((n_pages, n_terms)) < 0.3)
    te = TermEntropy()
    for j in range(n_pages):
        te.add_page({f"t{i}": int(tf[j, i]) for i in range(n_terms) if tf[j, i]})
        # after every page: EN by the update rule == EN from the first j+1 rows
        rows = tf[: j + 1].astype(float)
        for i in range(n_terms):
            col = rows[:, i]
            if col.sum() == 0:
                continue
            w = col[col > 0] / col.sum()
            batch = 0.0 if j == 0 else float(-(w * np.log(w)).sum() / math.log(j + 1))
            assert te.entropy(f"t{i}") == pytest.approx(batch, abs=1e-12)
    np.testing.assert_allclose(te._en[: len(te)], te.batch_entropy(), atol=1e-12)


def test_term_weight_example_of_fig5():
    # 4 pages; Term_A tf (2, 2, 2, 0), Term_B (1, 1, 4, 0)
    te = TermEntropy()
    for a, b in [(2, 1), (2, 1), (2, 4)]:
        te.add_page({"terma": a, "termb": b})
    te.add_page({"other": 1})
    assert 1 - te.entropy("terma") == pytest.approx(0.207519, abs=1e-6)  # = IDF = log_4 4/3
    assert 1 - te.entropy("termb") == pytest.approx(0.374185, abs=1e-6)


def _tree(html, entropy=None):
    return InformationTree(parse_html(html, url="http://ex.com/p"), entropy or TermEntropy(), {})


TREE_HTML = (
    "<html><body><div id='nav'><a href='/x'>Home</a><a href='/y'>World</a></div>"
    "<div id='main'><p>" + "a" * 100 + "</p><p>" + "b" * 100 + "</p><p>" + "c" * 100 + "</p></div>"
    "<div id='foot'>" + "f" * 20 + "</div></body></html>"
)


def _node(tree, el_id):
    return next(i for i in range(tree.n) if tree.kind[i] == 0 and tree.el[i].get("id") == el_id)


def test_kmib_walk_on_a_small_tree():
    t = _tree(TREE_HTML)
    main, foot = _node(t, "main"), _node(t, "foot")
    f = t.CLEN_A
    assert f[0] == 320 and f[main] == 300 and t.ALEN_A[0] == 9
    # SII(body, CLEN_A): 4 non-dummy children? nav has text (anchors) so m = 3:
    # weights 0 (nav), 300/320, 20/320 over log_3
    w = np.array([300 / 320, 20 / 320])
    assert t.sii(0, f) == pytest.approx(float(-(w * np.log(w)).sum() / math.log(3)))
    assert t.sii(main, f) == pytest.approx(1.0)  # three equal paragraphs
    always = lambda i: True  # noqa: E731
    # k = 1: body (SII 0.32 < 0.8) -> push main, foot; pop main: SII 1 > 0.8 -> taken
    assert mib(t, 1, f, 0.8, always) == [main]
    # k = 2: then foot, whose one text child is a leaf
    second = mib(t, 2, f, 0.8, always)
    assert second[0] == main and t.parent[second[1]] == foot and t.kind[second[1]] == 1
    # type constraint: foot fails -> only main
    assert mib(t, 2, f, 0.8, lambda i: i == main) == [main]
    # ST = 1.0: main is not taken (SII must exceed ST); its largest child, a leaf p text
    leaf = mib(t, 1, f, 1.0, always)[0]
    assert t.kind[leaf] == 1
    # DSTM from that leaf's P merges the two other paragraphs (smaller or equal f_A? only
    # smaller: equal paragraphs are not merged) -> expansion is the skeleton alone
    p = t.parent[leaf]
    assert expand(t, [p], f, always, cstm=0) == [p]
    # 1-CSTM: the first nonsingleton ancestor of p is main, whose sibling foot is smaller
    assert expand(t, [p], f, always, cstm=1) == sorted([p, foot])


def test_condensing_drops_template_blocks_inside_the_article():
    te = TermEntropy()
    for _ in range(2):
        te.add_page({"share": 1, "tweet": 1})  # EN = 1 -> W = 0
    html = (
        "<html><body><div id='art'><p>unique words only here</p><p>more fresh text</p>"
        "<div id='bar'>share tweet</div></div></body></html>"
    )
    t = _tree(html, te)
    art, bar = _node(t, "art"), _node(t, "bar")
    tc = lambda i: t.cii(i) >= 0.2  # noqa: E731
    kept, dropped = condense(t, [art], tc)
    assert bar in dropped and art in kept and bar not in kept


def _story(i, titles):
    related = "".join(f"<li><a href='/a{j}'>{titles[j]}</a></li>" for j in titles if j != i)
    return (
        f"<html><head><title>Story</title></head><body>"
        f"<div id='nav'><a href='/home'>Home</a> <a href='/world'>World news</a> "
        f"<a href='/sport'>Sport</a></div>"
        f"<div id='main'><h1>{titles[i]}</h1><p>{BODY[i][0]}</p><p>{BODY[i][1]}</p></div>"
        f"<div id='related'><ul>{related}</ul></div>"
        f"<div id='foot'>Copyright example company all rights reserved</div></body></html>"
    )


TITLES = {1: "Volcano erupts near harbour", 2: "Parliament passes budget", 3: "Orchestra tours abroad"}
BODY = {
    1: (
        "Lava flowed toward fishing villages while residents packed belongings quickly.",
        "Scientists measured tremors overnight and warned ships to keep their distance.",
    ),
    2: (
        "Lawmakers approved spending plans after lengthy debates over taxation levels.",
        "Opposition members criticised hospital funding cuts hidden inside annexes.",
    ),
    3: (
        "Musicians rehearsed symphonies before flying across continents for concerts.",
        "Critics praised violinists whose performances filled historic venues nightly.",
    ),
}
SITE = [(f"http://ex.com/a{i}", _story(i, TITLES)) for i in (1, 2, 3)]


def test_wisdom_article_and_toc_blocks():
    c = SiteCleaner(method="wisdom").fit(SITE)
    res = c.clean(SITE[0][1], url=SITE[0][0])
    assert BODY[1][0] in res.text and BODY[1][1] in res.text
    for noise in ("Home", "Copyright", "World news", "Parliament"):
        assert noise not in res.text
    # TOC: headline terms shared with the linked pages, EN = 1 each -> API = 3 per anchor
    assert len(res.link_blocks) == 1
    blk = res.link_blocks[0]
    assert blk["xpath"].endswith("/ul")
    assert blk["links"] == ["http://ex.com/a2", "http://ex.com/a3"]


def test_alen_alternative_when_api_is_missing():
    # no page URLs in the model: API cannot be computed; ALEN with anchor-term CII is used
    c = SiteCleaner(method="wisdom").fit([h for _u, h in SITE])
    impl = c._impl
    tree, _art, toc, feature = impl.analyse(parse_html(SITE[0][1], url=SITE[0][0]))
    assert feature == "alen"
    # the menu (same anchors on every page, W = 0) is never a TOC block
    nav = _node(tree, "nav")
    assert nav not in toc


def test_save_load_round_trip(tmp_path):
    c = SiteCleaner(method="wisdom", st=0.8).fit(SITE)
    path = tmp_path / "w.json"
    c.save(path)
    d = SiteCleaner.load(path)
    assert d.n_pages == 3
    a, b = c.clean(SITE[1][1], url=SITE[1][0]), d.clean(SITE[1][1], url=SITE[1][0])
    assert a.text == b.text and a.link_blocks == b.link_blocks
    assert d._impl.page_terms == c._impl.page_terms
