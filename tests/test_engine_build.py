"""The compiled engine (Cython builds of the engine's modules, see setup.py) and the pure
Python one are the same program: which one runs is reported, and a build never lags
behind the sources it was made from."""

from __future__ import annotations

import ast
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sst_cleaner
from sst_cleaner import ENGINE_BUILD, SiteCleaner

ENGINE = Path(sst_cleaner.__file__).resolve().parent / "engine"
ROOT = ENGINE.parent.parent
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _builds() -> dict[Path, Path]:
    """Every compiled module of the engine beside the source it was built from."""
    found = {}
    for path in ENGINE.rglob("*"):
        for suffix in _SUFFIXES:
            if path.name.endswith(suffix):
                stem = path.name[: -len(suffix)]
                source = path.with_name(stem + ".py")
                found[path] = source if source.exists() else path.with_name(stem + ".pyx")
                break  # the longest suffix first: ".cpython-311-x86_64-linux-gnu.so" before ".so"
    return found


def test_the_engine_build_is_the_one_this_installation_is_expected_to_have():
    # CI says which build each of its runs installed; without it, a build is either
    # wholly compiled or wholly pure (a half-built engine means a failed compile)
    expected = os.environ.get("SST_EXPECT_ENGINE_BUILD")
    if expected:
        assert ENGINE_BUILD == expected
    builds = _builds()
    if ENGINE_BUILD == "compiled":
        built = set(builds.values())
        # and the modules written against lxml's C API (.pyx: no pure-Python source)
        listed = {ROOT / name for name in _compiled_list()} | set(ENGINE.rglob("*.pyx"))
        assert listed <= built, f"not compiled: {sorted(str(p) for p in listed - built)}"
        # and the walk over libxml2's nodes is the one that runs
        from sst_cleaner.engine._compiled import walk_function

        assert walk_function("text_blocks") is not None
    else:
        assert not builds


def _compiled_list() -> list[str]:
    """setup.py's COMPILED: the modules the compiled build is made of."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COMPILED":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py names no COMPILED modules")


def test_no_compiled_module_is_older_than_its_source():
    # Python imports a module's compiled build before its source: an engine module edited
    # after the build would silently not run. Rebuild with `pip install -e .`.
    stale = [str(so) for so, py in _builds().items() if py.exists() and py.stat().st_mtime > so.stat().st_mtime]
    assert not stale, f"rebuild (pip install -e .): these builds are older than their sources: {stale}"


def test_the_command_line_says_which_engine_runs():
    out = subprocess.run(
        [sys.executable, "-m", "sst_cleaner", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert f"({ENGINE_BUILD} engine)" in out


@pytest.mark.parametrize("method", ["default", "cetd", "sst"])
def test_a_fitted_cleaner_survives_a_round_trip_through_a_file(tmp_path, method):
    # compiled classes and functions must still save and load as the pure ones do
    from docsite import site

    pages = [html for _url, html in site(6)]
    cleaner = SiteCleaner(method=method).fit(pages[:5])
    path = tmp_path / "site.json"
    cleaner.save(str(path))
    again = SiteCleaner.load(str(path))
    assert again.clean(pages[5]).text == cleaner.clean(pages[5]).text
    assert cleaner.clean(pages[5]).text


def _blocks_both_ways(root, style_attrs=None) -> tuple[list, list]:
    """Each walk's blocks of ``root``, with every annotate call and every element and
    node it reports: the walk over libxml2's nodes, where it is built, and the Python one."""
    from sst_cleaner.engine import _segment
    from sst_cleaner.engine._compiled import walk_function

    def run(walk) -> list:
        calls: list = []

        def annotate(el, parent, *read):
            calls.append((el, parent, *read))
            return len(calls)

        elements: list = []
        nodes: tuple = ([], [], [])
        saved, _segment._c_walk = _segment._c_walk, walk
        try:
            blocks = _segment.text_blocks(root, annotate, elements, nodes, style_attrs)
            plain = _segment.text_blocks(root)
        finally:
            _segment._c_walk = saved
        seen = [(b.element, b.text, b.state, b.link_chars, b.n_links) for b in blocks]
        return [seen, calls, elements, nodes, [(b.element, b.text, b.link_chars) for b in plain]]

    return run(walk_function("text_blocks")), run(None)


