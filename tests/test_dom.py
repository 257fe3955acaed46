"""Page preparation: what a reader never sees is gone before any method
looks at the page, the text around it stays in place, and bytes decode as Scrapy would."""

import pytest

from sst_cleaner.engine._dom import element_text, parse_html


def body_text(html) -> str:
    return element_text(parse_html(html).root)


def test_invisible_tags_are_dropped_with_their_content_but_not_their_tail():
    html = (
        "<html><head><title>T</title><style>p{color:red}</style></head><body>"
        "<p>one<script>var secret = 1;</script> two</p><noscript>enable js</noscript>"
        "<template><p>tpl</p></template><!-- a comment --><p>three</p></body></html>"
    )
    assert body_text(html) == "one two three"


@pytest.mark.parametrize(
    "html, text, gone",
    [
        # what an <object> holds besides its params is fallback content, shown today
        (
            "<body><object data='movie.swf' type='application/x-shockwave-flash'>"
            "<param name='movie' value='movie.swf'>"
            "<p class='caption'>The mayor speaks at the opening.</p></object></body>",
            "The mayor speaks at the opening.",
            "//param",
        ),
        # libxml2 parses <embed>, <source> and <track> as containers up to the parent's end
        (
            "<body><div><embed src='clip.swf'><p>The article goes on here.</p></div>"
            "<div><audio controls><source src='a.mp3'><track src='a.vtt'></audio>"
            "<p>Transcript follows.</p><picture><source srcset='b.webp'><img src='b.jpg'></picture>"
            "Caption of the photo.</div></body>",
            "The article goes on here. Transcript follows. Caption of the photo.",
            "//embed | //source | //track",
        ),
    ],
)
def test_embedded_media_keep_the_text_around_them(html, text, gone):
    page = parse_html(html)
    assert element_text(page.root) == text
    assert page.root.xpath(f"count({gone})") == 0


def test_hidden_attribute_and_inline_hiding_styles_are_dropped():
    html = (
        "<body><p>kept</p><p hidden>gone1</p>"
        "<div style='display:none'>gone2</div>"
        "<div style='color: red; DISPLAY : None ;'>gone3</div>"
        "<span style='visibility:\thidden'>gone4</span>"
        "<div style='display:block'>kept2</div>"
        "<div style='visibility: visible'>kept3</div></body>"
    )
    assert body_text(html) == "kept kept2 kept3"


def test_hiding_styles_in_capitals_are_found():
    # a style without "y" is passed over early: a capital Y must not be
    html = (
        "<body><p>kept</p><div style='DISPLAY:NONE'>gone1</div>"
        "<div style='VISIBILIT\nY : HIDDEN'>gone2</div><div style='WIDTH:1PX'>kept2</div></body>"
    )
    assert body_text(html) == "kept kept2"


def test_title_is_the_first_in_document_order():
    # looked for in the head first; a page whose head has none takes the body's first
    assert parse_html("<html><body><p>x</p><title>A</title><title>B</title></body></html>").title == "A"
    assert parse_html("<html><head><meta name=x></head><body><title>C</title></body></html>").title == "C"
    assert parse_html("<title>D</title><p>x</p><title>E</title>").title == "D"


def test_aria_hidden_drops_only_empty_decorations():
    # icons are aria-hidden and textless; text marked aria-hidden is still on screen
    html = (
        "<body><p><span aria-hidden='true'> <i class='icon'></i> </span>Docs</p>"
        "<p aria-hidden='true'>still visible</p><p aria-hidden='false'></p>"
        "<p><b aria-hidden='true'>\u00a0</b><b aria-hidden='true'>shown</b></p></body>"
    )
    page = parse_html(html)
    assert element_text(page.root) == "Docs still visible shown"
    assert page.root.xpath("count(//span)") == 0 and page.root.xpath("count(//b)") == 1
    assert page.root.xpath("count(//p[@aria-hidden='false'])") == 1


def test_dropping_a_hidden_element_keeps_the_text_after_it_in_order():
    html = "<body><p>a<span hidden>x</span>b<span style='display:none'>y</span>c <b>d</b></p></body>"
    assert body_text(html) == "abc d"


def test_nested_hidden_elements_and_a_hidden_first_child():
    html = (
        "<body><div><div hidden><p hidden>x</p>y</div>tail1<p>z</p></div>"
        "<div><span style='display:none'>w</span>tail2</div></body>"
    )
    assert body_text(html) == "tail1 z tail2"


