"""Page and site style trees: keys, segment rules, top-down build, tolerant matching,
JSON form, deep pages. Every expected value is worked out by hand in the comments."""

import json
import types

import pytest
from lxml import etree
from lxml import html as lxml_html

from sst_cleaner.engine._dom import PreparedPage, parse_html
from sst_cleaner.engine.methods.sst.page_style_tree import ROOT_KEY, TEXT_KEY, build_page_tree, element_key
from sst_cleaner.engine.methods.sst.site_style_tree import SiteStyleTree, lcs_pairs
from sst_cleaner.engine.methods.sst.style_tree_json import TreeFormatError, tree_from_dict, tree_to_dict


def pst(html: str):
    return build_page_tree(parse_html(html).root)


def sst_of(pages, match="exact"):
    sst = SiteStyleTree(match=match)
    for h in pages:
        sst.add_page(pst(h))
    return sst


def body_node(sst):
    (S,) = sst.root.styles
    (body,) = S.elements
    return body


def test_element_key_normalises_attr():
    el = lxml_html.fromstring('<div class="Post-12345  b a" id="x9" data-foo="1" width="100">t</div>')
    # class tokens lower-cased, digit runs -> #, sorted; data-* ignored; parts sorted by name
    assert element_key(el) == "div|class=a b post-#;id=x#;width=#"
    assert element_key(lxml_html.fromstring("<p>t</p>")) == "p"
    same = lxml_html.fromstring('<div class="a POST-7 b" id="x12" width="80">t</div>')
    assert element_key(same) == element_key(el)


def test_lcs_pairs():
    assert lcs_pairs(("a", "b", "c", "d"), ("a", "x", "c", "d")) == [(0, 0), (2, 2), (3, 3)]
    assert lcs_pairs(("h", "m", "f"), ("h", "ad", "m", "f")) == [(0, 0), (1, 2), (2, 3)]
    assert lcs_pairs((), ("a",)) == []
    assert lcs_pairs(("a", "b"), ("b", "a")) in ([(0, 1)], [(1, 0)])


def _menu_page(n_links: int, title: str) -> str:
    items = "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(n_links))
    return (
        f'<html><body><ul id="menu">{items}</ul>'
        f'<div id="content"><h1>{title}</h1><div class="text"><p>{title} one</p><p>{title} two</p></div></div>'
        f"</body></html>"
    )


def test_seven_and_nine_link_lists_are_one_style():
    # li > a: the li is the leaf (parent of the actual leaf a); the run of li leaves is
    # merged into one node and ul (one child left) absorbs it: ul#menu is one leaf.
    t7 = pst(_menu_page(7, "Alpha"))
    t9 = pst(_menu_page(9, "Beta"))
    (b7,) = t7.children
    (b9,) = t9.children
    assert b7.child_keys() == b9.child_keys() == ("ul|id=menu", "div|id=content")
    menu = b7.children[0]
    assert menu.leaf and len(menu.tops) == 1 + 7  # the 7 li tops and the ul folded in
    sst = sst_of([_menu_page(7, "Alpha"), _menu_page(9, "Beta")])
    body = body_node(sst)
    assert len(body.styles) == 1 and body.styles[0].n == 2
    ul = body.styles[0].elements[0]
    assert ul.m == 2 and ul.leaf_n == 2
    # the words of the 9 links: "section" on both pages (7 + 9 times)
    assert ul.feats["section"][0] == 16 and ul.feats["section"][2] == 2


def test_single_child_chains_fold_and_direct_text_is_a_leaf():
    t = pst(
        '<body><div id="w"><div><div class="in"><p>a b</p><ul><li><a href="/x">x y</a>'
        "<span>z</span></li><li>more</li></ul></div></div></div></body>"
    )
    (body,) = t.children
    # body > div#w > div > div.in folds into body (outer key), children p and ul
    assert body.key == "body"
    assert body.child_keys() == ("p", "ul")
    t2 = pst("<body>hello <div><p>a</p><span><b>c</b></span></div></body>")
    (b2,) = t2.children
    assert b2.children[0].key == TEXT_KEY and b2.children[0].owner is not None
    assert b2.child_keys()[1] == "div"


def test_empty_elements_are_left_out():
    t = pst('<body><div class="clear"></div><br><p>text</p><div><span></span></div></body>')
    (body,) = t.children
    assert body.leaf  # only p is left; body absorbs it


def test_style_node_used_by_two_of_four_pages():
    # div#a > p: the div is the leaf (parent of the actual leaf p). With bare text the
    # divs would be actual leaves and BODY itself the leaf (3.6, point 2).
    a = '<body><div id="a"><p>home news</p></div><div id="b"><p>kiwi {0}</p></div></body>'
    c = (
        '<body><div id="a"><p>home news</p></div><table id="c"><tr><td>x</td>'
        "<td><p>peach {0}</p><p>q</p></td></tr></table></body>"
    )
    sst = sst_of([a.format("mango"), a.format("lemon"), c.format("plum"), c.format("lime")])
    body = body_node(sst)
    assert body.m == 4
    assert sorted(S.n for S in body.styles) == [2, 2]
    assert {S.keys for S in body.styles} == {("div|id=a", "div|id=b"), ("div|id=a", "table|id=c")}
    assert sst.root.m == 4 and sst.root.key == ROOT_KEY


def _site_page(ad: bool, words: str) -> str:
    slot = '<div class="ad"><a href="/buy">Buy now</a></div>' if ad else ""
    return (
        f'<body><div id="head"><a href="/">Home</a> <a href="/n">News</a></div>{slot}'
        f'<div id="main"><h1>{words}</h1><div class="story"><p>{words} body</p><p>more {words}</p></div>'
        f'<div class="share"><a href="/fb">Facebook</a></div></div>'
        f'<div id="foot">Copyright notice</div></body>'
    )