def test_the_compiled_walk_cuts_a_page_into_the_blocks_the_python_walk_does():
    from docsite import site
    from lxml import html as lxml_html

    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.tools.demo.site import DemoSite

    demo = DemoSite(n_articles=6)
    pages = [h for _u, h in site(4)] + [demo.page(p) or "" for p in demo.paths[:8]]
    # what page preparation never leaves, which the compiled walk hands to the Python one
    odd = (
        "<html><body><div>a<!-- note -->b<?pi x?><p>c<a href=x>d<b>e</b></a>f</p>g"
        "<svg:rect xmlns:svg='http://www.w3.org/2000/svg'>h</svg:rect><br>i</div></body></html>"
    )
    roots = [parse_html(h).root for h in pages] + [lxml_html.document_fromstring(odd)]
    for root in roots:
        for style_attrs in (None, frozenset({"class", "id"})):
            compiled, pure = _blocks_both_ways(root, style_attrs)
            assert compiled == pure
            assert pure[0]  # blocks were found


def _generated_roots() -> list:
    from docsite import site
    from lxml import html as lxml_html

    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.tools.demo.site import DemoSite

    demo = DemoSite(n_articles=6)
    pages = [h for _u, h in site(4)] + [demo.page(p) or "" for p in demo.paths[:8]]
    marked = (
        "<html><head><meta name=a content=b></head><body><p rel=author>A<span itemprop=author>B</span></p>"
        "<div><time datetime=2020-01-01>x</time><!-- c --><link rel=author href=y><meta itemprop=author content=z>"
        "<p class=k>1</p><p class=k>2</p><p>3</p><b itemprop='author x'>no</b><a rel=AUTHOR>no</a></div></body></html>"
    )
    hidden = (
        "<html><body><div style='DISPLAY : NONE'>a</div><div style='color:red'>b</div>"
        "<p style='display:\tnone;y'>c</p><p aria-hidden=true hidden>d</p><p hidden aria-hidden=true>e</p>"
        "<span style='visibility: Hidden'>f<i aria-hidden='true'></i><i aria-hidden=TRUE></i></span>"
        "<p style='displ\u0430y:none'>g</p><p style='VISIBILITY:HIDDEN'>h</p><p hidden=''>i</p>"
        "<p style='width:1px; display :none !important'>j<b style='display:block'>k</b></p></body></html>"
    )
    raw = [lxml_html.document_fromstring(marked), lxml_html.document_fromstring(hidden)]
    return [parse_html(h).root for h in pages + [marked]] + raw


@pytest.mark.skipif(ENGINE_BUILD != "compiled", reason="the compiled look-ups are built with the engine only")
def test_the_compiled_lookups_find_what_lxml_finds():
    # each function of _walk.pyx restates a Python walk over lxml's proxies: the same
    # elements, in the same order, on generated pages and a page of edge cases
    from sst_cleaner.engine import _walk
    from sst_cleaner.engine._dom import _HIDING_ATTRS, _child_steps
    from sst_cleaner.engine.methods.sitestats import _page_context

    for root in _generated_roots():
        body = list(root.iter("meta", "link", "time"))
        assert _walk.find_elements(root, (b"meta", b"link", b"time")) == body
        assert _walk.find_elements(root, (b"meta", b"link", b"time"), None, None, 1) == body[:1]
        marked = [el for el in root.iter() if el.get("rel") == "author" or el.get("itemprop") == "author"]
        assert _walk.find_elements(root, None, (b"rel", b"itemprop"), "author") == marked
        # the hidden elements: grouped by element, the first hiding attribute deciding
        by_xpath: list = []
        for attr in _HIDING_ATTRS(root):
            if not by_xpath or by_xpath[-1][0] is not attr.getparent():
                by_xpath.append((attr.getparent(), attr.attrname == "aria-hidden"))
        assert _walk.hiding_elements(root) == by_xpath
        assert _walk.document_elements(root) == int(root.xpath("count(/descendant::*)"))
        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            assert _walk.child_steps(el) == _child_steps(el)
            agg = {ch: [len(ch.text or ""), 0, 0] for ch in el}
            compiled = _walk.child_kinds(el, agg)
            saved, _page_context._c_child_kinds = _page_context._c_child_kinds, None
            try:
                ctx = object.__new__(_page_context.PageContext)
                ctx._kinds, ctx.agg = {}, agg
                for ch in el:
                    if isinstance(ch.tag, str):
                        assert ctx.like_siblings(el, ch) == (compiled[ch][0], compiled[ch][1] / compiled[ch][0])
                assert ctx._kinds.get(el, {}) == compiled or not len(el)
            finally:
                _page_context._c_child_kinds = saved