def test_title_is_kept_apart_from_the_body():
    page = parse_html("<html><head><title> The  title </title></head><body><p>x</p></body></html>")
    assert page.title == "The title"
    assert element_text(page.root) == "x"


def test_bytes_are_decoded_from_bom_then_meta_charset():
    text = "<html><head><meta charset='windows-1251'></head><body><p>Привет, мир</p></body></html>"
    assert body_text(text.encode("windows-1251")) == "Привет, мир"
    assert body_text("\ufeff<p>naïve café</p>".encode("utf-8")) == "naïve café"
    # a known charset (Scrapy's response.encoding) wins over sniffing
    page = parse_html("<p>Ça va</p>".encode("latin-1"), encoding="latin-1")
    assert element_text(page.root) == "Ça va"


def test_a_decoded_page_is_read_as_decoded_whatever_its_meta_charset_says():
    # a str is already text: a <meta> naming another charset (left over from the bytes it
    # was decoded from) must not make the parser decode it again
    for charset in ("iso-8859-1", "windows-1251", "shift_jis", "utf-16"):
        html = f"<html><head><meta charset='{charset}'></head><body><p>café € 日本 Привет</p></body></html>"
        assert body_text(html) == "café € 日本 Привет"
    html = "<p>naïve ü</p><meta http-equiv='Content-Type' content='text/html; charset=koi8-r'><p>ß</p>"
    assert body_text(html) == "naïve ü ß"


def test_deep_nesting_never_hits_the_recursion_limit():
    # deeper than Python's recursion limit: every walk is iterative, the text is kept
    html = "<body>" + "<div>" * 1500 + "deep text" + "</div>" * 1500 + "<p>after</p></body>"
    page = parse_html(html)
    assert element_text(page.root) == "deep text after"
    # 100,000 levels: libxml2 stops at its depth limit; the page is cut and says so
    html = "<body><p>before</p>" + "<div>" * 100_000 + "x" + "</div>" * 100_000 + "</body>"
    page = parse_html(html)
    assert page.truncated and element_text(page.root).startswith("before")


def test_empty_and_non_html_input_give_an_empty_body():
    for html in ("", "   ", b"", b"\x00\x01\x02", "<?xml version='1.0' encoding='utf-8'?>"):
        page = parse_html(html)
        assert page.root.tag == "body"
        assert element_text(page.root) == ""


def test_a_document_pasted_into_the_body_does_not_end_the_page():
    # an ad include pastes a whole document into a table cell; a browser ignores its
    # html/head tags and lays out what follows its </body></html> in the page
    ad = (
        "<table><tr><td><html><head><title>banner</title></head>"
        "<body><a href='/ad'>Buy now</a></body></html></td></tr></table>"
    )
    html = (
        "<html><head><title>Story</title></head><body><div>Section</div>"
        f"{ad}<p>The article starts after the banner.</p><p>And goes on.</p></body></html>"
    )
    page = parse_html(html)
    assert element_text(page.root) == "Section Buy now The article starts after the banner. And goes on."
    assert page.title == "Story"  # the page's own title, not the pasted one


def test_text_after_an_early_body_end_tag_stays_in_the_page():
    # a template fragment closes a body it never opened before the page's own content;
    # libxml2 ends the body there, a browser lays out what follows in the body
    article = " ".join(f"Sentence {i} of the plan, with enough words to read as prose." for i in range(12))
    html = (
        "<table><tr><td><a href='/home'>Home</a></td></tr></table></body></td></tr></table>"
        f"<table><tr><td><h1>Calling plans</h1><p>{article}</p></td></tr></table>trailing words"
    )
    page = parse_html(html)
    assert element_text(page.root) == f"Home Calling plans {article} trailing words"
    # a page whose body ends the document is left as it was
    assert body_text("<html><body><p>one</p></body></html>") == "one"
    from sst_cleaner import SiteCleaner

    text = SiteCleaner().clean(html).text
    assert "Sentence 0 of the plan" in text and "Sentence 11 of the plan" in text


def test_paths_are_the_same_after_the_steps_are_forgotten():
    page = parse_html("<body><div><p>a</p><p>b</p><ul><li>c</li></ul></div><div><p>d</p></div></body>")
    els = list(page.root.iter("p", "li"))
    first = [page.xpath_of(el) for el in els]
    assert first == [page.tree.getpath(el) for el in els]
    page.forget_steps()
    page._paths.clear()  # named again from scratch, not from the memo
    assert [page.xpath_of(el) for el in els] == first