def test_exact_match_forks_on_an_ad_slot_tolerant_does_not():
    pages = [_site_page(False, "alpha"), _site_page(True, "beta"), _site_page(False, "gamma")]
    exact = sst_of(pages, "exact")
    assert len(body_node(exact).styles) == 2  # the ad page opened a second branch
    tol = sst_of(pages, "tolerant")
    body = body_node(tol)
    (S,) = body.styles
    assert S.n == 3
    assert S.keys == ("div|id=head", "div|class=ad", "div|id=main", "div|id=foot")
    assert S.occ == [3, 1, 3, 3]
    main = S.elements[2]
    assert main.m == 3 and len(main.styles) == 1 and main.styles[0].n == 3
    # below the slot, the story container is one element node with all three pages
    story = main.styles[0].elements[1]
    assert story.key == "div|class=story" and story.m == 3


def test_tolerant_rule_rejects_unrelated_sequences():
    a = '<body><div id="x"><b>1 a</b></div><div id="y"><b>2 b</b></div><div id="z"><b>3 c</b></div></body>'
    b = '<body><p class="q"><b>1 a</b></p><p class="r"><b>2 b</b></p><p class="s"><b>3 c</b></p></body>'
    tol = sst_of([a, b], "tolerant")
    assert len(body_node(tol).styles) == 2


def test_tree_json_round_trip():
    pages = [_site_page(False, "alpha"), _site_page(True, "beta"), _site_page(False, "gamma")]
    for match in ("exact", "tolerant"):
        sst = sst_of(pages, match)
        data = json.loads(json.dumps(tree_to_dict(sst)))
        back = tree_from_dict(data)
        assert back.size() == sst.size() and back.n_pages == 3 and back.match == match
        assert tree_to_dict(back) == data


def test_tree_from_dict_rejects_bad_data():
    sst = sst_of([_site_page(False, "alpha"), _site_page(False, "beta")])
    data = tree_to_dict(sst)
    with pytest.raises(TreeFormatError):
        tree_from_dict({"format": "x"})
    bad = json.loads(json.dumps(data))
    bad["styles"][0][1] = [0]  # a style pointing back at the root
    bad["styles"][0][2] = [1]
    with pytest.raises(TreeFormatError):
        tree_from_dict(bad)
    cyc = json.loads(json.dumps(data))
    # element 1 (body) gets a style that contains itself: a cycle
    cyc["styles"].append([1, [1], [1]])
    cyc["elements"][1][3].append(len(cyc["styles"]) - 1)
    with pytest.raises(TreeFormatError):
        tree_from_dict(cyc)
    neg = json.loads(json.dumps(data))
    neg["elements"][1][1] = -3
    with pytest.raises(TreeFormatError):
        tree_from_dict(neg)


def _deep_page(depth: int, text: str) -> PreparedPage:
    root = etree.Element("html")
    body = etree.SubElement(root, "body")
    side = etree.SubElement(body, "div", {"id": "side"})
    side.text = "menu links"
    cur = body
    for i in range(depth):
        cur = etree.SubElement(cur, "div", {"class": f"l{i % 3}"})
        if i % 1000 == 0:
            extra = etree.SubElement(cur, "span")
            extra.text = f"level {i} {text}"
    cur.text = text
    return PreparedPage(body, "", None)


def test_five_thousand_deep_page():
    pages = [_deep_page(5000, "deep alpha"), _deep_page(5000, "deep beta")]
    sst = SiteStyleTree(match="tolerant")
    for p in pages:
        sst.add_page(build_page_tree(p.root))
    data = tree_to_dict(sst)
    assert tree_from_dict(json.loads(json.dumps(data))).size() == sst.size()
    # and through the HTML parser too (whatever depth it keeps)
    html = "<html><body>" + "<div>" * 5000 + "x y" + "</div>" * 5000 + "</body></html>"
    assert build_page_tree(parse_html(html).root) is not None


def test_principal_class_keys():
    el = lxml_html.fromstring('<div class="entry entry-author-jane entry-category-travel" id="p7">t</div>')
    assert element_key(el, principal=True) == "div|class=entry;id=p#"
    assert element_key(el) == "div|class=entry entry-author-jane entry-category-travel;id=p#"
    tpl = '<body><div id="nav"><p>menu</p></div><div class="entry entry-author-{0}"><p>{1}</p><p>x</p></div></body>'
    pages = [tpl.format("jane", "kiwi"), tpl.format("john", "mango")]
    full = SiteStyleTree()
    principal = SiteStyleTree(principal=True)
    for h in pages:
        full.add_page(pst(h))
        principal.add_page(build_page_tree(parse_html(h).root, principal=True))
    assert len(body_node(full).styles) == 2
    assert len(body_node(principal).styles) == 1
    assert tree_from_dict(json.loads(json.dumps(tree_to_dict(principal)))).principal is True


def test_the_old_module_name_still_has_every_public_name():
    # style_tree was one module before the split; callers outside the sst package
    # import from it, and must get the very objects the new modules define
    from sst_cleaner.engine.methods.sst import page_style_tree, site_style_tree, style_tree, style_tree_json

    for name in style_tree.__all__:
        homes = [m for m in (page_style_tree, site_style_tree, style_tree_json) if hasattr(m, name)]
        assert homes and getattr(style_tree, name) is getattr(homes[0], name), name
    public = {
        name
        for m in (page_style_tree, site_style_tree, style_tree_json)
        for name, value in vars(m).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", m.__name__) == m.__name__
    }
    assert public - set(style_tree.__all__) == {"REF_FEATURES"}  # a switch: set it where it is read
