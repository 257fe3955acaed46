"""Getting held items out when no response will carry them: the spider went idle, or
the crawl is closing.

Held items are outside the engine's view, so Scrapy would close an idle spider with
them still held. When the spider goes idle a local ``data:`` request is scheduled
(``DontCloseSpider``) whose output carries everything still held, fitted with what each
site has. Where that request cannot run (it failed, the scheduler dropped it, or the
queue is shared with other processes that would pop it) the held items are handed to
the engine scraper's item path directly. When the crawl is closed early (CLOSESPIDER_*,
Ctrl-C, ``crawler.stop()``) a hook on the scraper's close does the same before the item
pipelines close (see :mod:`sst_cleaner.scrapy._compat`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro

from sst_cleaner.scrapy._compat import engine_scraper, hook_scraper_close, shared_queue, start_itemproc
from sst_cleaner.scrapy._holds import HoldBook

if TYPE_CHECKING:
    from sst_cleaner.scrapy._crawl_state import ErrorReporter
    from sst_cleaner.scrapy._site_models import SiteModelStore

# the flush log lines keep the logger name they were always written under (Scrapy prints
# it, and a crawl's logging settings may select it)
logger = logging.getLogger("sst_cleaner.scrapy._middleware")

FLUSH_META = "sst_flush"
FLUSH_URL = "data:,sst-flush"


def _noop_callback(response: Response) -> list:
    """Callback of the flush request: the middleware itself yields the released items."""
    return []


class HeldItemsFlush:
    """The flush request, the direct hand-over to the scraper and the close hook.

    ``release_everything`` fits every held site with what it has and releases its items
    into ``book.ready``; ``pop_ready`` hands out the next released item.
    """

    def __init__(
        self,
        crawler: Any,
        book: HoldBook,
        store: SiteModelStore,
        errors: ErrorReporter,
        release_everything: Callable[[], Awaitable[None]],
        pop_ready: Callable[[], Any],
    ):
        self.crawler = crawler
        self.book = book
        self.store = store
        self.errors = errors
        self._release_everything = release_everything
        self._pop_ready = pop_ready
        self.scheduled = False  # a flush request is out
        self.direct = False  # a direct hand-over to the scraper is running
        # request_dropped is listened to only while a flush request is out: the dupefilter
        # sends it for every duplicate link, and a receiver makes each of those cost
        self._listening_drops = False

    def spider_idle(self) -> None:
        """Items are held outside the engine's view: keep the spider open until they are out."""
        if not self.book.pending():
            return
        if not self.scheduled and not self.direct and shared_queue(self.crawler):
            # the flush request would go to a queue other processes pop: hand over directly
            scraper = engine_scraper(self.crawler)
            if scraper is not None:
                deferred_from_coro(self.to_scraper(scraper, closing=False)).addErrback(
                    lambda f: logger.error("sst: direct hand-over of held items failed: %s", f.value)
                )
        elif not self.scheduled and not self.direct:
            self.scheduled = True
            self._listen_drops(True)
            self.store.inc("flushes")
            request = Request(
                FLUSH_URL,
                callback=_noop_callback,
                errback=self._failed,
                dont_filter=True,
                priority=1_000_000,
                meta={FLUSH_META: True, "allow_offsite": True, "dont_cache": True},
            )
            self.crawler.engine.crawl(request)
        raise DontCloseSpider("sst-cleaner: releasing held items")

    async def output(self, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The output of the flush request: everything still held, fitted with what each
        site has."""
        async for out in result:  # the no-op callback; anything else passes on
            yield out
        self.scheduled = False
        self._listen_drops(False)
        await self._release_everything()
        while self.book.ready:
            yield self._pop_ready()

    def _failed(self, failure: Any) -> None:
        """The flush request failed (a downloader middleware refused it...): hand the
        held items to the scraper directly instead, or the spider would never close."""
        logger.warning(
            "sst: flush request failed (%s); sending held items to the pipelines directly",
            getattr(failure, "value", failure),
        )
        self.scheduled = False
        self._listen_drops(False)
        scraper = engine_scraper(self.crawler)
        if scraper is not None and not self.direct:
            d = deferred_from_coro(self.to_scraper(scraper, closing=False))
            d.addErrback(lambda f: logger.error("sst: direct hand-over of held items failed: %s", f.value))

    def _listen_drops(self, on: bool) -> None:
        if on != self._listening_drops:
            self._listening_drops = on
            (self.crawler.signals.connect if on else self.crawler.signals.disconnect)(
                self._request_dropped, signal=signals.request_dropped
            )

    def _request_dropped(self, request: Any = None, **kwargs: Any) -> None:
        if request is not None and request.meta.get(FLUSH_META):
            self._failed("the scheduler dropped the flush request")

    # -- early close -------------------------------------------------------------------------
    def install_close_hook(self) -> None:
        scraper = engine_scraper(self.crawler)
        if scraper is None:
            logger.warning("sst: cannot hook the scraper; items held at an early close may be lost")
            return
        hook_scraper_close(scraper, lambda: self.to_scraper(scraper))

    async def to_scraper(self, scraper: Any, closing: bool = True) -> None:
        """Send every held item through the scraper's item path (the spider is closing,
        or the flush request could not run)."""
        if closing:
            self.book.closing = True
            self.store.release_out_waiters()  # responses waiting for room go on now
        if not self.book.pending():
            return
        self.direct = True
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
            self.direct = False
        if closing:
            self.store.inc("items_flushed_at_close", n)
        logger.info("sst: %d held items sent to the item pipelines directly", n)
