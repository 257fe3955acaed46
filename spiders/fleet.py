"""``scrapy crawl fleet -a url=http://HOST/`` : one worker of a fleet sharing one crawl.

Run it in as many processes (and machines) as you like, all with the same ``REDIS_URL``:
scrapy-redis's scheduler and duplicate filter share the request queue (each page is
crawled once, by whichever worker pops it) and sst-cleaner's ``SST_MODEL_STORE = "redis"``
shares the site models (each site is learnt once, by one worker). A plain spider with
``async def start()``, so it needs no start URLs pushed to Redis (scrapy-redis's
``RedisSpider`` works too: see docs/operations.md).

``-a url=`` may list several sites, comma-separated (the fleet benchmarks serve one demo
site per loopback address: one site per host). It follows the demo site's links
(``-a follow=all`` for every same-host link) and yields
``{"url", "title", "worker"}`` per article page. ``-a stats_out=FILE`` writes the crawl's
stats as JSON when it closes (the fleet demo reads them); ``-a parsed_out=FILE`` and
``-a delivered_out=FILE`` append the URL of each item as the spider yields it and as it
comes out of the item pipelines, a line each, written through at once (so a worker
killed with SIGKILL leaves what it did: the fault harness compares the two); ``-a workers=N`` makes each
worker wait until N workers have started before it sends the first request.

Why the keep-alive: with a shared queue, a worker whose turn finds the queue empty
would close at once while another worker's responses are about to add links to it. A
worker stays open while the queue has requests or any worker handled a response in the
last ``quiet`` seconds (a Redis key each response refreshes), and for ``grace`` seconds
after it opened.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, AsyncIterator, Optional
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import DontCloseSpider

_FOLLOW = ("/section/", "/article/", "/static/", "/api/")


class FleetSpider(scrapy.Spider):
    name = "fleet"
    custom_settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        # keep the queue and the seen-set when one worker closes: the others still use them
        "SCHEDULER_PERSIST": True,
        "SST_MODEL_STORE": "redis",
    }

    def __init__(
        self,
        url: Optional[str] = None,
        follow: str = "demo",
        stats_out: str = "",
        grace: str = "2",
        quiet: str = "1",
        workers: str = "0",
        parsed_out: str = "",
        delivered_out: str = "",
        *args: Any,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        if not url:
            raise ValueError("give the site to crawl: scrapy crawl fleet -a url=http://HOST/")
        self.urls = [u.strip() for u in url.split(",") if u.strip()]
        self.url = self.urls[0]
        self.hosts = {urlsplit(u).netloc for u in self.urls}
        self.follow_all = follow == "all"
        self.stats_out = stats_out
        self.grace = float(grace)
        self.quiet_ms = int(float(quiet) * 1000)
        self.workers = int(workers)
        self.opened_at = time.monotonic()
        self.server: Any = None
        self.parsed_out = open(parsed_out, "a", encoding="utf-8", buffering=1) if parsed_out else None
        self.delivered_out = open(delivered_out, "a", encoding="utf-8", buffering=1) if delivered_out else None

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> "FleetSpider":
        from scrapy_redis.connection import get_redis_from_settings

        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.server = get_redis_from_settings(crawler.settings)
        crawler.signals.connect(spider._opened, signal=signals.spider_opened)
        crawler.signals.connect(spider._idle, signal=signals.spider_idle)
        crawler.signals.connect(spider._closed, signal=signals.spider_closed)
        # the stats are written once the engine stopped: the close of the spider's other
        # components (sst-cleaner's last merges into the fleet's models) counts in them
        crawler.signals.connect(spider._write_stats, signal=signals.engine_stopped)
        if spider.delivered_out is not None:
            crawler.signals.connect(spider._delivered, signal=signals.item_scraped)
        return spider

    @property
    def _active_key(self) -> str:
        return f"{self.name}:fleet-active"

    async def start(self) -> AsyncIterator[Any]:
        if self.workers > 1:  # -a workers=N: start together (a fair race for the queue)
            await self._all_started()
        self.crawler.stats.set_value("fleet/started_at", time.time())
        for url in self.urls:
            yield scrapy.Request(url)  # the shared duplicate filter keeps one copy

    async def _all_started(self, timeout: float = 120.0) -> None:
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet import reactor, task

        key = f"{self.name}:fleet-started"
        self.server.incr(key)
        deadline = time.monotonic() + timeout
        while int(self.server.get(key) or 0) < self.workers and time.monotonic() < deadline:
            await maybe_deferred_to_future(task.deferLater(reactor, 0.05, lambda: None))
        self.opened_at = time.monotonic()

    def parse(self, response: Any) -> Any:
        self._mark_active()
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        if "/article/" in response.url:  # items first: they reach the middleware early
            if self.parsed_out is not None:
                self.parsed_out.write(response.url + "\n")
            yield {"url": response.url, "title": response.css("h1::text").get(default=""), "worker": os.getpid()}
        for href in response.css("a::attr(href)").getall():
            parts = urlsplit(response.urljoin(href))
            if parts.netloc in self.hosts and (self.follow_all or parts.path == "/" or parts.path.startswith(_FOLLOW)):
                yield response.follow(href, callback=self.parse)

    def _opened(self, spider: Any = None) -> None:
        # An idle engine asks its scheduler for requests only at its heartbeat (5 s):
        # a worker that opens before the queue has anything for it would sit out the
        # first seconds of a short crawl. Scrapy has no setting for the interval; the
        # engine reads this attribute when it starts the heartbeat, after spider_opened.
        engine = getattr(self.crawler, "engine", None)
        if engine is not None and hasattr(engine, "_SLOT_HEARTBEAT_INTERVAL"):
            engine._SLOT_HEARTBEAT_INTERVAL = 0.5

    def _mark_active(self) -> None:
        import redis

        try:
            self.server.set(self._active_key, os.getpid(), px=self.quiet_ms)
        except redis.RedisError:  # Redis is away: the page's items go on all the same
            pass

    def _idle(self, spider: Any = None) -> None:
        import redis

        if time.monotonic() - self.opened_at < self.grace:
            raise DontCloseSpider("the fleet is still crawling")
        queue_key = self.settings.get("SCHEDULER_QUEUE_KEY") or "%(spider)s:requests"
        try:
            queued = self.server.zcard(queue_key % {"spider": self.name})
            active = self.server.exists(self._active_key)
        except redis.RedisError:  # Redis is away: whether the fleet is done is not known yet
            self.opened_at = time.monotonic()  # ask again after a grace period
            raise DontCloseSpider("the fleet's Redis does not answer") from None
        if queued or active:
            raise DontCloseSpider("the fleet is still crawling")

    def _delivered(self, item: Any, **kwargs: Any) -> None:
        assert self.delivered_out is not None
        self.delivered_out.write(str(item.get("url")) + "\n")

    def _closed(self, spider: Any = None, reason: str = "") -> None:
        for out in (self.parsed_out, self.delivered_out):
            if out is not None:
                out.close()
        self.crawler.stats.set_value("fleet/closed_at", time.time())

    def _write_stats(self) -> None:
        if self.stats_out:
            stats = {
                k: (v if isinstance(v, (int, float, str)) else str(v))
                for k, v in self.crawler.stats.get_stats().items()
            }
            with open(self.stats_out, "w", encoding="utf-8") as fh:
                json.dump(stats, fh)
