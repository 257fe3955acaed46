"""The default method's verdict on documentation sites (generated pages of each
generator's markup): a section named after its own title keeps its prose, a comment
thread still goes, and a stub page holding nothing but the site's template comes back
empty."""

import random

import pytest
from docsite import WORDS, sentence

from sst_cleaner import SiteCleaner

#: sections whose generated names hold a word read as a comment thread's
NAMED = [
    ("Comment moderation", "comment-moderation"),
    ("Comments and proposals", "comments-proposals"),
    ("Comments", "comments"),
]


def _section(style: str, title: str, sid: str, body: str) -> str:
    if style == "sphinx":  # Sphinx >= 4 (docutils' HTML5 writer)
        return f'<section id="{sid}"><span id="label-{sid}"></span><h2>{title}<a class="headerlink" href="#{sid}">¶</a></h2>{body}</section>'
    if style == "old-sphinx":
        return f'<div class="section" id="{sid}"><h2>{title}<a class="headerlink" href="#{sid}">¶</a></h2>{body}</div>'
    return f'<h2 id="{sid}">{title}</h2>{body}'  # MkDocs: the heading has the id


def manual_page(i: int, style: str) -> tuple[str, list[str]]:
    """A manual's page: a chapter of three sections, one named like comments; returns the
    page and the texts of that section (heading, paragraphs, code)."""
    rng = random.Random(i)
    toc = "".join(f'<li class="toctree-l1"><a href="/ch{k}.html">Chapter {k} overview</a></li>' for k in range(8))
    sections, named = [], []
    titles = [(f"Using the {rng.choice(WORDS)} {rng.choice(WORDS)}", ""), NAMED[i % 3], (f"Setting up {i}", "")]
    for j, (title, sid) in enumerate(titles):
        paras = [" ".join(sentence(rng) for _ in range(3)) for _ in range(2)]
        code = f"tool --{rng.choice(WORDS)}-{i}-{j} {rng.choice(WORDS)}"
        body = "".join(f"<p>{p}</p>" for p in paras) + f'<div class="highlight"><pre>{code}</pre></div>'
        sections.append(_section(style, title, sid or f"s{j}", body))
        if sid:
            named = [title, *paras, code]
    html = f"""<html><head><title>Chapter {i} - Manual</title></head><body>
<div class="sphinxsidebar" role="navigation"><ul>{toc}</ul></div>
<div class="document"><div class="body" role="main"><section id="chapter-{i}">
<h1>Chapter {i}: {rng.choice(WORDS)}</h1><p>{" ".join(sentence(rng) for _ in range(3))}</p>{"".join(sections)}
</section></div></div>
<div class="footer">Copyright 2024 the manual's authors. Created using a documentation generator.</div>
</body></html>"""
    return html, named


@pytest.mark.parametrize("style", ["sphinx", "old-sphinx", "mkdocs"])
@pytest.mark.parametrize("fit", [True, False])
def test_a_section_named_after_its_own_title_keeps_its_prose(style, fit):
    pages = [(f"http://manual.test/ch{i}.html", *manual_page(i, style)) for i in range(6)]
    cleaner = SiteCleaner()
    if fit:
        cleaner.fit([(url, html) for url, html, _named in pages])
    for url, html, named in pages:
        result = cleaner.clean(html, url=url)
        lost = [t for t in named if t not in result.text]
        assert not lost, (url, lost, result.text)


COMMENTS = [
    "I tried the second method on my laptop and the build finished in half the time",
    "Thanks for writing this up, the part about the cache saved me an afternoon",
    "Does anyone know whether the same settings work with the older release as well",
]


def blog_page(i: int, thread: str) -> tuple[str, list[str], list[str]]:
    """A blog post and a thread of readers' comments under it; returns the page, the
    post's paragraphs and the comments."""
    rng = random.Random(50 + i)
    paras = [" ".join(sentence(rng) for _ in range(3)) for _ in range(4)]
    menu = "".join(f'<li><a href="/c{k}">Category {k} posts</a></li>' for k in range(6))
    comments = [f"{c}, {rng.choice(WORDS)} and {rng.choice(WORDS)} included." for c in COMMENTS]
    items = "".join(
        f"<li><div>reader{k} on March {k + 3}, 2024 at 10:1{k}</div><p>{c}</p></li>" for k, c in enumerate(comments)
    )
    thread = thread.format(items=items)
    return (
        f"""<html><head><title>Post {i}</title></head><body>
<div class="top"><ul>{menu}</ul></div>
<div class="post"><h1>Post {i} about {rng.choice(WORDS)}</h1>{"".join(f"<p>{p}</p>" for p in paras)}</div>
{thread}
<div class="bottom">Copyright 2024 the blog's author. All rights reserved.</div>
</body></html>""",
        paras,
        comments,
    )


