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
their counters and these bounds are kept by :class:`~sst_cleaner.scrapy._holds.HoldBook`
(plain Python); this module decides when to hold, fit and release.

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

# One module: SSTSpiderMiddleware's methods share its per-site state (held pages, models,
# fallbacks), and the error reporter and the bad-settings stand-in are what it and the
# pipeline share; the stores and the worker pool live elsewhere.

from __future__ import annotations

import collections
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Optional, cast

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from sst_cleaner.scrapy._compat import (
    close_spider,
    engine_scraper,
    hook_scraper_close,
    shared_queue,
    start_itemproc,
)
from sst_cleaner.scrapy._holds import HoldBook, _SiteHold
from sst_cleaner.scrapy._settings import component_config, load_config, store_url
from sst_cleaner.scrapy._site_models import PageRecord, SiteModelStore

if TYPE_CHECKING:
    from sst_cleaner.scrapy._fleet import SharedSiteModelStore  # imported for real only with SST_MODEL_STORE

logger = logging.getLogger(__name__)

FLUSH_META = "sst_flush"
FLUSH_URL = "data:,sst-flush"

#: seconds a response waits at most for the pipelines to clean released pages (an item
#: that never reaches them, e.g. dropped by a later spider middleware, must not stall it)
BACKPRESSURE_WAIT = 10.0

#: content types treated as HTML pages (anything else passes through untouched)
_HTML_TYPES = (b"text/html", b"application/xhtml+xml")


def _noop_callback(response: Response) -> list:
    """Callback of the flush request: the middleware itself yields the released items."""
    return []


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


