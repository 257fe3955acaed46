"""``scrapy crawl site -a url=https://example.com/ -O out.jsonl``: one item per page.

Follows links within the start URL's host (``-a max_pages=N`` stops after N pages) and
yields ``{"url", "title"}`` per HTML page; the sst-cleaner pipeline adds ``text``.
"""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import urlsplit

import scrapy
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, url: Optional[str] = None, max_pages: Optional[str] = None, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if not url:
            raise ValueError("give the site to crawl: scrapy crawl site -a url=https://example.com/")
        if "://" not in url:
            url = "https://" + url
        host = urlsplit(url).hostname
        if not host:
            raise ValueError(f"not a URL: {url!r}")
        self.start_urls = [url]
        self.allowed_domains = [host]
        self.host = host
        # LinkExtractor(allow_domains=...) compares the netloc (with any port), so a site
        # on a non-default port would have no links: filter on the host name here instead
        self.links = LinkExtractor()
        self.max_pages = int(max_pages) if max_pages else None
        self.pages = 0

    def parse(self, response: Any) -> Any:
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        self.pages += 1
        yield {"url": response.url, "title": response.css("title::text").get(default="").strip()}
        if self.max_pages is not None and self.pages >= self.max_pages:
            return  # stop following links; requests already queued still finish
        for link in self.links.extract_links(response):
            if urlsplit(link.url).hostname != self.host:
                continue
            yield scrapy.Request(link.url, callback=self.parse)
