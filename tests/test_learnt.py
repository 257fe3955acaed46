"""A site model never learns the same page twice, and remembers what it learnt across
saves: re-crawls with SST_MODEL_DIR give the same items, crawl after crawl."""

from __future__ import annotations

import json

import docsite
import pytest
from conftest import assert_exactly_once, crawl_in_subprocess, sst_stat

from sst_cleaner import SiteCleaner
from sst_cleaner.engine._learnt import HEAD_BYTES, MAX_LEARNT, LearntPages, canonical_url, page_key
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.scrapy._model_files import model_filename


def test_page_key_prefers_canonical_then_url_then_content():
    html = '<html><head><link href="/a/b" rel="canonical"></head><body>x</body></html>'
    assert canonical_url(html.encode(), "http://s.test/a/b?utm=1") == "http://s.test/a/b"
    assert page_key(("http://s.test/a/b?utm=1", html)) == page_key(("http://s.test/a/b?x=2", html))
    plain = "<html><body>same words</body></html>"
    assert page_key(("http://s.test/1", plain)) != page_key(("http://s.test/2", plain))
    assert page_key(plain) == page_key(plain.encode()) != page_key(plain.replace("same", "other"))
    # one canonical (the home page) on every page is a site's mistake, not one page
    home = '<html><head><link rel="canonical" href="http://s.test/"></head><body>p</body></html>'
    assert page_key(("http://s.test/x", home)) != page_key(("http://s.test/y", home))


def test_page_key_reads_the_canonical_link_in_the_head_only():
    link = '<link rel="canonical" href="http://s.test/c">'
    canon = page_key(("http://s.test/c?from=feed", f"<html><head>{link}</head><body>y</body></html>"))
    # the head ends at </head> in any case; a link after it is the body's, not the page's
    for end in ("</head>", "</HEAD>", "</Head >"):
        page = f"<html><head><title>t</title>{end}<body>{link}</body></html>"
        assert page_key(("http://s.test/p", page)) == page_key(("http://s.test/p", "<p>x</p>")) != canon
        assert page_key(("http://s.test/p", f"<html><head>{link}{end}<body>x</body></html>")) == canon
    # the head is read as its first HEAD_BYTES bytes, not characters: a link behind
    # multi-byte text that bytes would push out is not found, in str and bytes alike
    filler = "é" * (HEAD_BYTES // 2)
    far = f"<html><head><title>{filler}</title>{link}</head><body>x</body></html>"
    near = f"<html><head><title>{filler[: HEAD_BYTES // 4]}</title>{link}</head><body>x</body></html>"
    for page in (far, near):
        assert page_key(("http://s.test/p", page)) == page_key(("http://s.test/p", page.encode()))
    assert page_key(("http://s.test/p", far)) != canon == page_key(("http://s.test/p", near))
    # without a URL, the whole content is the key, however far past the head it differs
    long_page = "<html><body>" + "w " * HEAD_BYTES + "end</body></html>"
    assert page_key(long_page) == page_key(long_page.encode()) != page_key(long_page.replace("end", "End"))


def test_fit_and_partial_fit_never_learn_a_page_twice():
    pages = docsite.site(8)
    once = SiteCleaner().fit(pages[:6])
    twice = SiteCleaner().fit(pages[:6] + pages[:3])
    assert twice.n_pages == 6 and twice.duplicate_pages == 3
    assert json.dumps(once.to_dict(), sort_keys=True) == json.dumps(twice.to_dict(), sort_keys=True)
    twice.partial_fit(pages[6])
    before = json.dumps(twice.to_dict(), sort_keys=True)
    for page in (pages[6], pages[0]):
        twice.partial_fit(page)
    assert twice.n_pages == 7 and twice.duplicate_pages == 5
    assert json.dumps(twice.to_dict(), sort_keys=True) == before


def test_learnt_pages_are_saved_loaded_and_validated(tmp_path):
    pages = docsite.site(7)
    path = tmp_path / "m.json"
    SiteCleaner().fit(pages[:6]).save(path)
    loaded = SiteCleaner.load(path)
    assert len(loaded.learnt) == 6 and loaded.has_learnt(pages[2])
    loaded.partial_fit(pages[2])
    assert loaded.n_pages == 6
    data = json.loads(path.read_text())
    # a model file from before pages were recorded still loads (and learns every page)
    del data["learnt_pages"]
    path.write_text(json.dumps(data))
    assert len(SiteCleaner.load(path).learnt) == 0
    for bad in ("abc", ["not-a-key"], [1], ["0123456789abcdef"] * (MAX_LEARNT + 1)):
        data["learnt_pages"] = bad
        path.write_text(json.dumps(data))
        with pytest.raises(ModelFormatError):
            SiteCleaner.load(path)


def test_learnt_pages_are_bounded():
    learnt = LearntPages(limit=3)
    for key in "abcd":
        learnt.add(key)
    assert learnt.to_list() == ["b", "c", "d"] and "a" not in learnt


def test_recrawls_with_a_model_dir_give_the_same_items(demo_server, tmp_path):
    # the whole site is one sample (fitted when the spider goes idle), so the first crawl's
    # model has learnt every page: later crawls have nothing new to learn
    settings = {"SST_MODEL_DIR": str(tmp_path / "models"), "SST_SAMPLE_PAGES": 1000, "SST_METHOD": "default"}
    texts = []
    for n in range(3):
        result = crawl_in_subprocess(tmp_path, f"recrawl-{n}", url=demo_server.url, settings=settings)
        assert_exactly_once(result["yielded"], (r["id"] for r in result["received"]))
        assert sst_stat(result, "models_loaded") == (1 if n else 0)
        texts.append({r["id"]: r["text"] for r in result["received"]})
    assert texts[0] and all(texts[0].values())
    assert texts[1] == texts[0] and texts[2] == texts[0]
    model = SiteCleaner.load(tmp_path / "models" / model_filename("127.0.0.1"))
    assert len(model.learnt) == model.n_pages >= len(texts[0]) // 2  # 2 items a page
