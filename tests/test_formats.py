"""result.text keeps code verbatim and drops permalinks; result.markdown and result.html
write the kept blocks with their structure, and the HTML is safe to show."""

from __future__ import annotations

import re

import docsite
import pytest
from lxml import html as lxml_html

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._dom import parse_html
from sst_cleaner.engine._formats import is_permalink
from sst_cleaner.engine._result import Block, CleanResult
from sst_cleaner.engine._segment import text_blocks

WORD = re.compile(r"\w+")


def all_kept(html: str, url=None) -> CleanResult:
    """Every text block of the page kept: the tests below are about writing, not choosing."""
    page = parse_html(html, url=url)
    blocks = [Block(page.xpath_of(b.element), b.text, "informative") for b in text_blocks(page.root)]
    return CleanResult(text="\n".join(b.text for b in blocks), sentences=[], blocks=blocks, method="all", page=page)


@pytest.fixture(scope="module")
def cleaned():
    pages = docsite.site(8)
    cleaner = SiteCleaner().fit(pages[:7])
    url, html = pages[7]
    return cleaner.clean(html, url=url), docsite.article(7)


def test_pre_keeps_lines_and_indentation(cleaned):
    result, art = cleaned
    assert art["code"] in result.text  # every line, indentation and the blank line
    assert "def handler_7(request):\n    if request.ok:\n        return 7\n\n    return None" in result.text


def test_permalink_glyphs_are_dropped_everywhere(cleaned):
    result, art = cleaned
    assert art["title"] in result.text
    for out in (result.text, result.markdown, result.html):
        assert "¶" not in out and "§" not in out
    assert "Permalink" not in result.html


def test_text_tokens_are_the_kept_blocks_tokens(cleaned):
    """Structure changes no word: the text's tokens are the kept blocks' tokens."""
    result, _ = cleaned
    kept = " ".join(" ".join(b.sentences) if b.sentences else b.text for b in result.blocks if b.label == "informative")
    assert sorted(WORD.findall(result.text)) == sorted(WORD.findall(kept))
    # Markdown adds only punctuation, and the "1." of ordered items
    markdown = re.sub(r"(?m)^\s*1\. ", "", result.markdown)
    assert sorted(WORD.findall(markdown)) == sorted(WORD.findall(result.text))


def test_markdown_structure(cleaned):
    result, art = cleaned
    md = result.markdown
    assert f"# {art['title']}\n" in md
    assert f"```\n{art['code']}\n```" in md
    for item in art["items"]:
        assert f"- {item}" in md.split("\n")
    for step in art["steps"]:
        assert f"1. {step}" in md.split("\n")
    assert "\n\n".join(art["paras"][:1]) in md


def test_html_structure(cleaned):
    result, art = cleaned
    doc = lxml_html.fromstring(f"<div>{result.html}</div>")
    assert doc.xpath("string(//h1)") == art["title"]
    assert doc.xpath("string(//pre/code)") == art["code"]
    assert [li.text_content() for li in doc.xpath("//ul/li")] == art["items"]
    assert [li.text_content() for li in doc.xpath("//ol/li")] == art["steps"]


def test_markdown_tables_and_nested_lists():
    page = """<html><body><article><h2>Table</h2><table><tr><th>Name</th><th>Value</th></tr>
    <tr><td>alpha|beta</td><td>1</td></tr><tr><td>gamma</td><td>2</td></tr></table>
    <ul><li>outer one</li><li>outer two<ul><li>inner</li></ul></li></ul></article></body></html>"""
    result = all_kept(page)
    md = result.markdown
    assert "| Name | Value |\n| --- | --- |\n| alpha\\|beta | 1 |\n| gamma | 2 |" in md
    assert "- outer two\n  - inner" in md
    doc = lxml_html.fromstring(f"<div>{result.html}</div>")
    assert doc.xpath("string(//ul/li[2]/ul/li)") == "inner"
    assert [c.text_content() for c in doc.xpath("//tr[1]/th")] == ["Name", "Value"]


def test_links_are_optional_and_safe():
    page = """<html><body><div><p>Read the <a href="/guide">guide to lanterns</a> or
    <a href="javascript:alert(1)">click here</a> or <a href=" JaVa&#x09;script:alert(2)">this</a>
    or <a href="data:text/html,x">data</a> before you start the long walk.</p></div></body></html>"""
    result = all_kept(page, url="http://docs.test/a/b.html")
    assert "[guide to lanterns](http://docs.test/guide)" in result.as_markdown(links=True)
    assert "](" not in result.markdown and "<a " not in result.html
    linked = result.as_html(links=True)
    assert '<a href="http://docs.test/guide">guide to lanterns</a>' in linked
    assert linked.count("<a ") == 1 and "javascript" not in linked.lower() and "data:" not in linked


HOSTILE = """<html><body><div onclick="steal()"><h1 onmouseover="x()">Safe <img src=x onerror=alert(1)> title</h1>
<p style="color:red">A paragraph about &lt;script&gt;alert(1)&lt;/script&gt; text that must stay text here.</p>
<script>alert(2)</script><style>p{}</style><iframe src="http://evil"></iframe>
<p><a href="javascript:evil()" onclick="y()">a link</a> in the long paragraph of words</p></div></body></html>"""