@pytest.mark.parametrize(
    "thread",
    [
        '<div id="comments"><h3>3 Comments</h3><ol>{items}</ol></div>',
        '<section id="comments"><h2>Comments</h2><ol>{items}</ol></section>',
    ],
    ids=["div-h3", "section-h2"],
)
@pytest.mark.parametrize("fit", [True, False])
def test_a_comment_thread_opening_with_a_heading_still_goes(thread, fit):
    pages = [blog_page(i, thread) for i in range(6)]
    cleaner = SiteCleaner()
    if fit:
        cleaner.fit([html for html, _paras, _comments in pages])
    for html, paras, comments in pages:
        text = cleaner.clean(html).text
        assert not [c for c in comments if c in text], text
        assert all(p in text for p in paras), text


def reference_page(i: int, stub: bool) -> str:
    """A Doxygen-style page: the project's banner, a navigation tree, the page's title
    and contents (none on a stub page), the navigation path and the generator's line."""
    rng = random.Random(i)
    nav = "".join(f'<li><a href="/group{k}.html">Module {k} reference</a></li>' for k in range(10))
    contents = "" if stub else "".join(f"<p>{' '.join(sentence(rng) for _ in range(3))}</p>" for _ in range(4))
    return f"""<html><head><title>Widgetlib: {rng.choice(WORDS)} {i}</title></head><body>
<div id="top"><div id="titlearea"><span id="projectname">Widgetlib 3.4</span>
<span id="projectbrief">A library of reusable widget algorithms</span></div></div>
<div id="nav-tree"><ul>{nav}</ul></div>
<div id="doc-content"><div class="header"><div class="headertitle">
<div class="title">{rng.choice(WORDS).capitalize()}{i} Class Reference</div></div></div>
<div class="contents">{contents}</div></div>
<div id="nav-path" class="navpath"><ul><li class="navelem"><a href="/index.html">Widgetlib</a></li>
<li class="footer">Generated by doxygen 1.9.4 for the widget project documentation team</li></ul></div>
</body></html>"""


def test_a_stub_page_holding_only_the_site_template_comes_back_empty():
    pages = [(f"http://widgetlib.test/p{i}.html", reference_page(i, stub=i % 3 == 0), i % 3 == 0) for i in range(12)]
    cleaner = SiteCleaner().fit([(url, html) for url, html, _stub in pages])
    for url, html, stub in pages:
        result = cleaner.clean(html, url=url)
        if stub:
            assert result.status == "site_empty", (url, result.status)
            assert result.text == "" and result.markdown == "", (url, result.text)
        else:
            assert result.status == "ok", (url, result.status)
            assert "Class Reference" in result.text and len(result.text.split()) > 100, result.text
            assert "Widgetlib 3.4" not in result.text and "Module 3 reference" not in result.text


def test_the_page_level_fallback_leaves_the_site_template_out(monkeypatch):
    pages = [(f"http://widgetlib.test/p{i}.html", reference_page(i, stub=False)) for i in range(8)]
    cleaner = SiteCleaner().fit(pages)
    # a site scorer keeping nothing, a page scorer keeping every sentence of 20 characters
    monkeypatch.setattr(
        cleaner._impl._scorers,
        "predict",
        lambda rows, alone: [1.0 if alone and len(s.text) > 20 else 0.0 for _b, s, _f in rows],
    )
    url, html = pages[3]
    result = cleaner.clean(html, url=url)
    assert result.status == "site_empty" and result.method == "default(page-level)"
    assert "Class Reference" in result.text and len(result.text.split()) > 100, result.text
    assert "reusable widget algorithms" not in result.text and "Generated by doxygen" not in result.text