@pytest.mark.parametrize(
    "text",
    [
        "caf\u00e9 na\u00efve",  # Latin-1: lxml would hand over a one-byte buffer
        "\u4e2d\u6587 \u2014 \u00e9",  # two bytes a character
        "\U0001f600 \u00e9 \u4e2d",  # four
        "\ufeffbom first",
    ],
)
def test_the_utf8_bytes_parse_as_the_str_did(text):
    from lxml import etree

    from sst_cleaner.engine._dom import _PARSER_OPTIONS, INVISIBLE_TAGS

    html = f"<html><head><title>t {text}</title></head><body><p title='{text}'>{text}</p><br>{text}</body></html>"
    as_str = etree.fromstring(html, etree.HTMLParser(**_PARSER_OPTIONS))
    etree.strip_elements(as_str, *INVISIBLE_TAGS, with_tail=False)
    page = parse_html(html)
    assert etree.tostring(page.root) == etree.tostring(as_str.find("body"))
    assert page.title == f"t {text}"


def test_an_xml_declaration_lxml_refuses_in_a_str_still_gives_an_empty_page():
    # with its "?>" the declaration is dropped; without it lxml refuses the str, and the
    # page stays empty as it always was (the UTF-8 bytes would have been parsed)
    assert parse_html('<?xml version="1.0" encoding="utf-8"?><p>x</p>').root.findtext("p") == "x"
    assert len(parse_html('<?xml version="1.0" encoding="utf-8"><p>x</p>').root) == 0


def _news_page(leading_script: bool, custom_tag: bool) -> str:
    """A 2000s portal article: optionally a script before ``<html>``, and the page's
    content wrapped in a CMS's own element between ``</head>`` and ``<body>``."""
    paras = "".join(
        f"<p>第{i}段：记者报道了当地经济发展的最新情况，市民对此表示关注和支持，专家认为前景良好。</p>"
        for i in range(6)
    )
    content = (
        "<table><tr><td><a href='/'>首页</a> | <a href='/news/'>新闻</a></td></tr></table>"
        f"<table width=760><tr><td class=text>{paras}</td></tr></table>"
    )
    if custom_tag:
        content = f'<sohu_cms_include type="news">{content}</sohu_cms_include>'
    script = "<script language=javascript>var ad = 1;</script>\n" if leading_script else ""
    return (
        f"{script}<html><head><meta http-equiv='Content-Type' content='text/html; charset=gb2312'>"
        f"<title>新闻</title></head>\n{content}</html>"
    )


@pytest.mark.parametrize("leading_script", [True, False])
@pytest.mark.parametrize("custom_tag", [True, False])
def test_a_custom_element_left_in_the_head_is_laid_out_in_the_body(leading_script, custom_tag):
    # libxml2 keeps an unknown element in the head (a script before <html> even keeps the
    # head open past the page's </head>); a browser starts the body there
    from sst_cleaner import SiteCleaner

    html = _news_page(leading_script, custom_tag)
    page = parse_html(html)
    assert "第0段" in element_text(page.root) and "第5段" in element_text(page.root)
    assert page.title == "新闻"
    result = SiteCleaner().clean(html)
    assert result.status == "ok"
    assert all(f"第{i}段" in result.text for i in range(6))
    assert "首页" not in result.text


def test_text_in_an_unknown_head_element_keeps_its_place_before_the_body():
    html = (
        "<html><head><title>t</title><x-lead>Lead paragraph here.</x-lead>"
        "<meta name=a content=b><x-empty></x-empty></head><body>Body text<p>More text.</p></body></html>"
    )
    page = parse_html(html)
    assert element_text(page.root) == "Lead paragraph here. Body text More text."
    assert page.head is not None and page.head.find("meta") is not None  # metadata stays readable


def test_a_head_without_text_outside_its_own_elements_is_left_as_it_is():
    html = "<html><head><title>t</title><fb:app_id content='1'></fb:app_id></head><body><p>Text.</p></body></html>"
    page = parse_html(html)
    assert [el.tag for el in page.root] == ["p"]
    assert page.head is not None and page.head.find("fb:app_id") is not None
