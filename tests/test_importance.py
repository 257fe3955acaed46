"""NodeImp, CompImp, MarkNoise / MarkMeaningful, the 3.6 merge and locally noisy
features on toy sites small enough to compute on paper."""

import math

import pytest

from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine.methods.sst.importance import (
    calc_comp_imp,
    characteristic_features,
    composite_importance,
    leaf_importance,
    locally_noisy_features,
    mark_meaningful,
    mark_noise,
    node_importance,
    refresh,
    simplified_sst,
)
from sst_cleaner.engine.methods.sst.mapping import map_page, resolve_labels
from sst_cleaner.engine.methods.sst.page_style_tree import build_page_tree
from sst_cleaner.engine.methods.sst.site_style_tree import ElementNode, SiteStyleTree, StyleNode


def sst_of(pages, match="exact"):
    sst = SiteStyleTree(match=match)
    for h in pages:
        sst.add_page(build_page_tree(parse_html(h).root))
    return sst


def body_node(sst):
    return sst.root.styles[0].elements[0]


# The 3-page toy site: a navigation box that never changes and a main box whose words
# change. div#nav > a, a and div#main > p: both divs are leaf element nodes (3.6).
TOY = '<body><div id="nav"><a>home</a> <a>news</a></div><div id="main"><p>{}</p></div></body>'
TOY_PAGES = [TOY.format("alpha beta"), TOY.format("gamma delta"), TOY.format("alpha epsilon")]


def test_toy_site_importance_by_hand():
    sst = sst_of(TOY_PAGES)
    refresh(sst, t=0.4, gamma=0.9, merge=False)
    root = sst.root
    body = body_node(sst)
    (S,) = body.styles
    nav, main = S.elements
    assert (nav.key, main.key) == ("div|id=nav", "div|id=main")
    # nav: "home" and "news" once on each of the 3 pages: H = log_3 3 = 1 each -> 1 - 2/2
    assert nav.comp == pytest.approx(0.0)
    # main: alpha on pages 1 and 3 (H = log_3 2), beta/gamma/delta/epsilon one page (H 0)
    h_alpha = math.log(2) / math.log(3)
    assert main.comp == pytest.approx(1 - h_alpha / 5)  # 0.87381
    # body: one style, m = 3 -> NodeImp = -1 log_3 1 = 0; l = 1, gamma^1 = 0.9
    assert node_importance(body) == pytest.approx(0.0)
    comp_s = (0.0 + (1 - h_alpha / 5)) / 2  # eq. 3: mean over the style's 2 element nodes
    assert body.comp == pytest.approx(0.1 * 0 + 0.9 * comp_s)  # 0.393215
    assert root.comp == pytest.approx(0.9 * body.comp)  # 0.353894
    # Fig. 5 with t = 0.4: nav noisy; main meaningful; body and root neither
    assert nav.noisy and not nav.meaningful
    assert main.meaningful and not main.noisy
    assert not body.noisy and not body.meaningful and body.has_noisy
    assert mark_noise(sst, 0.4) == [nav]
    assert mark_meaningful(sst) == [main]


def test_node_importance_two_styles_of_four_pages():
    a = '<body><div id="a"><p>home news</p></div><div id="b"><p>{}</p></div></body>'
    c = '<body><div id="a"><p>home news</p></div><div id="c"><p>{}</p></div></body>'
    sst = sst_of([a.format("kiwi mango"), a.format("lemon melon"), c.format("peach plum"), c.format("grape lime")])
    refresh(sst, t=0.4, gamma=0.9, merge=False)
    body = body_node(sst)
    # p = (1/2, 1/2), m = 4: -2 * 0.5 * log_4 0.5 = 0.5
    assert node_importance(body) == pytest.approx(0.5)
    # each style: div#a comp 0 (same words on its 2 pages), other div comp 1 -> 0.5;
    # l = 2: (1 - 0.81) * 0.5 + 0.81 * (0.5 * 0.5 + 0.5 * 0.5) = 0.5
    assert body.comp == pytest.approx(0.5)
    assert composite_importance(body, 0.9) == pytest.approx(0.5)
    # with gamma 0.5: (1 - 0.25) * 0.5 + 0.25 * 0.5 = 0.5 too; check a lopsided variant
    e = ElementNode("x")
    e.m = 3
    e.styles = [StyleNode([ElementNode("y")], 2), StyleNode([ElementNode("z")], 1)]
    e.styles[0].elements[0].comp = 1.0
    e.styles[1].elements[0].comp = 0.0
    ni = -(2 / 3 * math.log(2 / 3, 3) + 1 / 3 * math.log(1 / 3, 3))
    assert node_importance(e) == pytest.approx(ni)
    assert composite_importance(e, 0.9) == pytest.approx(0.19 * ni + 0.81 * (2 / 3))


