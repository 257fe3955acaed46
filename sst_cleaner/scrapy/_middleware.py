"""Spider middleware: learns each site's model from its first pages and holds the items of
a site until its model exists, so every item is cleaned by a site model.

Life of an item::

    spider yields item from page P of site S
      S has a model        -> item passes straight on; P refines the model (partial_fit,
                              in S's worker) until it has SST_MAX_MODEL_PAGES pages
      S has no model yet   -> item is *held*; P joins S's sample
      S reaches SST_SAMPLE_PAGES -> the model is fitted in S's worker (the reactor
                              keeps downloading); the response that completed the sample
                              waits for it and then releases every held item of S

"Worker" is a worker process (``SST_WORKERS = "process"``, the default; each site pinned
to one) or a worker thread (``"thread"``): see :mod:`sst_cleaner.scrapy._workers` and
:class:`~sst_cleaner.scrapy._site_models.SiteModelStore`.

Bounds (memory never grows without limit): held items and held page bytes across all
sites are capped by SST_MAX_HELD_ITEMS / SST_MAX_HELD_BYTES. Past a cap, the site held
longest is *evicted*: its items are released at once and cleaned by the method's
page-level fallback, its sample pages dropped (the site starts a new sample). A site
held longer than SST_HOLD_TIMEOUT seconds is fitted with the pages it has. The holds,
their counters, these bounds and every decision about them are
:class:`~sst_cleaner.scrapy._holds.HoldBook`'s (plain Python); the fits and refinements
are started by :class:`~sst_cleaner.scrapy._builds.SiteBuilds`, and the held items are
got out at idle or at an early close by :class:`~sst_cleaner.scrapy._flush.HeldItemsFlush`.
This module adapts them to Scrapy's spider middleware interface and signals.

Nothing is lost: released items leave through the output of the next response the
middleware sees; when the spider goes idle a local ``data:`` request is scheduled
(``DontCloseSpider``) whose output carries everything still held, fitted with what each
site has; and when the crawl is closed early (CLOSESPIDER_*, Ctrl-C, ``crawler.stop()``)
the held items are handed to the item pipelines before the scraper closes them.

Scrapy has no public hook between "closing" and "item pipelines closed", so the last
case wraps the engine scraper's ``close_spider_async`` (Scrapy >= 2.14) / ``close_spider``
(2.13) on the instance: it first pushes the held items through the scraper's own item
path (``start_itemproc_async`` / ``start_itemproc``), so pipelines, ``item_scraped`` and
feed exports see them exactly as any other item. Those wrappers, and every other use of
Scrapy internals or of one Scrapy version's API, are in :mod:`sst_cleaner.scrapy._compat`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Optional, cast

from scrapy import Request, signals
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future

from sst_cleaner.scrapy._builds import SiteBuilds
from sst_cleaner.scrapy._compat import close_spider
from sst_cleaner.scrapy._crawl_state import (  # noqa: F401  (also imported from here by older code and tests)
    BAD_SETTING_REASON,
    NON_HTML,
    BadSettings,
    ErrorReporter,
    get_errors,
    get_store,
    refuse_bad_settings,
)
from sst_cleaner.scrapy._flush import FLUSH_META, HeldItemsFlush
from sst_cleaner.scrapy._holds import HoldBook, _SiteHold
from sst_cleaner.scrapy._settings import component_config
from sst_cleaner.scrapy._site_models import PageRecord

if TYPE_CHECKING:
    from sst_cleaner.scrapy._fleet import SharedSiteModelStore  # imported for real only with SST_MODEL_STORE

logger = logging.getLogger(__name__)

#: seconds a response waits at most for the pipelines to clean released pages (an item
#: that never reaches them, e.g. dropped by a later spider middleware, must not stall it)
BACKPRESSURE_WAIT = 10.0

#: content types treated as HTML pages (anything else passes through untouched)
_HTML_TYPES = (b"text/html", b"application/xhtml+xml")


def is_html_response(response: Response) -> bool:
    """Whether a response is an HTML page worth learning from."""
    if isinstance(response, HtmlResponse):
        return True
    if not isinstance(response, TextResponse):
        return False
    ctype = (response.headers.get(b"Content-Type") or b"").split(b";")[0].strip().lower()
    return ctype in _HTML_TYPES


def _is_item(obj: Any) -> bool:
    """What Scrapy sends to the item pipelines: anything that is not a request."""
    return obj is not None and not isinstance(obj, Request)


def _page_of(response: Response, site: str) -> PageRecord:
    return PageRecord(response.url, response.body, getattr(response, "encoding", None), site)


class SSTSpiderMiddleware:
    """Records pages, holds items until their site has a model, releases them."""

    def __init__(self, crawler: Any):
        config = component_config(crawler.settings)
        self.crawler = crawler
        self.config = config
        self.store = get_store(crawler)
        self.errors = get_errors(crawler)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self._item_gone, signal=signals.item_dropped)
        crawler.signals.connect(self._item_gone, signal=signals.item_error)
        # a store shared by a fleet of crawl processes (SST_MODEL_STORE, see _fleet.py)
        shared = bool(getattr(self.store, "shared", False))
        self.book = HoldBook(
            self.store,
            sample_pages=config.sample_pages,
            max_held_items=config.max_held_items,
            max_held_bytes=config.max_held_bytes,
            hold_timeout=config.hold_timeout,
            # the fleet gathers each site's sample from the pages of every process
            on_sample_page=cast("SharedSiteModelStore", self.store).sample_added if shared else None,
            min_fit_pages=config.min_fit_pages,
            fit_small_samples=shared,
            item_count=crawler.settings.getint("CLOSESPIDER_ITEMCOUNT", 0),
        )
        self.builds = SiteBuilds(self.book, self.store, self.errors, config.max_model_pages)
        self.flush = HeldItemsFlush(
            crawler, self.book, self.store, self.errors, self.builds.release_everything, self._pop_ready
        )
        if shared:
            cast("SharedSiteModelStore", self.store).set_listener(self.builds.shared_ready)
            # a dead worker's held pages are crawled again from here (see _fleet_held.py)
            cast("SharedSiteModelStore", self.store).set_rescheduler(self._crawl_again)
            cast("SharedSiteModelStore", self.store).watch_items(crawler.signals)

    @classmethod
    def from_crawler(cls, crawler: Any) -> Any:
        """The middleware, or with a bad ``SST_*`` setting the :class:`BadSettings`
        stand-in that stops the crawl."""
        try:
            return cls(crawler)
        except ValueError as exc:  # a bad setting (component_config, the store's checks)
            return refuse_bad_settings(crawler, exc)

    def _crawl_again(self, record: bytes) -> None:
        """Schedule a dead fleet worker's held page again (past the duplicate filter)."""
        from sst_cleaner.scrapy._fleet_held import decode_request

        self.crawler.engine.crawl(decode_request(record, self.crawler.spider))

    # -- signals ---------------------------------------------------------------------------
    def spider_opened(self, spider: Any = None) -> None:
        self.store.open()
        self.flush.install_close_hook()
        self._hold_log = _start_hold_log(self.crawler, self.log_holds)

    def log_holds(self) -> None:
        if not self.book.held_items:
            return
        items, sites, gathering, oldest = self.book.status()
        logger.info(
            "sst: %d items held for %d sites (%d gathering their sample, %d fitting); the oldest hold is %.0f s old",
            items,
            sites,
            gathering,
            sites - gathering,
            oldest,
        )

    def spider_idle(self, spider: Any = None) -> None:
        """Items are held outside the engine's view: keep the spider open until they are out."""
        self.flush.spider_idle()

    async def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        hold_log = getattr(self, "_hold_log", None)
        if hold_log is not None and hold_log.running:
            hold_log.stop()
        pending = self.book.pending()
        if pending:  # cannot happen unless the close hook could not be installed
            logger.error("sst: %d items were still held when the spider closed", pending)
            self.errors.count("held_at_close", pending)
        # a fleet's last refinements reach its shared models before the store closes
        # (Scrapy waits for a spider_closed handler that is a coroutine)
        finishing = self.store.finish()
        try:
            if finishing is not None:
                await maybe_deferred_to_future(finishing)
        finally:
            self.store.close()

    def _item_gone(self, item: Any = None, **kwargs: Any) -> None:
        # dropped or failed before our pipeline saw it: forget its page; and Scrapy does
        # not count it towards CLOSESPIDER_ITEMCOUNT, so neither does the middleware
        self.store.forget(item)
        self.book.item_gone()

    # -- the spider input and output ---------------------------------------------------------
    def process_spider_input(self, response: Response, spider: Any = None) -> None:
        """Note the page before its callback runs: ``scrapy parse --pipelines`` sends the
        callback's items to the pipelines before this middleware sees them, and the
        pipeline finds their page by URL here (cleaned with what the site has: a
        one-page run gets the page-level fallback)."""
        if response.meta.get(FLUSH_META) or not is_html_response(response):
            return
        try:
            self.store.note_callback_page(_page_of(response, self.store.site_key(response.url)))
        except Exception as exc:
            self.errors.report("record", exc, f"page {response.url}", "its items are not held")

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        if response.meta.get(FLUSH_META):
            async for out in self.flush.output(result):
                yield out
            return

        await self._backpressure()  # before this page's items go out
        page, hold = await self._hold_page(response)
        # a fleet's page is recorded in Redis before its callback runs (see _fleet_held.py)
        fleet = cast("SharedSiteModelStore", self.store) if self.builds.shared else None
        record = await fleet.record_page(response, self.crawler.spider) if fleet is not None else None
        try:
            async for out in result:
                if not _is_item(out):
                    yield out
                    continue
                if fleet is not None:
                    fleet.note_item(record, out)
                if page is None:
                    self.store.inc("items_passed_non_html")
                    # the marker stands in for a page: the pipeline flags the item "non_html"
                    self.store.bind(out, NON_HTML)  # type: ignore[arg-type]
                    self.book.item_out()
                    yield out
                    continue
                self.store.bind(out, page)
                if hold is not None and self.book.is_current(hold):
                    self.book.hold_item(hold, out)
                    if self.book.held_items > self.config.max_held_items:  # a page with many items
                        self.book.enforce_bounds()
                        while self.book.ready:
                            yield self._pop_ready()
                else:
                    yield self._item_out(out)
        except Exception:
            if fleet is not None:
                fleet.page_parsed(record)
            # the callback raised after yielding some items (Scrapy logs and counts the
            # error itself, after the items yielded before it): the page is recorded and
            # its items held like any other, so finish its bookkeeping as below (the fit it
            # may have completed, the timeouts, the caps) and hand out what that releases
            # before the exception goes on
            async for out in self._after_page(page, hold):
                yield out
            raise
        if fleet is not None:
            fleet.page_parsed(record)
        async for out in self._after_page(page, hold):
            yield out
        await self._callback_items_cleaned(response)

    async def _hold_page(self, response: Response) -> tuple[Optional[PageRecord], Optional[_SiteHold]]:
        """Record the response's page; if its site has no model yet (and items are still
        held), the page joins the site's sample. Returns the page (None: not HTML) and the
        hold its items go to (None: they pass on)."""
        page: Optional[PageRecord] = None
        try:
            if not is_html_response(response):
                self.store.inc("non_html_responses")
                return None, None
            self.store.inc("pages_seen")
            page = _page_of(response, self.store.site_key(response.url))
            if not self.book.accepting():
                return page, None
            loading = self.store.ensure_loaded(page.site)  # read in a thread, never here
            if loading is not None:
                await maybe_deferred_to_future(loading)
            hold = self.book.hold_for(page.site, self.store.has_model(page.site))
            if hold is not None:
                self.book.add_sample_page(hold, page)
                self.book.enforce_bounds()
            return page, hold
        except Exception as exc:
            # the page's items and requests must go on whatever went wrong here: its
            # items pass unheld, cleaned by what the site has when they reach the pipeline
            self.errors.report("record", exc, f"page {response.url}", "its items are not held")
            return page, None

    async def _after_page(self, page: Optional[PageRecord], hold: Optional[_SiteHold]) -> AsyncIterator[Any]:
        """After a page's output: refine or fit its site, check timeouts and caps, and
        yield the items that released."""
        if page is not None and hold is None:
            self.builds.refine(page)
        builds = [self.builds.sample_build(hold)] if hold is not None else []
        builds.extend(self.builds.timeout_builds())
        self.book.enforce_bounds()
        for build in builds:
            if build is not None:
                await maybe_deferred_to_future(build)
        if self._item_count_reached():
            await self.builds.release_everything()
        while self.book.ready:
            yield self._pop_ready()

    def _item_count_reached(self) -> bool:
        """Whether CLOSESPIDER_ITEMCOUNT is reached with items held (to be released now);
        the first time it is reached the crawl is closed as Scrapy's CloseSpider extension
        would (see :meth:`HoldBook.check_item_count`)."""
        stats = getattr(self.crawler, "stats", None)
        scraped = stats.get_value("item_scraped_count", 0) if stats is not None else 0
        count = self.book.check_item_count(scraped)
        if count.just_reached:
            logger.info(
                "sst: CLOSESPIDER_ITEMCOUNT (%d) reached, %d of the items held: closing the spider",
                self.book.item_count,
                self.book.held_items,
            )
            close_spider(self.crawler, "closespider_itemcount")
        return count.release

    def _pop_ready(self) -> Any:
        """The next released item, counted as out of the middleware (see _backpressure)."""
        return self._item_out(self.book.ready.popleft())

    def _item_out(self, item: Any) -> Any:
        """``item`` leaves the middleware: counted for the pages' bytes (see _backpressure)
        and for CLOSESPIDER_ITEMCOUNT (see _item_count_reached)."""
        self.book.item_out()
        return self.store.item_out(item)

    async def _backpressure(self) -> None:
        """Released pages still waiting for their items to be cleaned count against
        SST_MAX_HELD_BYTES with the held ones: past the cap, this response's processing
        waits (at most BACKPRESSURE_WAIT seconds) until the pipelines have caught
        up, so Scrapy stops handing over new responses instead of memory growing."""
        deadline = time.monotonic() + BACKPRESSURE_WAIT
        waited = False
        # checked again after each wake-up: responses waiting together must not all go
        # on at once when the pipelines free a little room
        while self.book.must_wait(self.store.out_bytes):
            left = deadline - time.monotonic()
            if left <= 0:
                self.store.inc("backpressure_timeouts")
                return
            if not waited:
                self.store.inc("backpressure_waits")
                waited = True
            await maybe_deferred_to_future(self.store.wait_out_bytes(self.book.out_room(), left))

    async def _callback_items_cleaned(self, response: Response) -> None:
        """Wait for the cleaning of items the pipelines got straight from the callback
        (``scrapy parse --pipelines``), so the run does not end before their text is in."""
        noted = self.store.callback_page(response.url)
        if noted is None or noted.clean is None or not noted.clean.running:
            return
        try:
            await maybe_deferred_to_future(noted.clean.outcome())
        except Exception:  # the pipeline reports cleaning failures itself
            pass


def _start_hold_log(crawler: Any, log_holds: Any) -> Any:
    """Every LOGSTATS_INTERVAL seconds (Scrapy's own log-stats pace), one INFO line
    while items are held: Scrapy's "scraped N items" does not count them, so without
    it a crawl that gathers samples looks stuck. Returns the LoopingCall (None: off)."""
    from twisted.internet import task

    try:
        interval = float(crawler.settings.getfloat("LOGSTATS_INTERVAL", 60.0))
    except Exception:
        interval = 60.0
    if interval <= 0:
        return None
    hold_log = task.LoopingCall(log_holds)
    hold_log.start(interval, now=False).addErrback(lambda f: logger.debug("sst: hold log stopped: %s", f.value))
    return hold_log
