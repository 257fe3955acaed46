"""``scrapy crawl demo_links``: a ``CrawlSpider`` over the embedded demo site whose rule
uses :class:`sst_cleaner.scrapy.InformativeLinkExtractor`.

The spider starts the generated site (:mod:`sst_cleaner.tools.demo`) on 127.0.0.1 at a free
port, as ``scrapy crawl demo`` does, and crawls it with one rule: every link its link
extractor returns is followed, every article page gives an item (url and title; the
sst-cleaner pipeline adds ``text``). The site model is WISDOM (``SST_METHOD = "wisdom"``,
the method that mines link blocks); until it is built from the first
``SST_SAMPLE_PAGES`` pages the extractor returns every link, afterwards only the
informative ones. When the crawl ends it logs, and stores in the crawl stats under
``demo_links/``:

* links followed (returned by the rule's extractor) and requests made;
* links the plain ``LinkExtractor`` finds on the same pages, and the share kept;
* how many followed links lead to article pages (the demo knows its pages);
* article pages reached / total, and whether every article page was reached.

Arguments (``-a name=value``): ``links`` = ``informative`` (default) or ``plain`` (Scrapy's
``LinkExtractor``, for comparison); ``seed`` (7), ``articles`` (60), ``per_listing`` (4:
teasers per listing page, so sections have several pages and the crawl must follow
pagination to reach every article); ``pagination`` (1; 0 = the informative extractor
keeps no pagination links, for comparison); ``summary`` = a path where the figures are written
as JSON (used by ``benchmarks/link_extraction.py`` and the tests).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Optional
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

from sst_cleaner.scrapy import InformativeLinkExtractor
from sst_cleaner.tools.demo import DemoServer, DemoSite


class DemoLinksSpider(CrawlSpider):
    name = "demo_links"
    custom_settings = {"SST_METHOD": "wisdom"}

    def __init__(
        self,
        links: str = "informative",
        seed: int = 7,
        articles: int = 60,
        per_listing: int = 4,
        summary: Optional[str] = None,
        pagination: str = "1",
        *args: Any,
        **kwargs: Any,
    ):
        if links not in ("informative", "plain"):
            raise ValueError(f"links must be 'informative' or 'plain', not {links!r}")
        self.mode = links
        # the rule is built before CrawlSpider.__init__, which compiles self.rules
        follow_pages = str(pagination).strip().lower() not in ("0", "false", "no", "off")
        self.extractor = (
            InformativeLinkExtractor(pagination=follow_pages) if links == "informative" else LinkExtractor()
        )
        self.rules = (Rule(self.extractor, callback="parse_page", follow=True, process_links="note_links"),)
        super().__init__(*args, **kwargs)
        self.site = DemoSite(seed=int(seed), n_articles=int(articles), per_listing=int(per_listing))
        self.server = DemoServer(self.site).start()
        self.allowed_domains = [urlsplit(self.server.url).hostname]
        self.summary_path = summary
        self.articles = set(self.site.article_paths)
        self.reached: set[str] = set()  # article paths whose page was parsed
        self.followed = 0  # links returned by the extractor
        self.followed_to_articles = 0
        self.followed_to_pages = 0  # to any HTML page of the site
        self.followed_urls: set[str] = set()
        # the same counts for the pages whose links the site model filtered
        self.followed_with_model = 0
        self.followed_with_model_to_articles = 0
        self._model_pages_seen = 0

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> "DemoLinksSpider":
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._closed, signal=signals.spider_closed)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        # the home page goes through the rule too (CrawlSpider's default callback)
        yield scrapy.Request(self.server.url)

    def note_links(self, links: list) -> list:
        """The rule's ``process_links``: count what is followed and where it leads."""
        self.followed += len(links)
        # CrawlSpider calls process_links right after extract_links for the same page, so
        # a new page in the extractor's "with model" count means this page was filtered
        ex = getattr(self.extractor, "stats", None)
        filtered = ex is not None and ex["pages_with_model"] > self._model_pages_seen
        if filtered:
            self._model_pages_seen = ex["pages_with_model"]
            self.followed_with_model += len(links)
        for link in links:
            path = urlsplit(link.url).path
            self.followed_urls.add(link.url)
            if path in self.articles:
                self.followed_to_articles += 1
                self.followed_with_model_to_articles += filtered
            if self.site.page(path) is not None:
                self.followed_to_pages += 1
        return links

    def parse_page(self, response: Any) -> Any:
        path = urlsplit(response.url).path
        if path in self.articles:
            self.reached.add(path)
            yield {"url": response.url, "title": response.css("h1::text").get(default="")}

    # the start page is parsed by CrawlSpider.parse_start_url: count it as well
    def parse_start_url(self, response: Any, **kwargs: Any) -> Any:
        return self.parse_page(response)

    def summary(self) -> dict:
        """The crawl's figures (see the module docstring)."""
        st = self.crawler.stats
        out = {
            "links": self.mode,
            "pagination": getattr(self.extractor, "pagination", None),
            "links_followed": self.followed,
            "unique_links_followed": len(self.followed_urls),
            "followed_to_articles": self.followed_to_articles,
            "followed_to_site_pages": self.followed_to_pages,
            "requests": st.get_value("downloader/request_count", 0),
            "responses": st.get_value("response_received_count", 0),
            "articles_reached": len(self.reached),
            "articles_total": len(self.articles),
            "all_articles_reached": self.reached == self.articles,
            "articles_missed": sorted(self.articles - self.reached),
            "method": self.crawler.settings.get("SST_METHOD"),
        }
        ex = getattr(self.extractor, "stats", None)
        if ex is not None:
            out.update({f"extractor_{k}": v for k, v in ex.items()})
            out["links_plain_on_same_pages"] = ex["links_seen"]
            out["followed_with_model"] = self.followed_with_model
            out["followed_with_model_to_articles"] = self.followed_with_model_to_articles
            out["share_kept"] = ex["links_kept"] / ex["links_seen"] if ex["links_seen"] else 1.0
            out["share_kept_with_model"] = (
                ex["links_kept_with_model"] / ex["links_seen_with_model"] if ex["links_seen_with_model"] else 1.0
            )
        return out

    def _closed(self, spider: Any = None, reason: str = "") -> None:
        self.server.close()
        s = self.summary()
        stats = self.crawler.stats
        for key, value in s.items():
            if isinstance(value, (int, float, bool)):
                stats.set_value(f"demo_links/{key}", round(value, 4) if isinstance(value, float) else value)
        share = lambda n, d: 100.0 * n / d if d else 0.0  # noqa: E731
        if "extractor_links_kept" in s:  # the informative extractor counts what it did
            self.logger.info(
                "demo_links: the plain LinkExtractor finds %d links on these pages, the informative "
                "one keeps %d (%.1f%%); on the %d pages whose site had a model it keeps %d of %d "
                "(%.1f%%: %d in link blocks, %d content, %d pagination), %d of them (%.1f%%) to "
                "article pages",
                s["links_plain_on_same_pages"],
                s["extractor_links_kept"],
                100 * s["share_kept"],
                s["extractor_pages_with_model"],
                s["extractor_links_kept_with_model"],
                s["extractor_links_seen_with_model"],
                100 * s["share_kept_with_model"],
                s["extractor_kept_link_block"],
                s["extractor_kept_content"],
                s["extractor_kept_pagination"],
                s["followed_with_model_to_articles"],
                share(s["followed_with_model_to_articles"], s["followed_with_model"]),
            )
        self.logger.info(
            "demo_links (%s links, method %s): %d links followed, %d requests; %d followed links "
            "(%.1f%%) lead to article pages; %d/%d article pages reached%s",
            self.mode,
            s["method"],
            s["links_followed"],
            s["requests"],
            s["followed_to_articles"],
            share(s["followed_to_articles"], s["links_followed"]),
            s["articles_reached"],
            s["articles_total"],
            " (all)" if s["all_articles_reached"] else " (NOT all)",
        )
        if self.summary_path:
            with open(self.summary_path, "w", encoding="utf-8") as fh:
                json.dump(s, fh, indent=1, sort_keys=True)