@pytest.mark.skipif(ENGINE_BUILD != "compiled", reason="the compiled look-ups are built with the engine only")
def test_the_compiled_walk_finds_the_runs_of_combining_marks_the_python_check_finds():
    from lxml import html as lxml_html

    from sst_cleaner.engine import _dom, _walk

    _dom._nonstarter_run_patterns()
    bits = _dom._NONSTARTER_BITS

    def python_check(root) -> bool:
        texts = [t for el in root.iter() for t in (el.text, el.tail) if t]
        return any(_dom._run_pattern(t).search(t) for t in texts)

    mark, astral = "\u0301", "\U0001d165"
    cases = {
        f"<p>a{mark * 31}</p>": True,
        f"<p>a{mark * 30}</p>": False,
        f"<div><p>x</p>b{mark * 40} c</div>": True,  # a tail
        f"<p>a{mark * 20}<b>{mark * 20}</b></p>": False,  # split by an element
        f"<p>{astral * 31}</p>": True,
        f"<p>{astral * 30}\u00e9{mark * 30}</p>": False,
        "<p>" + "\u4e2d\u6587" * 400 + "</p>": False,
        "<p>caf\u00e9 " + "\u0915\u094d" * 40 + "</p>": False,
    }
    for body, expected in cases.items():
        root = lxml_html.document_fromstring(f"<html><body>{body}</body></html>")
        assert python_check(root) is expected, body
        assert _walk.holds_run(root, bits, _dom.MAX_NONSTARTERS) is expected, body
    for root in _generated_roots():
        assert _walk.holds_run(root, bits, _dom.MAX_NONSTARTERS) is python_check(root)


@pytest.mark.skipif(ENGINE_BUILD != "compiled", reason="the compiled tree walk is built with the engine only")
def test_the_compiled_tree_walk_scores_rows_as_the_numpy_walk_does():
    # the shipped scorers on random rows, on rows sitting exactly on the splits' thresholds
    # (which go left) and on rows of ints: the same probabilities, to the bit
    import numpy as np

    from sst_cleaner.engine.methods.sitestats import _scorer

    rng = np.random.default_rng(7)
    scorers = _scorer.load_scorer()
    for ensemble in (scorers.site, scorers.page):
        n_cols = ensemble.n_features
        rows = [list(rng.uniform(-1.0, 12.0, n_cols)) for _ in range(300)]
        on_splits = [[0.0] * n_cols for _ in range(50)]
        for row in on_splits:
            for slot in rng.integers(0, len(ensemble._feature), 40):
                row[ensemble._feature[slot]] = float(ensemble._threshold[slot])
        ints = [[int(v) for v in row] for row in rows[:50]]
        for batch in (rows, on_splits, ints, rows[:1]):
            compiled = ensemble.predict_rows(batch)
            saved, _scorer._c_leaf_indices = _scorer._c_leaf_indices, None
            try:
                by_numpy = ensemble.predict_rows(batch)
            finally:
                _scorer._c_leaf_indices = saved
            assert compiled.tobytes() == by_numpy.tobytes()
        assert len(set(ensemble.predict_rows(rows).tolist())) > 10  # the rows reach many leaves


@pytest.mark.skipif(ENGINE_BUILD != "compiled", reason="the compiled word scan is built with the engine only")
def test_the_compiled_word_scan_counts_the_code_words_the_expression_finds():
    # random texts of the expression's characters, letters of other scripts and Unicode
    # spaces, and marks near the 41st character of a word: the count str.split() and the
    # expression give
    import random

    from sst_cleaner.engine.methods.sitestats import _page_context

    rng = random.Random(5)
    pieces = list("abxzABXZ09_:->()<>{}[];=&*#.é日ß\u0130 \t\n\xa0\u2003\u3000\x1c\x85")
    pieces += ["aB", ".get(", "::", "->", "()", "a_b", "x" * 45]
    for _ in range(3000):
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(rng.randint(0, 4))]
        edge = "w" * rng.randint(37, 42)
        texts.append(edge + rng.choice(["_a", "aB", "#", "::", ".ab("]) + " ." + "a" * rng.randint(39, 41) + "(")
        saved, _page_context._c_code_word_counts = _page_context._c_code_word_counts, None
        try:
            expected = _page_context.code_word_share(texts)
        finally:
            _page_context._c_code_word_counts = saved
        assert _page_context.code_word_share(texts) == expected, texts
    assert _page_context.code_word_share(["a_b x", "y"]) == 1 / 3  # the count itself, not only agreement


