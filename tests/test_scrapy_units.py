"""Unit tests of the Scrapy layer's pieces that need no crawl."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from scrapy.settings import SETTINGS_PRIORITIES

from sst_cleaner.scrapy._model_files import model_filename
from sst_cleaner.scrapy._settings import SETTINGS, load_config
from sst_cleaner.scrapy._site_keys import domain_key, host_key
from sst_cleaner.scrapy._site_models import PageRecord, SiteModelStore
from sst_cleaner.tools.demo import DemoSite, boilerplate_removed, prf, tokens

_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}


@hsettings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=3000))
def test_model_filename_is_safe_for_any_key(key):
    name = model_filename(key)
    assert len(name) <= 100
    assert "/" not in name and "\\" not in name and "\x00" not in name and ".." not in name
    assert not name.startswith(".")
    assert name.split(".")[0].lower() not in _RESERVED
    assert all(ch.isascii() and (ch.isalnum() or ch in "-_.") for ch in name)
    assert os.path.basename(name) == name


def test_model_filename_keeps_distinct_keys_apart():
    keys = [
        "example.com",
        "example_com",
        "EXAMPLE.com",
        "../../etc/passwd",
        "con",
        "nul",
        "a" * 5000,
        "a" * 4999 + "b",
        "\x00evil",
        "ünïcode.example",
    ]
    names = [model_filename(k) for k in keys]
    assert len(set(names)) == len(keys)
    assert model_filename("example.com") == model_filename("example.com")
    assert model_filename("news.example.com").startswith("site-news_example_com-")


def test_site_keys():
    assert host_key("https://News.Example.co.uk:8443/a/b?x=1") == "news.example.co.uk"
    assert host_key("not a url") == ""
    assert domain_key("https://news.example.co.uk/a") == "example.co.uk"
    assert domain_key("http://a.b.example.com/") == "example.com"
    assert domain_key("http://127.0.0.1:8000/x") == "127.0.0.1"


def test_config_defaults_and_errors():
    cfg = load_config({})
    assert cfg.method == SETTINGS["SST_METHOD"].default == "default"
    assert cfg.text_field == "text" and cfg.sample_pages == 20 and cfg.enabled
    assert load_config({"SST_ENABLED": "False"}).enabled is False
    assert load_config({"SST_PARAMS": '{"alpha": 2}'}).params == {"alpha": 2}
    with pytest.raises(ValueError, match="SST_SAMPLE_PAGES"):
        load_config({"SST_SAMPLE_PAGES": 0})
    with pytest.raises(ValueError, match="SST_MAX_HELD_BYTES"):
        load_config({"SST_MAX_HELD_BYTES": "lots"})
    with pytest.raises(ValueError, match="SST_PARAMS"):
        load_config({"SST_PARAMS": [1, 2]})


def test_store_rejects_unknown_method_at_start():
    with pytest.raises(ValueError, match="unknown method"):
        SiteModelStore(load_config({"SST_METHOD": "no-such-method"}))


def test_store_site_key_callable_and_item_binding():
    store = SiteModelStore(load_config({"SST_METHOD": "cetd", "SST_SITE_KEY": lambda url: url[-1]}))
    assert store.site_key("http://x/abc") == "c"
    page = PageRecord("http://x/abc", b"<p>hi</p>", "utf-8", "c")
    item_a, item_b = {"n": 1}, {"n": 1}  # equal but distinct objects
    store.bind(item_a, page)
    assert store.page_for(item_b) is None
    assert store.page_for(item_a) is page
    assert store.page_for(item_a) is None  # popped: exactly once


def test_answers_that_finish_together_reach_the_reactor_in_order_with_one_wake_up(monkeypatch, caplog):
    import threading
    from concurrent.futures import Future

    from twisted.internet import reactor

    wake_ups = []
    monkeypatch.setattr(reactor, "callFromThread", lambda f, *a: wake_ups.append((f, a)))
    store = SiteModelStore(load_config({"SST_METHOD": "cetd"}))
    futures = [Future() for _ in range(5)]
    deferreds = [store.dispatch.deferred(f) for f in futures]
    got = []
    for i, d in enumerate(deferreds):
        d.addCallbacks(lambda v, i=i: got.append((i, v)), lambda fail, i=i: got.append((i, fail.value)))
    deferreds[1].callback("fired early")  # its answer will fail to be handed over
    boom = RuntimeError("worker said no")

    def finish():  # a reader thread: the answers arrive while the reactor is busy
        for i, f in enumerate(futures):
            if i == 3:
                f.set_exception(boom)
            else:
                f.set_result(f"answer {i}")

    t = threading.Thread(target=finish)
    t.start()
    t.join()
    assert len(wake_ups) == 1 and got == [(1, "fired early")]
    func, args = wake_ups.pop()
    func(*args)  # the reactor's turn
    assert got == [(1, "fired early"), (0, "answer 0"), (2, "answer 2"), (3, boom), (4, "answer 4")]
    # the next answer wakes the reactor again
    later = Future()
    store.dispatch.deferred(later).addCallback(lambda v: got.append(("later", v)))
    later.set_result("x")
    assert len(wake_ups) == 1
    wake_ups[0][0]()
    assert got[-1] == ("later", "x")
    assert "handing a worker's answer to the crawl failed" in caplog.text  # logged, not raised


def test_addon_enables_components_and_respects_sst_enabled():
    from scrapy.exceptions import NotConfigured
    from scrapy.settings import Settings

    from sst_cleaner import Addon

    settings = Settings()
    Addon().update_settings(settings)
    assert settings["SPIDER_MIDDLEWARES"]["sst_cleaner.scrapy.SSTSpiderMiddleware"] == 50
    assert settings["ITEM_PIPELINES"]["sst_cleaner.scrapy.SSTPipeline"] == 100
    with pytest.raises(NotConfigured):
        Addon().update_settings(Settings({"SST_ENABLED": False}))
    # what the add-on adds has the add-on priority, below the project's
    assert settings["ITEM_PIPELINES"].getpriority("sst_cleaner.scrapy.SSTPipeline") == SETTINGS_PRIORITIES["addon"]


@pytest.mark.parametrize("priority", ["project", "spider", "cmdline"])
def test_addon_keeps_the_users_own_orders(priority):
    from scrapy.settings import Settings
    from scrapy.utils.conf import build_component_list

    from sst_cleaner import Addon, SSTSpiderMiddleware

    settings = Settings()
    settings.set("ITEM_PIPELINES", {"sst_cleaner.scrapy.SSTPipeline": 300, "my.Other": 10}, priority)
    # the class itself, and another import path of it, count as the component too
    settings.set("SPIDER_MIDDLEWARES", {SSTSpiderMiddleware: 700}, priority)
    Addon().update_settings(settings)
    assert dict(settings["ITEM_PIPELINES"]) == {"sst_cleaner.scrapy.SSTPipeline": 300, "my.Other": 10}
    assert dict(settings["SPIDER_MIDDLEWARES"]) == {SSTSpiderMiddleware: 700}

    settings = Settings()
    settings.set("ITEM_PIPELINES", {"sst_cleaner.SSTPipeline": 300}, priority)
    settings.set("SPIDER_MIDDLEWARES", {"sst_cleaner.scrapy.SSTSpiderMiddleware": None}, priority)  # turned off
    Addon().update_settings(settings)
    assert build_component_list(settings.getwithbase("ITEM_PIPELINES")) == ["sst_cleaner.SSTPipeline"]
    assert "sst_cleaner.scrapy.SSTSpiderMiddleware" not in build_component_list(
        settings.getwithbase("SPIDER_MIDDLEWARES")
    )


def test_is_html_response():
    from scrapy.http import HtmlResponse, Response, TextResponse

    from sst_cleaner.scrapy._middleware import is_html_response

    assert is_html_response(HtmlResponse("http://x/", body=b"<p>a</p>"))
    assert not is_html_response(TextResponse("http://x/", body=b"{}", headers={"Content-Type": "application/json"}))
    assert is_html_response(TextResponse("http://x/", body=b"<p/>", headers={"Content-Type": "application/xhtml+xml"}))
    assert not is_html_response(Response("http://x/a.png", body=b"\x89PNG"))


def test_scoring_by_hand():
    assert tokens("The CAT, the cat!") == ["the", "cat", "the", "cat"]
    # pred: a a b c (4), gold: a b b (3); overlap a:1 b:1 = 2 -> P 1/2, R 2/3, F1 4/7
    p, r, f = prf("a a b c", "a b b")
    assert (p, r) == (0.5, 2 / 3) and abs(f - 4 / 7) < 1e-12
    assert prf("", "") == (1.0, 1.0, 1.0) and prf("x", "") == (0.0, 0.0, 0.0)
    # page: nav nav body1 body2 ad; gold: body1 body2 -> noise {nav:2, ad:1};
    # pred keeps one nav -> 1 of 3 noise tokens kept -> 2/3 removed
    assert boilerplate_removed("nav body1 body2", "body1 body2", "nav nav body1 body2 ad") == pytest.approx(2 / 3)
    assert boilerplate_removed("x", "a b", "a b") is None


def test_demo_site_is_deterministic_and_gold_is_on_the_page():
    a, b = DemoSite(seed=3, n_articles=12), DemoSite(seed=3, n_articles=12)
    assert a.paths == b.paths and all(a.page(p) == b.page(p) for p in a.paths)
    assert DemoSite(seed=4, n_articles=12).page(a.article_paths[0]) != a.page(a.article_paths[0])
    for path in a.article_paths:
        page = a.page(path)
        for line in a.gold(path).splitlines():
            assert line.replace("\u201c", "&#8220;") in page or line in page.replace("&#x27;", "'")
    # listing pages link to every article; non-HTML resources exist
    linked = "".join(a.page(p) for p in a.paths if p.startswith("/section/"))
    assert all(p in linked for p in a.article_paths)
    assert a.resource("/static/logo.png")[1] == "image/png"
    assert a.resource("/nope") is None
