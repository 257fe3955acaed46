"""InformativeLinkExtractor: every link before a model exists, only TOC links after."""

import os
import sys

from scrapy.http import HtmlResponse

from sst_cleaner import SiteCleaner
from sst_cleaner.scrapy._linkextractor import InformativeLinkExtractor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # any pytest import mode
from test_wisdom import SITE  # noqa: E402  (the 3-page news site worked out there)


def _response(i=0):
    url, html = SITE[i]
    return HtmlResponse(url=url, body=html.encode("utf-8"), encoding="utf-8")


ALL = {"http://ex.com/home", "http://ex.com/world", "http://ex.com/sport", "http://ex.com/a2", "http://ex.com/a3"}


def test_all_links_before_a_model():
    lx = InformativeLinkExtractor(models={})
    assert {link.url for link in lx.extract_links(_response())} == ALL
    # a model of one page is not a WISDOM model yet
    one = SiteCleaner(method="wisdom").fit(SITE[:1])
    lx = InformativeLinkExtractor(models={"ex.com": one})
    assert {link.url for link in lx.extract_links(_response())} == ALL


def test_only_toc_links_once_the_site_has_a_model():
    model = SiteCleaner(method="wisdom").fit(SITE)
    lx = InformativeLinkExtractor(models={"ex.com": model})
    assert [link.url for link in lx.extract_links(_response())] == ["http://ex.com/a2", "http://ex.com/a3"]


class _Store:
    def __init__(self, model):
        self.model = model
        self.asked = []

    def site_key(self, url):
        return "site-x"

    def get(self, key):
        self.asked.append(key)
        return self.model


def test_store_interface_and_constructor_arguments():
    store = _Store(SiteCleaner(method="wisdom").fit(SITE))
    lx = InformativeLinkExtractor(deny=r"/a3$", models=store)
    assert [link.url for link in lx.extract_links(_response())] == ["http://ex.com/a2"]
    assert store.asked == ["site-x"]


def test_other_methods_keep_links_outside_noise_blocks():
    # InfoDiscoverer: the menu's words are on every page (H = 1) -> noise block
    model = SiteCleaner(method="infodiscoverer").fit(SITE)
    lx = InformativeLinkExtractor(models={"ex.com": model})
    urls = {link.url for link in lx.extract_links(_response())}
    assert "http://ex.com/home" not in urls and "http://ex.com/world" not in urls
    blocks = model.clean(SITE[0][1], url=SITE[0][0]).blocks
    assert any(b.label == "noise" and "Home" in b.text for b in blocks)