@pytest.mark.skipif(ENGINE_BUILD != "compiled", reason="the compiled look-ups are built with the engine only")
def test_the_compiled_paths_name_elements_as_the_python_paths_do():
    # generated pages, a wide parent (its steps from one table) beside narrow ones (their
    # siblings counted), same-named siblings and comments between them; asked in document
    # order and in reverse (the memos filled in another order)
    from docsite import site

    from sst_cleaner.engine import _compiled
    from sst_cleaner.engine._dom import parse_html

    wide = "".join(f"<p>{i}</p><!-- c --><div>x</div>" if i % 7 else f"<span>{i}</span>" for i in range(80))
    pages = [h for _u, h in site(3)]
    pages.append(f"<html><body><div>{wide}</div><ul><li>a<li>b</ul><ol><li>c</ol><p>z</p><section><p>y</section>")
    compiled = _compiled.walk_function("element_path")
    for html in pages:
        for order in (1, -1):
            paths = {}
            for use in (compiled, None):
                page = parse_html(html)
                elements = [el for el in page.root.iter() if isinstance(el.tag, str)][::order]
                _compiled._found["element_path"] = use
                try:
                    paths[use] = [page.xpath_of(el) for el in elements]
                finally:
                    _compiled._found["element_path"] = compiled
            assert paths[compiled] == paths[None]
            assert len(set(paths[None])) == len(paths[None])  # every element named apart


@pytest.mark.skipif(ENGINE_BUILD != "compiled", reason="the compiled tag scan is built with the engine only")
def test_the_compiled_tag_scan_caps_the_attributes_the_expression_caps():
    # random markup of tag pieces (quotes left open or closed, "=" with and without
    # values, "/" and every kind of space between attributes, stray "<") and tags of
    # attributes around the cap: where each scan stops, from every start, and the capped
    # page, agree
    import random

    from sst_cleaner.engine import _attr_cap

    rng = random.Random(11)
    pieces = list("<<<>>/=\"'ab1 \t\n\x0c\r\x1c\x85\xa0\u1680\u2003\u2028\u3000é日")
    pieces += ["<a", "<p ", "<br>", "<x-y", " c", " d=e", ' f="g h"', " i='j>k'", ' l="', " m=", "=n", "/o", "</p>"]
    for _ in range(3000):
        cap = rng.choice([1, 2, 3, 5])
        html = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        if rng.random() < 0.3:
            html += "<div" + "".join(
                rng.choice([" a", " b=1", "/c", ' d="x y"', "\xa0e"]) for _ in range(cap + rng.randint(-1, 2))
            )
        pattern = _attr_cap._short_tags_pattern(cap)
        for pos in range(len(html) + 1):
            assert _attr_cap._c_run_end(html, pos, cap) == _attr_cap._run_end(pattern, html, pos), (html, pos, cap)
        saved, _attr_cap._c_run_end = _attr_cap._c_run_end, None
        try:
            expected = _attr_cap._cap_attributes(html * 3, cap)
        finally:
            _attr_cap._c_run_end = saved
        assert _attr_cap._cap_attributes(html * 3, cap) == expected, (html, cap)
    # a cap above MIN_ATTRIBUTES, which the expression reaches in two scans
    for n in (60, 64, 65, 66, 67, 70, 200):
        html = "<p>x</p><div" + "".join(f" a{i}=v" for i in range(n)) + ">y</div>" + "<b c d>" * 40
        saved, _attr_cap._c_run_end = _attr_cap._c_run_end, None
        try:
            expected = _attr_cap._cap_attributes(html, 66)
        finally:
            _attr_cap._c_run_end = saved
        assert _attr_cap._cap_attributes(html, 66) == expected
        assert (" a65=v" in expected) is (n >= 66) and " a66=v" not in expected, n  # 66 kept, no more
    # the cap itself, not only agreement: the third attribute and what follows it in the tag go
    assert _attr_cap._cap_attributes("<p a b c d>text</p>" * 3, 2) == "<p a b>text</p>" * 3
