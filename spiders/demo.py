"""``scrapy crawl demo -O cleaned.jsonl``: crawl the embedded demo site and score the result.

The spider starts the generated site (:mod:`sst_cleaner.tools.demo`) on 127.0.0.1 at a free
port, crawls it, yields one item per article (url and title only: the sst-cleaner
pipeline adds the clean ``text``), and since the site knows its own gold text it logs the
mean bag-of-tokens F1 and the share of boilerplate removed when the crawl ends.
"""

from __future__ import annotations

from typing import Any, AsyncIterator
from urllib.parse import urlsplit

import scrapy
from scrapy import signals

from sst_cleaner.engine._dom import element_text, parse_html
from sst_cleaner.tools.demo import DemoServer, DemoSite, boilerplate_removed, prf

_FOLLOW = ("/section/", "/article/", "/static/", "/api/")


class DemoSpider(scrapy.Spider):
    name = "demo"

    def __init__(self, seed: int = 7, articles: int = 60, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.site = DemoSite(seed=int(seed), n_articles=int(articles))
        self.server = DemoServer(self.site).start()
        self.cleaned: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> "DemoSpider":
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(spider._closed, signal=signals.spider_closed)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        yield scrapy.Request(self.server.url)

    def parse(self, response: Any) -> Any:
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        host = urlsplit(response.url).netloc
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            parts = urlsplit(url)
            # the site's pages and its non-HTML resources; not ad clicks or account pages
            if parts.netloc == host and (parts.path == "/" or parts.path.startswith(_FOLLOW)):
                yield response.follow(url, callback=self.parse)
        if "/article/" in response.url:
            yield {"url": response.url, "title": response.css("h1::text").get(default="")}

    def _item_scraped(self, item: Any, **kwargs: Any) -> None:
        self.cleaned[item["url"]] = item.get("text", "")

    def score(self) -> dict:
        """Mean F1 against the site's gold, and share of boilerplate tokens removed."""
        f1s, removed = [], []
        for url, text in self.cleaned.items():
            path = urlsplit(url).path
            gold = self.site.gold(path)
            if gold is None:
                continue
            f1s.append(prf(text, gold)[2])
            page_text = element_text(parse_html(self.site.page(path)).root)
            share = boilerplate_removed(text, gold, page_text)
            if share is not None:
                removed.append(share)
        mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
        return {"pages": len(f1s), "f1": mean(f1s), "boilerplate_removed": mean(removed)}

    def _closed(self, spider: Any = None, reason: str = "") -> None:
        self.server.close()
        result = self.score()
        stats = self.crawler.stats
        stats.set_value("demo/pages_scored", result["pages"])
        stats.set_value("demo/f1", round(result["f1"], 4))
        stats.set_value("demo/boilerplate_removed", round(result["boilerplate_removed"], 4))
        self.logger.info(
            "demo: %d article pages, mean F1 %.3f, boilerplate removed %.1f%% (method %s)",
            result["pages"],
            result["f1"],
            100 * result["boilerplate_removed"],
            self.crawler.settings.get("SST_METHOD"),
        )
