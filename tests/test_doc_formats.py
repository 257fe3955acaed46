"""Markdown and HTML that a page's text can never turn into markup, and documentation
pages (Sphinx, Doxygen) that keep their structure: lists stay lists, definitions stay
definitions, inline code keeps its backticks and a code listing comes out whole, in
order, fenced. Markdown is checked by rendering it with a CommonMark renderer."""

from __future__ import annotations

import re

import docmarkup
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import html as lxml_html
from markdown_it import MarkdownIt

from sst_cleaner import SiteCleaner

# the CommonMark preset passes raw HTML through, as most renderers do by default
RENDERER = MarkdownIt("commonmark").enable("table").enable("strikethrough")
FILLER = "The lantern keepers of the northern harbor walk the long quay every evening before the tide turns."


def render(markdown: str):
    """The Markdown rendered to HTML, parsed."""
    return lxml_html.fromstring(f"<div>{RENDERER.render(markdown)}</div>")


def norm(text: str) -> str:
    return " ".join(text.split())


def one_page(paragraph: str, extra: str = "") -> str:
    return f"""<html><head><title>Harbor notes</title></head><body><article><h1>Harbor notes</h1>
<p>{FILLER} {paragraph} {FILLER}</p>{extra}</article></body></html>"""


HOSTILE_TEXT = (
    "&lt;script&gt;alert(1)&lt;/script&gt; and &lt;img src=x onerror=alert(2)&gt; and "
    "&lt;iframe src=//evil.test&gt;&lt;/iframe&gt; and [x](javascript:alert(3)) and ![i](javascript:alert(4)) "
    "and &lt;javascript:alert(5)&gt; and &amp;lt;b&amp;gt; and *stars* _under_ `tick` ~~gone~~"
)


def _no_live_markup(doc) -> None:
    assert not doc.xpath("//script | //img | //iframe | //b | //em | //strong | //s | //del | //code")
    for a in doc.iter("a"):
        assert not a.get("href", "").lower().startswith("javascript"), a.get("href")


@pytest.mark.parametrize("links", [False, True])
def test_markdown_page_text_never_becomes_markup(links):
    page = one_page(HOSTILE_TEXT + ' and <a href="https://harbor.test/tides">the tide tables</a>.')
    result = SiteCleaner().clean(page, url="https://harbor.test/notes")
    assert "<script>alert(1)</script>" in result.text  # the page's text, as text
    markdown = result.as_markdown(links=links)
    doc = render(markdown)
    _no_live_markup(doc)
    hrefs = [a.get("href") for a in doc.iter("a")]
    assert hrefs == (["https://harbor.test/tides"] if links else [])
    # the text reads as the page's text once rendered
    assert norm(doc.text_content()) == norm(result.text)


def test_markdown_block_starts_in_text_stay_text():
    starts = ["# not a heading", "> not a quote", "- not an item", "1. not a step", "+ no", "=== no", "--- no"]
    extra = "".join(f"<p>{s} {FILLER}</p>" for s in starts)
    result = SiteCleaner().clean(one_page("Plain words.", extra))
    doc = render(result.markdown)
    assert not doc.xpath("//h2 | //blockquote | //ul | //ol | //hr")
    assert norm(doc.text_content()) == norm(result.text)


# text that a page can hold, dense in what Markdown reads as markup
_TEXTS = st.text(alphabet=st.sampled_from(list("ab1 _*~`[]()<>!&#;:/\\|-+=.'\"x")), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_markdown_renders_back_to_the_page_text(text):
    from html import escape

    page = one_page(escape(text))
    result = SiteCleaner().clean(page)
    doc = render(result.markdown)
    _no_live_markup(doc)
    assert not list(doc.iter("a"))
    assert norm(doc.text_content()) == norm(result.text)


def test_markdown_links_end_where_their_url_ends():
    page = one_page('See <a href="https://harbor.test/a (b)/c\\d<e>">the odd page</a> today.')
    result = SiteCleaner().clean(page)
    doc = render(result.as_markdown(links=True))
    (a,) = doc.iter("a")
    assert a.text_content() == "the odd page"
    assert a.get("href") == "https://harbor.test/a%28b%29/c%5Cd%3Ce%3E"  # spaces dropped, as browsers do


_ATTRS = st.sampled_from(
    [
        'onclick="steal()"',
        'onerror="x()"',
        'style="background:url(javascript:x)"',
        'href="javascript:alert(1)"',
        'href=" java\tscript:alert(1)"',
        'href="data:text/html,&lt;script&gt;"',
        'src="javascript:alert(1)"',
        'href="vbscript:msgbox"',
        'formaction="javascript:x"',
    ]
)
_TAGS = st.sampled_from(["p", "a", "li", "h2", "code", "span", "td", "dd", "img", "svg", "math", "iframe", "pre"])
_HTML_TEXT = st.text(alphabet=st.sampled_from(list("ab <>&\"'=/scriptonerl()")), max_size=30)
_SAFE_HREF = re.compile(r"^(https?:|mailto:|ftp:|/|[^:]*$)", re.I)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TAGS, _ATTRS, _HTML_TEXT), min_size=1, max_size=6), st.booleans())
def test_html_output_never_holds_script_handlers_or_script_urls(parts, links):
    from html import escape

    body = "".join(f"<{tag} {attr}>{escape(text)} {FILLER}</{tag}>" for tag, attr, text in parts)
    page = f"<html><body><article><h1>Harbor notes</h1>{body}<script>alert(9)</script></article></body></html>"
    out = SiteCleaner().clean(page, url="https://harbor.test/n").as_html(links=links)
    doc = lxml_html.fromstring(f"<div>{out}</div>")
    allowed = set("div h1 h2 h3 h4 h5 h6 p br ul ol li dl dt dd table tr th td pre code blockquote a".split())
    for el in doc.iter():
        assert el.tag in allowed, el.tag
        assert set(el.attrib) <= ({"href"} if el.tag == "a" else set()), el.attrib
        assert _SAFE_HREF.match(el.get("href", "")), el.get("href")
    assert "alert(9)" not in out


