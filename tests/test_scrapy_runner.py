"""Subprocess entry point of the Scrapy integration tests (holds no tests itself).

``python tests/test_scrapy_runner.py CONFIG.json`` runs one real Scrapy crawl
(``CrawlerProcess``, its own reactor, real HTTP to the test's local server) and writes
what happened to ``config["out"]``: every item id the spider yielded, every item id the
last item pipeline received (with its text), the crawl stats and the finish reason.
A fresh process per crawl keeps crawls independent (one reactor per process).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
import zlib
from typing import Any, Optional
from urllib.parse import urlsplit

import scrapy

try:
    import attrs
except ImportError:  # attrs items are tested only where attrs is installed
    attrs = None

YIELDED: list[str] = []
RECEIVED: list[dict] = []
#: what probe_store saw of the crawl's model store (cfg "probe_store")
PROBE = {"peak_in_use": 0, "gets": 0, "missing": 0, "revisits": 0, "revisited_on_disk": 0}


class PageItem(scrapy.Item):
    id = scrapy.Field()
    url = scrapy.Field()
    text = scrapy.Field()


class NoTextItem(scrapy.Item):
    """Lacks the ``text`` field: the pipeline must say so and pass it on uncleaned."""

    id = scrapy.Field()
    url = scrapy.Field()


class StatusItem(scrapy.Item):
    """Declares the ``sst_status`` field (SST_STATUS_FIELD's default)."""

    id = scrapy.Field()
    url = scrapy.Field()
    text = scrapy.Field()
    sst_status = scrapy.Field()


@dataclasses.dataclass
class DataclassItem:
    id: str
    url: str
    text: Optional[str] = None


if attrs is not None:

    @attrs.define
    class AttrsItem:
        id: str
        url: str
        text: Optional[str] = None


def make_item(kind: str, item_id: str, url: str) -> Any:
    if kind == "dict":
        return {"id": item_id, "url": url}
    if kind == "item":
        return PageItem(id=item_id, url=url)
    if kind == "html":  # HTML carried in the item itself (SST_SOURCE_FIELD = "html")
        sentence = f"The field copy of {url.rsplit('/', 1)[-1]} was written by the spider itself."
        return {
            "id": item_id,
            "url": url,
            "expect": sentence,
            "html": f"<html><body><div><p>{sentence}</p></div></body></html>",
        }
    if kind == "hostile_meta":  # its HTML's metadata cannot be read (tests/test_metadata_edges.py)
        sentence = f"The harbour story of {url.rsplit('/', 1)[-1]} keeps its text whatever its metadata holds."
        head = (
            '<meta name="date" content="1 Jan 99999999999999999999 00:00:00 +0000">'
            '<meta property="og:url" content="http://[x/"><link rel="canonical" href="http://[x/">'
        )
        return {
            "id": item_id,
            "url": url,
            "expect": sentence,
            "html": f"<html><head><title>Harbour</title>{head}</head><body><div><p>{sentence}</p></div></body></html>",
        }
    if kind == "status":
        return StatusItem(id=item_id, url=url)
    if kind == "notext":
        return NoTextItem(id=item_id, url=url)
    if kind == "dataclass":
        return DataclassItem(id=item_id, url=url)
    if kind == "attrs":
        return AttrsItem(id=item_id, url=url)
    raise ValueError(kind)


def probe_store(url: str) -> None:
    """Look at the store as a link extractor does: the page's site model through
    ``store.get`` (read back from disk if it was evicted), and the most local model
    copies in use at once (tests/test_model_cache.py)."""
    from sst_cleaner.scrapy._site_models import active_store

    store = active_store()
    site = store.site_key(url)
    if store.has_model(site):
        PROBE["gets"] += 1
        PROBE["missing"] += store.get(site) is None
    PROBE["peak_in_use"] = max(PROBE["peak_in_use"], len(store._models))


def probe_revisit(url: str) -> None:
    """A revisit (cfg "revisit"): the evicted copies are written out first, so a get of
    a site whose copy is not in memory must read its file back."""
    from sst_cleaner.scrapy._site_models import active_store

    store = active_store()
    store._models.flush()
    site = store.site_key(url)
    PROBE["revisits"] += 1
    PROBE["revisited_on_disk"] += site in store._models._spilled
    probe_store(url)


def section_key(url: str) -> str:
    """A site key per section of the demo site (SST_SITE_KEY as an import path)."""
    path = urlsplit(url).path
    return path.split("/")[2] if path.startswith("/section/") else "articles-" + str(len(path) % 3)


# -- fault injection (tests/test_scrapy_faults.py) ------------------------------------------
# Every fault is a pure function of the page URL, so a test can work out which items were
# hit without looking at the crawl.


class InjectedSpiderError(RuntimeError):
    pass


class InjectedCleanError(RuntimeError):
    pass


class InjectedFitError(RuntimeError):
    pass


def url_bucket(url: str, mod: int) -> int:
    """A stable pseudo-random bucket of a URL's path (0 .. mod-1)."""
    return zlib.crc32(urlsplit(url).path.encode("utf-8")) % mod


def fault_site(url: str) -> str:
    """SST_SITE_KEY of the fault tests: articles split into three "sites" a0, a1, a2 by
    bucket; listings are one more site."""
    path = urlsplit(url).path
    return f"a{url_bucket(url, 3)}" if path.startswith("/article/") else "listing"


def register_faulty_method() -> None:
    """Register method "faulty" (CETD that raises on chosen pages and sites).

    Registered only in the crawl's process, on demand, so the test process's list of
    methods (which other tests iterate) never holds it.
    """
    from sst_cleaner import register_method
    from sst_cleaner.engine.methods.cetd import CETDMethod

    @register_method("faulty")
    class FaultyMethod(CETDMethod):
        def __init__(self, fail_clean_mod: int = 0, fail_fit_sites: tuple = (), **params: Any):
            super().__init__(**params)
            self.fail_clean_mod = int(fail_clean_mod)
            self.fail_fit_sites = frozenset(fail_fit_sites)

        def fit(self, pages: list) -> None:
            if any(fault_site(p.url or "") in self.fail_fit_sites for p in pages):
                raise InjectedFitError("injected fit failure")
            super().fit(pages)

        def clean(self, page: Any) -> Any:
            if self.fail_clean_mod and url_bucket(page.url or "", self.fail_clean_mod) == 1:
                raise InjectedCleanError("injected clean failure")
            return super().clean(page)


def register_crashing_method() -> None:
    """Register method "crashing" (CETD whose *worker process* dies, ``os._exit``, while
    cleaning an article page of bucket ``crash_bucket`` of ``crash_mod``, or whose URL holds
    ``crash_url_part``; in the Scrapy
    process itself, i.e. in thread mode, it never crashes). Pages the model was fitted on
    never crash (so the crash hits the cleaning of an item's page, not the build). With
    ``crash_marker`` (a file path) only the first such page crashes: the dying worker
    creates the file first. With ``hang`` (seconds) the worker sleeps that long instead of
    dying: it hangs in C (``time.sleep``), where no time budget reaches.

    Passed to the workers by ``SST_WORKER_INIT = "test_scrapy_runner.register_crashing_method"``.
    """
    import multiprocessing

    from sst_cleaner import register_method
    from sst_cleaner.engine.methods.cetd import CETDMethod

    @register_method("crashing")
    class CrashingMethod(CETDMethod):
        def __init__(
            self,
            crash_mod: int = 0,
            crash_bucket: int = 0,
            crash_marker: str = "",
            crash_url_part: str = "",
            hang: float = 0.0,
            **params: Any,
        ):
            super().__init__(**params)
            self.hang = float(hang)
            self.crash_url_part = crash_url_part
            self.crash_mod = int(crash_mod)
            self.crash_bucket = int(crash_bucket)
            self.crash_marker = crash_marker
            self.fitted_urls: set = set()

        def fit(self, pages: list) -> None:
            self.fitted_urls = {p.url for p in pages}
            super().fit(pages)

        def clean(self, page: Any) -> Any:
            url = page.url or ""
            if self.crash_url_part:
                chosen = self.crash_url_part in url
            else:
                chosen = bool(self.crash_mod) and url_bucket(url, self.crash_mod) == self.crash_bucket
            if (
                chosen
                and multiprocessing.parent_process() is not None
                and url not in self.fitted_urls
                and "/article/" in url
            ):
                if not self.crash_marker:
                    self._crash()
                try:
                    with open(self.crash_marker, "x", encoding="utf-8") as fh:
                        fh.write(url)
                except FileExistsError:
                    pass
                else:
                    self._crash()
            return super().clean(page)

        def _crash(self) -> None:
            if self.hang:
                time.sleep(self.hang)
            os._exit(70)


def break_metadata() -> None:
    """SST_WORKER_INIT of tests/test_metadata_edges.py: reading any page's metadata raises
    in this worker, as a bug in it would."""
    from sst_cleaner.engine import _metadata

    def broken(page: Any) -> Any:
        raise RuntimeError("injected metadata failure")

    _metadata.read_metadata = broken


class RecordPipeline:
    """Last pipeline: records what reached the pipelines."""

    def process_item(self, item: Any, spider: Any = None) -> Any:
        from itemadapter import ItemAdapter

        adapter = ItemAdapter(item)
        RECEIVED.append(
            {
                "id": adapter.get("id"),
                "text": adapter.get("text"),
                "status": adapter.get("sst_status"),
                "type": type(item).__name__,
                "expect": adapter.get("expect"),
                "sentences": adapter.get("sentences"),
                "blocks": adapter.get("blocks"),
                "markdown": adapter.get("markdown"),
                "html": adapter.get("html_out"),
                "metadata": adapter.get("metadata"),
            }
        )
        return item


class SlowPipeline:
    """Takes SLOW_PIPELINE_SECONDS per item without blocking the reactor (a pipeline that
    writes to a slow store): released pages pile up unless something pushes back."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    @classmethod
    def from_crawler(cls, crawler: Any) -> "SlowPipeline":
        return cls(crawler.settings.getfloat("SLOW_PIPELINE_SECONDS", 0.05))

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet import reactor, task

        await maybe_deferred_to_future(task.deferLater(reactor, self.seconds, lambda: None))
        return item


class BlockDataUrls:
    """Downloader middleware refusing data: URLs (so the idle flush request fails)."""

    def process_request(self, request: Any, spider: Any = None) -> None:
        if request.url.startswith("data:"):
            from scrapy.exceptions import IgnoreRequest

            raise IgnoreRequest("data: URLs are blocked in this test")


class ProbeSpider(scrapy.Spider):
    name = "probe"

    def __init__(self, cfg: dict, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.cfg = cfg
        self.base = cfg["url"].rstrip("/")
        self.pages = 0
        self.first_page: dict[str, str] = {}  # site -> its page revisited (see parse)
        self.site_pages: dict[str, int] = {}  # site -> pages parsed of it
        self.revisits: Optional[list[str]] = None
        self.idles = 0

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> "ProbeSpider":
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.cfg.get("revisit"):
            crawler.signals.connect(spider.revisit_when_idle, signal=scrapy.signals.spider_idle)
        return spider

    def revisit_when_idle(self) -> None:
        """cfg "revisit": once the crawl is done and every site seen has its model, go
        back to the first page of each site with a model, twice round, one page at a
        time: whatever order the crawl met its pages and built its models in, each
        revisit after the first asks for a site other than the last one asked for."""
        from scrapy.exceptions import DontCloseSpider

        from sst_cleaner.scrapy._site_models import active_store

        if self.revisits is not None:
            return
        store = active_store()
        sample = int(self.settings.getint("SST_SAMPLE_PAGES"))
        seen = [site for site, n in self.site_pages.items() if n >= sample]
        self.idles += 1
        if not all(store.has_model(site) for site in seen) and self.idles < 20:
            raise DontCloseSpider("a model is still being built")  # asked again at the next idle
        urls = [self.first_page[site] for site in sorted(self.first_page) if store.has_model(site)]
        self.revisits = [url + self.cfg.get("revisit_query", "") for url in urls * 2]
        self._next_revisit()
        raise DontCloseSpider("revisiting")

    def _next_revisit(self) -> None:
        if self.revisits:
            request = scrapy.Request(self.revisits.pop(0), callback=self.parse_revisit, dont_filter=True)
            self.crawler.engine.crawl(request)

    def parse_revisit(self, response: Any) -> Any:
        """A revisit: the store probed; with cfg "revisit_query", items again, under
        ids of their own."""
        probe_revisit(response.url)
        self._next_revisit()
        if self.cfg.get("revisit_query"):
            parts = urlsplit(response.url)
            for kind in self.cfg.get("kinds", ["dict"]):
                item_id = f"again:{parts.path}?{parts.query}#{kind}#{len(self.revisits or ())}"
                YIELDED.append(item_id)
                yield make_item(kind, item_id, response.url)

    async def start(self):
        if self.cfg.get("start_item"):
            YIELDED.append("start-item")
            yield {"id": "start-item"}
        yield scrapy.Request(self.base + "/")
        for path in self.cfg.get("resources", []):
            yield scrapy.Request(self.base + path, callback=self.parse_resource)

    def parse(self, response: Any) -> Any:
        self.pages += 1
        if self.cfg.get("revisit"):
            from sst_cleaner.scrapy._site_models import active_store

            site = active_store().site_key(response.url)
            # the smallest URL, not the first met: the same page in every run, whatever
            # order the concurrent requests came back in
            self.first_page[site] = min(self.first_page.get(site, response.url), response.url)
            self.site_pages[site] = self.site_pages.get(site, 0) + 1
        if self.cfg.get("probe_store"):
            probe_store(response.url)
        if self.cfg.get("sigint_after") and self.pages == self.cfg["sigint_after"]:
            os.kill(os.getpid(), signal.SIGINT)
        path = urlsplit(response.url).path
        if path.startswith("/article/"):  # items first: they reach the middleware early
            for kind in self.cfg.get("kinds", ["dict"]):
                item_id = f"{path}#{kind}"
                YIELDED.append(item_id)
                yield make_item(kind, item_id, response.url)
            if self.cfg.get("raise_mod") and url_bucket(response.url, self.cfg["raise_mod"]) == 0:
                raise InjectedSpiderError("injected spider failure")
        for href in response.css("a::attr(href)").getall():
            link = urlsplit(response.urljoin(href)).path
            if link.startswith(("/section/", "/article/")) and self.pages < self.cfg.get("max_pages", 10**9):
                yield response.follow(href, callback=self.parse)

    def parse_resource(self, response: Any) -> Any:
        item_id = "res:" + urlsplit(response.url).path
        YIELDED.append(item_id)
        yield {"id": item_id, "content_type": response.headers.get("Content-Type", b"").decode()}


def main(config_path: str) -> None:
    from scrapy.crawler import CrawlerProcess

    with open(config_path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    settings = {
        "ADDONS": {"sst_cleaner.Addon": 0},
        "ITEM_PIPELINES": {"test_scrapy_runner.RecordPipeline": 999},
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "SST_METHOD": "cetd",
        "SST_SAMPLE_PAGES": 5,
    }
    settings.update(cfg.get("settings", {}))
    import importlib

    mod = importlib.import_module("test_scrapy_runner")  # the copy Scrapy's settings load
    if cfg.get("faulty_method"):
        mod.register_faulty_method()
    if cfg.get("crashing_method"):
        mod.register_crashing_method()
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(mod.ProbeSpider)
    process.crawl(crawler, cfg=cfg)
    process.start()
    stats = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in crawler.stats.get_stats().items()}
    with open(cfg["out"], "w", encoding="utf-8") as fh:
        json.dump({"yielded": mod.YIELDED, "received": mod.RECEIVED, "stats": stats, "probe": mod.PROBE}, fh)


if __name__ == "__main__":
    main(sys.argv[1])