@pytest.mark.parametrize("links", [False, True])
def test_html_output_has_only_structural_markup(links):
    out = all_kept(HOSTILE).as_html(links=links)
    doc = lxml_html.fromstring(f"<div>{out}</div>")
    allowed = {
        "div",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "p",
        "ul",
        "ol",
        "li",
        "pre",
        "code",
        "table",
        "tr",
        "th",
        "td",
        "blockquote",
        "br",
        "a",
    }
    for el in doc.iter():
        assert el.tag in allowed, el.tag
        assert set(el.attrib) <= {"href"}, el.attrib
    assert "<script" not in out and "alert(2)" not in out and "javascript" not in out.lower()
    assert "&lt;script&gt;" in out  # the page's text is escaped, not markup


def test_permalink_rule_keeps_word_anchors():
    doc = lxml_html.fromstring(
        '<div><a href="#top">Back to top</a><a href="#s">#</a>'
        '<a class="headerlink" href="#h">¶</a><a href="/x">§</a></div>'
    )
    verdicts = [is_permalink(a) for a in doc.iter("a")]
    assert verdicts == [False, True, True, False]


@pytest.mark.parametrize(
    "marks",
    [
        "HeaderLink",
        "PERMA-LINK",
        "anchor-link",
        "Heading-Anchor",
        "anchorJS",
        "headerl\u0130nk",
        "headerl\u0131nk",
        "anchorj\u017f",
        "headerlin\u212a",
        "ANCHOR\u212a",
        "anchor  link",
        "link anchor",
        "\u00e9 permalink \u00e9",
        "headerli\u0307nk",
        "",
        "  ",
    ],
)
def test_permalink_words_are_found_as_the_case_blind_regex_finds_them(marks):
    from sst_cleaner.engine._formats import _PERMALINK_WORDS, _names_permalink

    assert _names_permalink(marks) == (_PERMALINK_WORDS.search(marks) is not None)


def test_a_result_without_its_page_still_has_formats():
    r = CleanResult(text="one <two>\nthree", sentences=[], blocks=[], method="x")
    assert r.markdown == "one \\<two>\n\nthree"  # each line a paragraph, its text escaped
    assert r.html == "<p>one &lt;two&gt;</p>\n<p>three</p>"


def _rewritten_before(blocks, page) -> set:
    """The rewritten blocks as every anchor of the page defines them, among the
    informative blocks' elements (what rewrite_text reads of them)."""
    from sst_cleaner.engine._dom import BLOCK_TAGS

    out = set()
    for pre in page.root.iter("pre"):
        out.update(d for d in pre.iter() if d.tag in BLOCK_TAGS)
    for a in page.root.iter("a"):
        if is_permalink(a):
            node = a.getparent()
            while node is not None and node.tag not in BLOCK_TAGS:
                node = node.getparent()
            out.add(node)
    kept = {page.element_at(b.xpath) for b in blocks if b.label == "informative"}
    return out & kept


@pytest.mark.parametrize(
    "body",
    [
        "<div>Intro <span><em><a class='headerlink' href='#x'>¶</a></em></span> text<p>Para "
        "<a href='#y'>§</a></p></div>",
        "<div><p>Words only</p><section>Own text <b>and <i><a href='#z'>#</a></i></b></section></div>",
        "<div>Outer<ul><li>Item <a title='Permalink to this' href='/x'>link</a></li></ul></div>",
        "<pre>code\n  <div>inner block</div><span>x</span></pre><p>after</p>",
        "<div>No permalink <a href='/a'>here</a><p><a href='#'>a word</a></p></div>",
    ],
)
def test_rewritten_blocks_are_found_from_the_kept_blocks(body):
    """Looking into the informative blocks' own content finds the blocks a walk over
    every anchor of the page finds (nested blocks are their own)."""
    from sst_cleaner.engine._formats import _rewritten_blocks

    result = all_kept(f"<html><body>{body}</body></html>")
    assert _rewritten_blocks(result.blocks, result.page) == _rewritten_before(result.blocks, result.page)
    noise = [Block(b.xpath, b.text, "noise") for b in result.blocks]
    assert _rewritten_blocks(noise, result.page) == set()


def test_an_element_cut_into_many_blocks_is_looked_into_once():
    """Text runs between nested blocks are blocks of one element: its own content is
    walked once, not once per block (which was quadratic in the runs)."""
    import time

    from sst_cleaner.engine._formats import _rewritten_blocks

    def cost(n: int) -> float:
        page = parse_html("<html><body><div>" + "t <p>p</p>" * n + "</div></body></html>")
        path = page.xpath_of(page.root.find("div"))
        blocks = [Block(path, "t", "informative")] * n
        t0 = time.perf_counter()
        _rewritten_blocks(blocks, page)
        return time.perf_counter() - t0

    small, big = min(cost(1000) for _ in range(3)), min(cost(8000) for _ in range(3))
    assert big <= 24 * small + 0.02