# -- documentation sites -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sphinx():
    """Page 7 of a Sphinx manual and its view-source page, cleaned with a model of the
    manual's other pages."""
    pages = docmarkup.sphinx_site(8)
    cleaner = SiteCleaner().fit(pages[:7] + pages[8:15])
    (guide_url, guide), (source_url, source) = pages[7], pages[15]
    return cleaner.clean(guide, url=guide_url), cleaner.clean(source, url=source_url), docmarkup.sphinx_article(7)


def test_sphinx_list_items_stay_items_with_their_nested_list(sphinx):
    result, _, art = sphinx
    md = result.markdown
    items, nested = art["items"], art["nested"]
    expected = "\n".join([f"- {x}" for x in items] + [f"  - {x}" for x in nested] + ["", f"  {art['more']}"])
    assert expected in md
    assert "\n".join(f"1. {x}" for x in art["steps"]) in md
    for out in (render(md), lxml_html.fromstring(f"<div>{result.html}</div>")):
        top = out.xpath("//ul[not(ancestor::ul)]/li")
        assert [norm(li.xpath("string(text())")) or norm(li.xpath("string(p[1])")) for li in top] == items
        assert [norm(li.text_content()) for li in top[-1].xpath("ul/li")] == nested
        assert art["more"] in top[-1].text_content()  # the item's later paragraph stays in it
        assert [norm(li.text_content()) for li in out.xpath("//ol/li")] == art["steps"]


def test_sphinx_definition_lists_keep_term_and_definition(sphinx):
    result, _, art = sphinx
    assert f"{art['term']}\n: {art['definition']}" in result.markdown
    doc = lxml_html.fromstring(f"<div>{result.html}</div>")
    terms = [norm(dt.text_content()) for dt in doc.iter("dt")]
    assert terms == [art["term"], f"{art['func']}(size)"]
    assert [norm(dd.text_content()) for dd in doc.iter("dd")] == [art["definition"], art["func_doc"]]


def test_sphinx_inline_literals_keep_their_backticks(sphinx):
    result, _, art = sphinx
    assert f"Call `{art['literal']}` first." in result.markdown
    assert f"Call <code>{art['literal']}</code> first." in result.html
    assert f"Call {art['literal']} first." in result.text  # the text is unchanged


def test_sphinx_view_source_listing_comes_out_whole_in_order(sphinx):
    _, result, _ = sphinx
    code = docmarkup.viewcode_source(7)
    assert code in result.text  # every line, in the module's order, without the [docs] links
    assert f"```\n{code}\n```" in result.markdown
    assert result.markdown.count("```") == 2  # one listing, not its pieces
    doc = lxml_html.fromstring(f"<div>{result.html}</div>")
    assert [pre.text_content() for pre in doc.iter("pre")] == [code]


@pytest.fixture(scope="module")
def doxygen():
    pages = docmarkup.doxygen_site(8)
    cleaner = SiteCleaner().fit(pages[:7])
    url, page = pages[7]
    return cleaner.clean(page, url=url), docmarkup.doxygen_article(7)


def test_doxygen_fragment_is_fenced_whole(doxygen):
    result, art = doxygen
    assert f"```\n{art['code']}\n```" in result.markdown
    assert art["code"] in result.text
    doc = lxml_html.fromstring(f"<div>{result.html}</div>")
    assert [pre.text_content() for pre in doc.iter("pre")] == [art["code"]]


def test_doxygen_hidden_tooltips_are_left_out(doxygen):
    result, art = doxygen
    assert art["intro"] in result.text and art["outro"] in result.text
    for out in (result.text, result.markdown, result.html):
        assert art["tooltip"] not in out
        assert "Definition:" not in out and "void ring_7(int n)" not in out


def test_docbook_items_terms_and_cells_written_as_paragraphs_keep_their_structure():
    pages = docmarkup.docbook_site(8)
    cleaner = SiteCleaner().fit(pages[:7])
    url, page = pages[7]
    result, art = cleaner.clean(page, url=url), docmarkup.docbook_article(8)
    md = result.markdown
    assert "\n".join(f"- {x}" for x in art["items"]) in md
    assert f"`{art['option']}`\n: {art['option_doc']}" in md
    rows = [f"| {n} | {v} |" for n, v in art["rows"]]  # (the header row is the site's, read as template)
    assert rows[0] + "\n| --- | --- |\n" + rows[1] in md or "\n".join(rows) in md
    doc = lxml_html.fromstring(f"<div>{result.html}</div>")
    assert [norm(li.text_content()) for li in doc.xpath("//ul/li")] == art["items"]
    cells = [[norm(c.text_content()) for c in tr] for tr in doc.xpath("//table/tr")]
    assert [list(r) for r in art["rows"]] == [c for c in cells if c[0].startswith("disk")]