def test_leaf_importance_single_page_and_featureless():
    e = ElementNode("p")
    e.m = e.leaf_n = 1
    e.feats = {"x": [3, 3 * math.log(3), 1]}
    assert leaf_importance(e) == 1.0
    e.m = e.leaf_n = 2
    e.feats = {}
    assert leaf_importance(e) == 0.0


def _flagged(key, comp, children=()):
    e = ElementNode(key)
    e.m = 2
    e.comp = comp
    if children:
        e.styles = [StyleNode(list(children), 2)]
    else:
        e.leaf_n = 2
    return e


def test_mark_noise_on_a_hand_built_sst():
    # root -> [a, b]; a -> [a1, a2]. t = 0.4
    a1, a2 = _flagged("a1", 0.1), _flagged("a2", 0.2)
    a = _flagged("a", 0.3, [a1, a2])
    b = _flagged("b", 0.5)
    sst = SiteStyleTree()
    sst.root = _flagged("#root", 0.35, [a, b])
    assert mark_noise(sst, 0.4) == [a]  # a and all its descendants <= t; maximal
    assert a1.noisy and a2.noisy and not sst.root.noisy
    assert mark_meaningful(sst) == [b]
    # all descendants noisy but a itself above t: a is not noisy, its children are maximal
    a.comp = 0.5
    assert mark_noise(sst, 0.4) == [a1, a2]
    assert not a.meaningful and not sst.root.meaningful


def test_merge_needs_similar_content():
    # body has two styles (div#b vs div#c second); the first element div#a has the same
    # key in both. Same words -> merged into one node of m = 4; different words -> not.
    same = '<body><div id="a"><p>home news weather</p></div><div id="{0}"><p>{1}</p></div></body>'
    sst = sst_of(
        [same.format("b", "kiwi"), same.format("b", "lemon"), same.format("c", "peach"), same.format("c", "grape")]
    )
    refresh(sst, merge=True)
    s1, s2 = body_node(sst).styles
    assert s1.elements[0] is s2.elements[0] and s1.elements[0].m == 4
    diff = '<body><div id="a"><p>{2}</p></div><div id="{0}"><p>{1}</p></div></body>'
    sst = sst_of(
        [
            diff.format("b", "kiwi", "home news"),
            diff.format("b", "lemon", "home news"),
            diff.format("c", "peach", "sport scores"),
            diff.format("c", "grape", "sport scores"),
        ]
    )
    assert characteristic_features(sst.root.styles[0].elements[0].styles[0].elements[0]) == {"home", "news"}
    refresh(sst, merge=True)
    s1, s2 = body_node(sst).styles
    assert s1.elements[0] is not s2.elements[0]


def test_locally_noisy_features():
    pages = [
        f'<body><div id="nav"><a>home</a><b>x</b></div><div id="main"><p>Share this story.</p><p>{w}</p></div></body>'
        for w in ("kiwi mango", "lemon melon", "peach plum")
    ]
    sst = sst_of(pages)
    refresh(sst)
    main = body_node(sst).styles[0].elements[1]
    assert main.meaningful
    assert locally_noisy_features(main, 0.01) == {"share", "stori"}


def test_simplified_sst_maps_the_same():
    sst = sst_of(TOY_PAGES)
    refresh(sst, t=0.4)
    simple = simplified_sst(sst)
    page = parse_html(TOY.format("alpha zeta"))
    full_info, _ = resolve_labels(map_page(sst, build_page_tree(page.root), False), page.root)
    simple_info, _ = resolve_labels(map_page(simple, build_page_tree(page.root), False), page.root)
    assert [v[0] for v in full_info.values()] == [v[0] for v in simple_info.values()]
    assert simple.size()[0] < sst.size()[0] or simple.size() == sst.size()


def test_calc_comp_imp_full_pass_equals_refresh():
    sst = sst_of(TOY_PAGES)
    refresh(sst, t=0.4, merge=False)
    before = [e.comp for e in sst.iter_elements()]
    calc_comp_imp(sst)
    assert [e.comp for e in sst.iter_elements()] == pytest.approx(before)


def test_incremental_refresh_matches_full_build():
    grown = sst_of(TOY_PAGES[:2])
    refresh(grown)
    grown.add_page(build_page_tree(parse_html(TOY_PAGES[2]).root))
    refresh(grown)
    full = sst_of(TOY_PAGES)
    refresh(full)
    assert [round(e.comp, 9) for e in grown.iter_elements()] == [round(e.comp, 9) for e in full.iter_elements()]
