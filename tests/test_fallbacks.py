"""What a clean returns when the method gives no usable answer: a page holding prose never
comes back empty with status ``ok`` (a page-level fallback's text, status
``empty_fallback``), and a page over its time budget gets CETD's text, not the whole page."""

from __future__ import annotations

import pytest

from sst_cleaner import CleanResult, SiteCleaner, register_method
from sst_cleaner.engine._registry import _METHODS
from sst_cleaner.engine._result import INFORMATIVE, NOISE, STATUS_EMPTY_FALLBACK, Block

STORY = [
    f"Paragraph {i} of the report says the harbour council met on Tuesday, agreed the budget "
    "for the new library and heard the fishermen ask for a longer quay before the winter."
    for i in range(5)
]
NAV = ["Home", "News", "Sport", "Weather", "Contact us"]


def story_page() -> str:
    nav = "".join(f"<li><a href='/{w.lower()}'>{w}</a></li>" for w in NAV)
    body = "".join(f"<p>{p}</p>" for p in STORY)
    return (
        "<html><head><title>Harbour</title></head><body>"
        f"<ul class=nav>{nav}</ul><div class=story><h1>Harbour council</h1>{body}</div>"
        "<div class=foot>All rights reserved</div></body></html>"
    )


def links_page() -> str:
    items = "".join(f"<li><a href='/p/{i}'>Photo {i}</a></li>" for i in range(30))
    return f"<html><head><title>Gallery</title></head><body><ul>{items}</ul></body></html>"


def test_a_method_that_keeps_nothing_of_a_page_with_prose_falls_back_with_its_own_status():
    # a site whose pages are all one page (a mirror): the site model takes everything for
    # template and keeps nothing
    html = story_page()
    cleaner = SiteCleaner(method="infodiscoverer").fit([(f"http://h/{i}", html) for i in range(3)])
    result = cleaner.clean(html, url="http://h/0")
    assert result.status == STATUS_EMPTY_FALLBACK
    assert all(p in result.text for p in STORY)
    assert "Contact us" not in result.text  # CETD leaves the navigation out


def test_the_cli_says_empty_fallback(tmp_path):
    import json

    from sst_cleaner.cli._main import main

    site = tmp_path / "site"
    site.mkdir()
    for i in range(3):  # one page under three names (an attribute apart: not a duplicate)
        (site / f"p{i}.html").write_text(story_page().replace("<body>", f"<body data-page={i}>"), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["site", str(site), "--method", "infodiscoverer", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["status"] for r in rows] == [STATUS_EMPTY_FALLBACK] * 3
    assert all(STORY[0] in r["text"] for r in rows)


def test_a_page_without_prose_keeps_its_empty_text_and_status():
    html = links_page()
    cleaner = SiteCleaner(method="infodiscoverer").fit([(f"http://h/{i}", html) for i in range(3)])
    result = cleaner.clean(html, url="http://h/0")
    assert (result.text, result.status) == ("", "ok")


class _KeepsNothing:
    """A method that labels every block of the page noise."""

    def __init__(self):
        self.n_pages = 0

    def fit(self, pages):
        self.n_pages = len(pages)

    def partial_fit(self, page):
        self.n_pages += 1

    def clean(self, page):
        from sst_cleaner.engine._segment import text_blocks

        blocks = [Block(page.xpath_of(b.element), b.text, NOISE) for b in text_blocks(page.root)]
        return CleanResult.from_blocks(blocks, "_keeps_nothing", page.title)

    def to_dict(self):
        return {"n_pages": self.n_pages}

    @classmethod
    def from_dict(cls, state, **params):
        return cls()


@pytest.fixture
def keeps_nothing():
    register_method("_keeps_nothing")(_KeepsNothing)
    yield "_keeps_nothing"
    _METHODS.pop("_keeps_nothing", None)


def test_the_fallback_is_cetd_when_it_keeps_prose(keeps_nothing):
    result = SiteCleaner(method=keeps_nothing).clean(story_page())
    assert result.status == STATUS_EMPTY_FALLBACK and result.method == "cetd"
    assert all(p in result.text for p in STORY) and "Weather" not in result.text


def test_the_longest_prose_block_is_kept_when_cetd_keeps_no_prose(keeps_nothing, monkeypatch):
    from sst_cleaner.engine.methods import cetd

    def links_only(self, page):  # CETD's pick on a page whose densest part is a link list
        from sst_cleaner.engine._segment import text_blocks

        blocks = [
            Block(page.xpath_of(b.element), b.text, INFORMATIVE if b.text in NAV else NOISE)
            for b in text_blocks(page.root)
        ]
        return CleanResult.from_blocks(blocks, "cetd", page.title)

    monkeypatch.setattr(cetd.CETDMethod, "clean", links_only)
    page = story_page().replace(STORY[2], STORY[2] + " The mayor said the quay would be ready by spring.")
    result = SiteCleaner(method=keeps_nothing).clean(page)
    assert result.status == STATUS_EMPTY_FALLBACK and result.method == "longest_prose"
    assert result.text == STORY[2] + " The mayor said the quay would be ready by spring."
    assert [b.label for b in result.blocks].count(INFORMATIVE) == 1


def test_cjk_prose_counts_by_characters(keeps_nothing):
    para = "记者报道了当地经济发展的最新情况，市民对此表示关注和支持，专家认为前景良好，政府将继续推进改革。"
    html = f"<html><body><div><a href='/'>首页</a></div><div><p>{para}</p><p>{para}</p></div></body></html>"
    result = SiteCleaner(method=keeps_nothing).clean(html)
    assert result.status == STATUS_EMPTY_FALLBACK and para in result.text


def big_page(paragraphs: int = 100, sentences: int = 150) -> str:
    """A long log: many short sentences (the default method weighs each, CETD counts
    characters per element), between a navigation bar and a footer of links."""
    body = "".join(
        "<p>" + " ".join(f"Tide {i} {j} rose." for j in range(sentences)) + "</p>" for i in range(paragraphs)
    )
    return (
        "<html><head><title>Harbour log</title></head><body>"
        "<div id=nav><a href='/'>Home</a> <a href='/a'>About</a> <a href='/b'>Contact</a></div>"
        f"<article><h1>Harbour log</h1>{body}</article><div id=foot><a href='/c'>Copyright</a></div></body></html>"
    )


class _Overruns(_KeepsNothing):
    """A method that works on until its budget stops it: over budget on any machine,
    however fast (a real method's time on a big page is not)."""

    def clean(self, page):
        import time

        start = time.thread_time()
        while time.thread_time() - start < 60:
            pass
        return super().clean(page)


def test_a_big_page_over_its_budget_gets_cetd_s_text_not_the_whole_page():
    html = big_page()
    register_method("_overruns")(_Overruns)
    try:
        result = SiteCleaner(method="_overruns", page_time_budget=2.0).clean(html)
    finally:
        _METHODS.pop("_overruns", None)
    assert result.status == "over_budget" and result.method == "cetd"
    assert "Tide 0 0 rose." in result.text and "Tide 99 149 rose." in result.text
    assert "Contact" not in result.text and "Copyright" not in result.text
    assert len(result.blocks) > 1  # CETD's blocks, not the body as one