class _NonHtmlPage:
    """Marker bound to items of non-HTML responses, so the pipeline can tell them
    (``sst_status = "non_html"``) from items that came from no response at all."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NON_HTML"


NON_HTML = _NonHtmlPage()


class ErrorReporter:
    """Counts the failures of one crawl per stage, and logs each distinct cause once.

    Why: one cause (a method bug, a site whose pages all trip the same parser corner)
    usually hits every page of a site, or of the crawl; one ERROR line with a traceback
    per page buries everything else in the log and costs I/O per page. So the first
    occurrence of a cause, (stage, exception type, message), is logged at ERROR with its
    traceback, later ones at DEBUG, and when the spider closes one WARNING per repeated
    cause gives its count. Every occurrence is counted in ``sst/errors`` and
    ``sst/errors/<stage>``.

    Distinct causes remembered are capped per stage (``max_causes``): messages that hold a
    URL or an offset make every failure "distinct", and memory must stay bounded; past
    the cap, new causes of that stage are logged at DEBUG and summed in the summary.
    """

    #: stage -> what failed, as the log line says it
    STAGES = {
        "record": "recording a page (site model look-up, holding)",
        "fit": "building a site model",
        "refine": "refining a site model",
        "clean": "cleaning a page",
        "write": "writing the clean fields into an item",
        "handover": "handing a held item to the item pipelines",
        "field": "an item class without the output field",
        "held_at_close": "items still held when the spider closed",
    }

    def __init__(self, stats: Any = None, max_causes: int = 50):
        self.stats = stats
        self.max_causes = max_causes
        self._causes: dict[tuple[str, str, str], list] = {}  # key -> [count, exc repr]
        self._per_stage: collections.Counter = collections.Counter()  # distinct causes kept
        self._overflow: collections.Counter = collections.Counter()  # occurrences past the cap

    def count(self, stage: str, n: int = 1) -> None:
        """Count ``n`` failures of ``stage`` without logging (the caller logs its own way)."""
        if self.stats is not None:
            self.stats.inc_value("sst/errors", n)
            self.stats.inc_value(f"sst/errors/{stage}", n)

    def report(self, stage: str, exc: BaseException, where: str = "", consequence: str = "") -> bool:
        """Count one failure; log it at ERROR if its cause is new, else at DEBUG.
        Returns whether it was logged at ERROR."""
        self.count(stage)
        message = str(exc)[:300]
        key = (stage, f"{type(exc).__module__}.{type(exc).__qualname__}", message)
        what = self.STAGES.get(stage, stage)
        entry = self._causes.get(key)
        if entry is None and self._per_stage[stage] < self.max_causes:
            self._per_stage[stage] += 1
            self._causes[key] = [1, repr(exc)[:300]]
            logger.error(
                "sst: %s failed%s: %r%s (further failures with this cause are logged "
                "at DEBUG and counted in sst/errors/%s)",
                what,
                f" ({where})" if where else "",
                exc,
                f"; {consequence}" if consequence else "",
                stage,
                exc_info=(type(exc), exc, exc.__traceback__),
            )
            return True
        if entry is None:
            self._overflow[stage] += 1
        else:
            entry[0] += 1
        logger.debug("sst: %s failed again%s: %r", what, f" ({where})" if where else "", exc)
        return False

    def summary(self) -> list[str]:
        """One line per cause seen more than once, and per stage past the cause cap."""
        lines = []
        for (stage, _, _), (n, text) in self._causes.items():
            if n > 1:
                lines.append(
                    f"sst: {self.STAGES.get(stage, stage)} failed {n} times with {text} (logged once at ERROR above)"
                )
        for stage, n in self._overflow.items():
            lines.append(
                f"sst: {self.STAGES.get(stage, stage)} failed {n} more times with causes "
                f"past the first {self.max_causes} (logged at DEBUG)"
            )
        return lines

    def log_summary(self, spider: Any = None, reason: str = "") -> None:
        for line in self.summary():
            logger.warning(line)


def get_errors(crawler: Any) -> ErrorReporter:
    """The crawl's shared :class:`ErrorReporter` (created on first use; its summary is
    logged when the spider closes)."""
    errors = getattr(crawler, "_sst_errors", None)
    if errors is None:
        errors = ErrorReporter(getattr(crawler, "stats", None))
        crawler._sst_errors = errors
        signals_ = getattr(crawler, "signals", None)
        if signals_ is not None:
            signals_.connect(errors.log_summary, signal=signals.spider_closed)
    return errors


#: the finish reason of a crawl stopped by a bad ``SST_*`` setting
BAD_SETTING_REASON = "sst_bad_setting"


class BadSettings:
    """Stands in for the middleware and the pipeline when an ``SST_*`` setting is bad.

    A component that raises while Scrapy builds it ends the crawl with an unretrieved task
    exception and a long traceback, and the command still exits 0: the cause is hard to
    find. A crawl that went on without cleaning would be worse: its items would lack their
    text. So the bad setting is one ERROR line naming it (and its valid values), and this
    stand-in stops the crawl before anything is requested: its ``process_start`` drops the
    start requests and it closes the spider when it opens (finish reason
    ``sst_bad_setting``). Items reaching it pass unchanged."""

    def __init__(self, crawler: Any, error: Exception):
        self.crawler = crawler
        self.error = error
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return
        yield  # an async generator that yields nothing

    def process_item(self, item: Any, spider: Any = None) -> Any:
        return item

    def spider_opened(self, spider: Any = None) -> None:
        close_spider(self.crawler, BAD_SETTING_REASON)


def refuse_bad_settings(crawler: Any, error: Exception) -> BadSettings:
    """The crawl's :class:`BadSettings` stand-in; its error is logged once, whichever
    component meets it first."""
    refusal = getattr(crawler, "_sst_bad_settings", None)
    if refusal is None:
        message = str(error)
        if not message.startswith("sst-cleaner:"):
            message = f"sst-cleaner: {message}"
        logger.error("%s; the crawl is stopped", message)
        refusal = crawler._sst_bad_settings = BadSettings(crawler, error)
    return refusal


class SSTSpiderMiddleware:
    """Records pages, holds items until their site has a model, releases them."""

    def __init__(self, crawler: Any):
        config = component_config(crawler.settings)
        self.crawler = crawler
        self.config = config
        self.store = get_store(crawler)
        self.errors = get_errors(crawler)
        self._flush_scheduled = False
        self._direct_flush = False  # a direct hand-over to the scraper is running
        self._closing = False
        self._refining: dict[str, int] = {}
        self._item_count = crawler.settings.getint("CLOSESPIDER_ITEMCOUNT", 0)
        self._count_reached = False  # from then on, nothing is held
        self._items_out = 0  # items this middleware handed on, minus those dropped since
        self._failed: set[str] = set()  # sites whose fit raised: not held again
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        # request_dropped is listened to only while a flush request is out: the dupefilter
        # sends it for every duplicate link, and a receiver makes each of those cost
        self._listening_drops = False
        crawler.signals.connect(self._item_gone, signal=signals.item_dropped)
        crawler.signals.connect(self._item_gone, signal=signals.item_error)
        # a store shared by a fleet of crawl processes (SST_MODEL_STORE, see _fleet.py)
        self._shared = getattr(self.store, "shared", False)
        if self._shared:
            cast("SharedSiteModelStore", self.store).set_listener(self._shared_ready)
            # a dead worker's held pages are crawled again from here (see _fleet_held.py)
            cast("SharedSiteModelStore", self.store).set_rescheduler(self._crawl_again)
            cast("SharedSiteModelStore", self.store).watch_items(crawler.signals)
        self.book = HoldBook(
            self.store,
            sample_pages=config.sample_pages,
            max_held_items=config.max_held_items,
            max_held_bytes=config.max_held_bytes,
            hold_timeout=config.hold_timeout,
            # the fleet gathers each site's sample from the pages of every process
            on_sample_page=cast("SharedSiteModelStore", self.store).sample_added if self._shared else None,
        )

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
        self._install_close_hook()
        self._start_hold_log()

    def _start_hold_log(self) -> None:
        """Every LOGSTATS_INTERVAL seconds (Scrapy's own log-stats pace), one INFO line
        while items are held: Scrapy's "scraped N items" does not count them, so without
        it a crawl that gathers samples looks stuck."""
        from twisted.internet import task

        try:
            interval = float(self.crawler.settings.getfloat("LOGSTATS_INTERVAL", 60.0))
        except Exception:
            interval = 60.0
        if interval > 0:
            self._hold_log = task.LoopingCall(self.log_holds)
            self._hold_log.start(interval, now=False).addErrback(
                lambda f: logger.debug("sst: hold log stopped: %s", f.value)
            )

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
        if not self._pending():
            return
        if not self._flush_scheduled and not self._direct_flush and shared_queue(self.crawler):
            # the flush request would go to a queue other processes pop: hand over directly
            scraper = engine_scraper(self.crawler)
            if scraper is not None:
                deferred_from_coro(self._flush_to_scraper(scraper, closing=False)).addErrback(
                    lambda f: logger.error("sst: direct hand-over of held items failed: %s", f.value)
                )
        elif not self._flush_scheduled and not self._direct_flush:
            self._flush_scheduled = True
            self._listen_drops(True)
            self.store.inc("flushes")
            request = Request(
                FLUSH_URL,
                callback=_noop_callback,
                errback=self._flush_failed,
                dont_filter=True,
                priority=1_000_000,
                meta={FLUSH_META: True, "allow_offsite": True, "dont_cache": True},
            )
            self.crawler.engine.crawl(request)
        raise DontCloseSpider("sst-cleaner: releasing held items")

    async def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        hold_log = getattr(self, "_hold_log", None)
        if hold_log is not None and hold_log.running:
            hold_log.stop()
        if self._pending():  # cannot happen unless the close hook could not be installed
            logger.error("sst: %d items were still held when the spider closed", self._pending())
            self.errors.count("held_at_close", self._pending())
        # a fleet's last refinements reach its shared models before the store closes
        # (Scrapy waits for a spider_closed handler that is a coroutine)
        finishing = self.store.finish()
        try:
            if finishing is not None:
                await maybe_deferred_to_future(finishing)
        finally:
            self.store.close()

    def _flush_failed(self, failure: Any) -> None:
        """The flush request failed (a downloader middleware refused it...): hand the
        held items to the scraper directly instead, or the spider would never close."""
        logger.warning(
            "sst: flush request failed (%s); sending held items to the pipelines directly",
            getattr(failure, "value", failure),
        )
        self._flush_scheduled = False
        self._listen_drops(False)
        scraper = engine_scraper(self.crawler)
        if scraper is not None and not self._direct_flush:
            d = deferred_from_coro(self._flush_to_scraper(scraper, closing=False))
            d.addErrback(lambda f: logger.error("sst: direct hand-over of held items failed: %s", f.value))

    def _listen_drops(self, on: bool) -> None:
        if on != self._listening_drops:
            self._listening_drops = on
            (self.crawler.signals.connect if on else self.crawler.signals.disconnect)(
                self._request_dropped, signal=signals.request_dropped
            )

    def _request_dropped(self, request: Any = None, **kwargs: Any) -> None:
        if request is not None and request.meta.get(FLUSH_META):
            self._flush_failed("the scheduler dropped the flush request")

    def _item_gone(self, item: Any = None, **kwargs: Any) -> None:
        # dropped or failed before our pipeline saw it: forget its page; and Scrapy does
        # not count it towards CLOSESPIDER_ITEMCOUNT, so neither does the middleware
        self.store.forget(item)
        self._items_out -= 1

    def _pending(self) -> int:
        return self.book.pending()

    # -- the spider input and output ---------------------------------------------------------
    def process_spider_input(self, response: Response, spider: Any = None) -> None:
        """Note the page before its callback runs: ``scrapy parse --pipelines`` sends the
        callback's items to the pipelines before this middleware sees them, and the
        pipeline finds their page by URL here (cleaned with what the site has: a
        one-page run gets the page-level fallback)."""
        if response.meta.get(FLUSH_META) or not is_html_response(response):
            return
        try:
            self.store.note_callback_page(
                PageRecord(
                    response.url, response.body, getattr(response, "encoding", None), self.store.site_key(response.url)
                )
            )
        except Exception as exc:
            self.errors.report("record", exc, f"page {response.url}", "its items are not held")

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        if response.meta.get(FLUSH_META):
            async for out in self._flush_output(result):
                yield out
            return

        await self._backpressure()  # before this page's items go out
        page, hold = await self._hold_page(response)
        # a fleet's page is recorded in Redis before its callback runs (see _fleet_held.py)
        fleet = cast("SharedSiteModelStore", self.store) if self._shared else None
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
                    self._items_out += 1
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

    async def _flush_output(self, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The output of the flush request: everything still held, fitted with what each
        site has."""
        async for out in result:  # the no-op callback; anything else passes on
            yield out
        self._flush_scheduled = False
        self._listen_drops(False)
        await self._release_everything()
        while self.book.ready:
            yield self._pop_ready()

    async def _hold_page(self, response: Response) -> tuple[Optional[PageRecord], Optional[_SiteHold]]:
        """Record the response's page; if its site has no model yet (and items are still
        held), the page joins the site's sample. Returns the page (None: not HTML) and the
        hold its items go to (None: they pass on)."""
        page: Optional[PageRecord] = None
        try:
            page = self._record_page(response)
            if page is None or self._closing or self._count_reached:
                return page, None
            loading = self.store.ensure_loaded(page.site)  # read in a thread, never here
            if loading is not None:
                await maybe_deferred_to_future(loading)
            hold = self.book.get(page.site)
            if hold is None and page.site not in self._failed and not self.store.has_model(page.site):
                hold = self.book.open(page.site)
            if hold is not None:
                self.book.add_sample_page(hold, page)
                self.book.enforce_bounds()
            return page, hold
        except Exception as exc:
            # the page's items and requests must go on whatever went wrong here: its
            # items pass unheld, cleaned by what the site has when they reach the pipeline
            self.errors.report("record", exc, f"page {response.url}", "its items are not held")
            return page, None

    def _pop_ready(self) -> Any:
        """The next released item, counted as out of the middleware (see _backpressure)."""
        return self._item_out(self.book.ready.popleft())

    def _item_out(self, item: Any) -> Any:
        """``item`` leaves the middleware: counted for the pages' bytes (see _backpressure)
        and for CLOSESPIDER_ITEMCOUNT (see _item_count_reached)."""
        self._items_out += 1
        return self.store.item_out(item)

    async def _backpressure(self) -> None:
        """Released pages still waiting for their items to be cleaned count against
        SST_MAX_HELD_BYTES with the held ones: past the cap, this response's processing
        waits (at most BACKPRESSURE_WAIT seconds) until the pipelines have caught
        up, so Scrapy stops handing over new responses instead of memory growing."""
        cap = self.config.max_held_bytes
        deadline = time.monotonic() + BACKPRESSURE_WAIT
        waited = False
        # checked again after each wake-up: responses waiting together must not all go
        # on at once when the pipelines free a little room
        while not self._closing and self.store.out_bytes > 0 and self.store.out_bytes + self.book.held_bytes > cap:
            left = deadline - time.monotonic()
            if left <= 0:
                self.store.inc("backpressure_timeouts")
                return
            if not waited:
                self.store.inc("backpressure_waits")
                waited = True
            await maybe_deferred_to_future(self.store.wait_out_bytes(max(0, cap - self.book.held_bytes), left))

    async def _callback_items_cleaned(self, response: Response) -> None:
        """Wait for the cleaning of items the pipelines got straight from the callback
        (``scrapy parse --pipelines``), so the run does not end before their text is in."""
        noted = self.store.callback_page(response.url)
        if noted is None or not isinstance(noted.clean_result, list):
            return
        waiter: Deferred = Deferred()
        noted.clean_result.append(waiter)
        try:
            await maybe_deferred_to_future(waiter)
        except Exception:  # the pipeline reports cleaning failures itself
            pass

    async def _after_page(self, page: Optional[PageRecord], hold: Optional[_SiteHold]) -> AsyncIterator[Any]:
        """After a page's output: refine or fit its site, check timeouts and caps, and
        yield the items that released."""
        if page is not None and hold is None:
            self._maybe_refine(page)
        builds = [self._start_sample_build(hold)] if hold is not None else []
        builds.extend(self._check_timeouts())
        self.book.enforce_bounds()
        for build in builds:
            if build is not None:
                await maybe_deferred_to_future(build)
        if self._item_count_reached():
            await self._release_everything()
        while self.book.ready:
            yield self._pop_ready()

    def _item_count_reached(self) -> bool:
        """Whether the items handed on and held together reach CLOSESPIDER_ITEMCOUNT; the
        first time they do, the crawl is closed as Scrapy's CloseSpider extension would.

        Scrapy counts an item when it is through the item pipelines, and closes the crawl
        at the count; the responses already downloaded still deliver their items (one
        concurrency window). With the add-on an item takes longer to get through: it may
        be held until its site has a model, and the pipeline waits for its cleaning. Had
        the add-on left the count to Scrapy, the crawl would go on downloading (and
        holding) pages all that while, and deliver far more items than without the
        add-on. So the middleware counts an item when it leaves the middleware or is
        held, minus the items the pipelines dropped, and closes the crawl itself with
        Scrapy's reason (``closespider_itemcount``) when the count is reached. Held sites
        are then fitted with what they have (or cleaned page by page) and their items
        released; later items are not held."""
        if not self._item_count:
            return False
        stats = getattr(self.crawler, "stats", None)
        scraped = stats.get_value("item_scraped_count", 0) if stats is not None else 0
        if max(scraped, self._items_out) + self.book.held_items < self._item_count:
            return False
        if not self._count_reached:
            self._count_reached = True
            logger.info(
                "sst: CLOSESPIDER_ITEMCOUNT (%d) reached, %d of the items held: closing the spider",
                self._item_count,
                self.book.held_items,
            )
            close_spider(self.crawler, "closespider_itemcount")
        return bool(self.book.held_items)

    def _start_sample_build(self, hold: _SiteHold) -> Optional[Deferred]:
        """Start fitting ``hold``'s site if its sample is complete (None: nothing started)."""
        if self.book.sample_complete(hold):
            return self._build(hold, reason="sample")
        return None

    # -- pages and holds ---------------------------------------------------------------------
    def _record_page(self, response: Response) -> Optional[PageRecord]:
        if not is_html_response(response):
            self.store.inc("non_html_responses")
            return None
        self.store.inc("pages_seen")
        encoding = getattr(response, "encoding", None)
        return PageRecord(response.url, response.body, encoding, self.store.site_key(response.url))

    def _check_timeouts(self) -> list[Optional[Deferred]]:
        """Fit sites held longer than SST_HOLD_TIMEOUT with the pages they have."""
        return self.book.check_timeouts(lambda hold: self._build(hold, reason="timeout"))

    async def _release_everything(self) -> None:
        """End of crawl: fit every held site with what it has, release all its items."""
        builds = [self._build(hold, reason="end") for hold in list(self.book.holds.values()) if not hold.building]
        for build in builds:
            if build is not None:
                await maybe_deferred_to_future(build)
        for hold in list(self.book.holds.values()):  # a fit started elsewhere: wait for it
            if hold.building:
                waiter: Deferred = Deferred()
                hold.waiters.append(waiter)
                await maybe_deferred_to_future(waiter)

    # -- models ------------------------------------------------------------------------------
    def _build(self, hold: _SiteHold, reason: str) -> Optional[Deferred]:
        """Start fitting ``hold``'s site in its worker; its items are released when
        the fit ends. Returns the Deferred to wait on (None: released at once).

        The hold is marked ``building`` here, synchronously, so no other response can
        start a second fit of the same site or evict its sample in the meantime.
        """
        cfg = self.config
        pages = list(hold.pages)
        if len(pages) < min(cfg.min_fit_pages, cfg.sample_pages) and not self._shared:
            # too little to learn a template from: page-level fallback for these items
            self.book.drop_hold(hold)
            return None
        hold.building = True
        if self._shared:  # a fleet's build: not fitted locally on a few pages while Redis is down
            d = cast("SharedSiteModelStore", self.store).build(hold.site, pages, fleet_only=reason == "fleet")
        else:
            d = self.store.build(hold.site, pages)
        d.addCallbacks(
            self._build_done,
            self._build_failed,
            callbackArgs=(hold, len(pages), reason),
            errbackArgs=(hold, len(pages)),
        )
        return d

    def _build_done(self, built: tuple, hold: _SiteHold, n_pages: int, reason: str) -> None:
        if len(built) > 2:  # a shared store loaded the fleet's model, or the fleet has none
            if built[2] == "none" and reason == "fleet" and not self._closing:
                self._hold_on(hold)
                return
            self._fit_ended(hold)
            return
        seconds, share = built
        if self._shared:  # fitted on the fleet's sample, not only this process's pages
            n_pages = self.store.model_pages(hold.site) or n_pages
        self.store.inc("models_built")
        self.store.inc("build_seconds", round(seconds, 6))
        logger.info(
            "sst: model built for site %s from %d pages in %.2fs (%s); %.0f%% of the sample's text judged template",
            hold.site,
            n_pages,
            seconds,
            reason,
            100 * share,
        )
        self._fit_ended(hold)

    def _hold_on(self, hold: _SiteHold) -> None:
        """The fleet announced a model of the site that was then rejected (or expired)
        while this process had too few pages to build one: the site is held on and built
        from its own sample, or at the end of the crawl, rather than given up."""
        hold.building = False
        if hold.waiters:  # the end of the crawl is waiting on this site
            self._build(hold, reason="end")
        else:
            self._start_sample_build(hold)

    def _fit_ended(self, hold: _SiteHold) -> None:
        waiters, late = self.book.fit_ended(hold)
        unlearnt = self.store.unlearnt(hold.site)
        # the pages that came during the fit (and, in a fleet, the held pages the fleet's
        # model was fitted without) are learnt now, before their released items are
        # cleaned (the site's worker takes its calls in order): a re-crawl with the saved
        # model then has nothing new to learn, and cleans as this crawl did
        if self.store.has_model(hold.site):
            for page in unlearnt + late:
                self._maybe_refine(page)
        for waiter in waiters:
            waiter.callback(None)

    def _build_failed(self, failure: Failure, hold: _SiteHold, n_pages: int) -> None:
        self.errors.report(
            "fit", failure.value, f"site {hold.site}, {n_pages} pages", "the site's pages get the page-level fallback"
        )
        self._failed.add(hold.site)
        self._fit_ended(hold)

    def _shared_ready(self, site: str) -> None:
        """The fleet's sample of ``site`` is complete, or its model is published: build
        (or load) it now, even if this process has only a few of its pages."""
        hold = self.book.get(site)
        if hold is not None and not hold.building and not self._closing:
            self._build(hold, reason="fleet")

    def _maybe_refine(self, page: PageRecord) -> None:
        if not self.store.has_model(page.site):
            return
        queued = self._refining.get(page.site, 0)
        if self.store.model_pages(page.site) + queued >= self.config.max_model_pages:
            return
        self._refining[page.site] = queued + 1

        def done(result: Any) -> None:
            self._refining[page.site] -= 1
            if isinstance(result, Failure):
                self.errors.report(
                    "refine", result.value, f"site {page.site}, page {page.url}", "the model stays as it was"
                )
            elif result is not None:  # None: nothing added (no model, learnt already, skipped)
                self.store.inc("pages_refined")

        self.store.refine(page.site, page).addBoth(done)

    # -- early close -------------------------------------------------------------------------
    def _install_close_hook(self) -> None:
        scraper = engine_scraper(self.crawler)
        if scraper is None:
            logger.warning("sst: cannot hook the scraper; items held at an early close may be lost")
            return
        hook_scraper_close(scraper, lambda: self._flush_to_scraper(scraper))

    async def _flush_to_scraper(self, scraper: Any, closing: bool = True) -> None:
        """Send every held item through the scraper's item path (the spider is closing,
        or the flush request could not run)."""
        if closing:
            self._closing = True
            self.store.release_out_waiters()  # responses waiting for room go on now
        if not self._pending():
            return
        self._direct_flush = True
        n = 0
        try:
            await self._release_everything()
            while self.book.ready:
                item = self._pop_ready()
                n += 1
                try:
                    await start_itemproc(scraper, item)
                except Exception as exc:  # the scraper logs pipeline errors itself
                    self.errors.report("handover", exc)
        finally:
            self._direct_flush = False
        if closing:
            self.store.inc("items_flushed_at_close", n)
        logger.info("sst: %d held items sent to the item pipelines directly", n)


def get_store(crawler: Any) -> SiteModelStore:
    """The crawl's shared :class:`SiteModelStore` (created on first use)."""
    store = getattr(crawler, "_sst_store", None)
    if store is None:
        config = load_config(crawler.settings)
        store = _make_store(config, crawler)
        crawler._sst_store = store
    return store


def _make_store(config: Any, crawler: Any) -> SiteModelStore:
    """The in-process store, or with ``SST_MODEL_STORE`` the fleet's shared one (the only
    path that imports the Redis client)."""
    if store_url(crawler.settings) is None:
        return SiteModelStore(config, crawler.stats)
    from sst_cleaner.scrapy._fleet import SharedSiteModelStore

    # the spider's name fills in the keys' namespace (SST_REDIS_NAMESPACE)
    spider = getattr(crawler.spidercls, "name", None)
    return SharedSiteModelStore(config, crawler.stats, crawler.settings, spider=spider)
