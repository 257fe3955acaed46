"""The item -> page map of a crawl, and the bytes of pages whose items are on their way.

The spider does not put HTML in its items: the middleware records each crawled page
(:class:`PageRecord`) and binds the items of its callback to it; the pipeline looks the
page up to clean it. A page's bytes count as released (:attr:`ItemPages.out_bytes`)
from the moment its first item leaves the middleware until its last one is through the
pipeline, so the middleware can bound the page bytes in flight.

Everything here is touched from the reactor thread only.
"""

from __future__ import annotations

from typing import Any, Callable, Optional


class PageClean:
    """The one cleaning of a page, shared by all its items: running until :meth:`done` or
    :meth:`failed`; :meth:`outcome` is a Deferred of it for each item that asks.

    A failure is kept too: cleaning is deterministic, so the page's other items (which may
    arrive later, e.g. one by one at an early close) would only fail again."""

    __slots__ = ("_waiters", "_outcome", "_error")

    def __init__(self) -> None:
        self._waiters: list = []
        self._outcome: Any = None
        self._error: Optional[BaseException] = None

    @property
    def running(self) -> bool:
        return self._outcome is None and self._error is None

    def outcome(self) -> Any:
        """A Deferred of the page's outcome (fired now if it is known)."""
        from twisted.internet import defer

        if self._error is not None:
            return defer.fail(self._error)
        if self._outcome is not None:
            return defer.succeed(self._outcome)
        waiter: defer.Deferred = defer.Deferred()
        self._waiters.append(waiter)
        return waiter

    def done(self, outcome: Any) -> None:
        self._outcome = outcome
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.callback(outcome)

    def failed(self, exc: BaseException) -> None:
        self._error = exc
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.errback(exc)


class PageRecord:
    """One crawled HTML page, as the middleware recorded it (url, raw body, encoding)."""

    __slots__ = ("url", "body", "encoding", "site", "clean", "items_out", "__weakref__")

    def __init__(self, url: str, body: bytes, encoding: Optional[str], site: str):
        self.url = url
        self.body = body
        self.encoding = encoding
        self.site = site
        self.clean: Optional[PageClean] = None  # set when its first item is cleaned
        self.items_out = 0  # items out of the middleware, not yet through the pipeline

    @property
    def size(self) -> int:
        return len(self.body)

    @property
    def fields(self) -> tuple[str, bytes, Optional[str]]:
        """(url, body, encoding): what the site operations of :mod:`sst_cleaner.scrapy._workers` take."""
        return self.url, self.body, self.encoding


class ItemPages:
    """Which page each item came from, and the released bytes with their waiters.

    ``max_stat(name, value)`` records the peak of the released bytes
    (``sst/peak_released_bytes``).
    """

    #: pages remembered by :meth:`note_callback_page` (they are in callbacks now: a few)
    CALLBACK_PAGES = 16

    def __init__(self, max_stat: Callable[[str, float], None]):
        self._max_stat = max_stat
        self._item_pages: dict[int, tuple[Any, PageRecord]] = {}
        self._callback_pages: dict[str, PageRecord] = {}
        #: bytes of pages whose items left the middleware and are not through the pipeline
        self.out_bytes = 0
        self._peak_out = 0
        # [limit, Deferred, timeout call] of each wait_out_bytes not answered yet
        self._out_waiters: list = []

    def close(self) -> None:
        """The crawl is closing: forget the items, let every waiter go."""
        self._item_pages.clear()
        self.release_out_waiters()  # nothing is cleaned any more: let them go

    # -- item -> page
    def bind(self, item: Any, page: PageRecord) -> None:
        """Remember the page an item came from (the item object itself is the key)."""
        self._item_pages[id(item)] = (item, page)

    def note_callback_page(self, page: PageRecord) -> None:
        """Remember the page whose callback is running, by URL, for items that reach the
        pipelines without passing the spider middleware (``scrapy parse --pipelines`` hands
        a callback's items to the pipelines itself). Only the latest pages are kept."""
        pages = self._callback_pages
        pages.pop(page.url, None)
        pages[page.url] = page
        while len(pages) > self.CALLBACK_PAGES:
            pages.pop(next(iter(pages)))

    def callback_page(self, url: Any) -> Optional[PageRecord]:
        """The page noted for ``url`` by :meth:`note_callback_page` (None if none)."""
        return self._callback_pages.get(url) if isinstance(url, str) else None

    def page_for(self, item: Any) -> Optional[PageRecord]:
        """Pop the page ``item`` came from (None for items that came from no HTML page)."""
        entry = self._item_pages.pop(id(item), None)
        if entry is None or entry[0] is not item:
            return None
        return entry[1]

    def peek(self, item: Any) -> Optional[PageRecord]:
        """The page ``item`` came from, left bound (None when it has none)."""
        entry = self._item_pages.get(id(item))
        return entry[1] if entry is not None and entry[0] is item else None

    def forget(self, item: Any) -> None:
        entry = self._item_pages.get(id(item))
        if entry is not None and entry[0] is item:
            del self._item_pages[id(item)]
            self.item_done(entry[1])

    # -- released pages: bytes out of the middleware, not yet cleaned
    def item_out(self, item: Any) -> Any:
        """``item`` leaves the spider middleware: its page counts in :attr:`out_bytes`
        until the item is through the pipeline (:meth:`item_done`). Returns the item."""
        entry = self._item_pages.get(id(item))
        page = entry[1] if entry is not None and entry[0] is item else None
        if isinstance(page, PageRecord):
            page.items_out += 1
            if page.items_out == 1:
                self.out_bytes += page.size
                if self.out_bytes > self._peak_out:
                    self._peak_out = self.out_bytes
                    self._max_stat("peak_released_bytes", self.out_bytes)
        return item

    def item_done(self, page: Any) -> None:
        """An item of ``page`` is through the pipeline (or dropped)."""
        if not isinstance(page, PageRecord) or page.items_out <= 0:
            return
        page.items_out -= 1
        if page.items_out == 0:
            self.out_bytes -= page.size
            if self._out_waiters:
                self._wake_out_waiters()

    def wait_out_bytes(self, limit: int, timeout: float):
        """A Deferred fired once :attr:`out_bytes` is at most ``limit``, or after
        ``timeout`` seconds, whichever comes first."""
        from twisted.internet import reactor
        from twisted.internet.defer import Deferred

        d: Deferred = Deferred()
        if self.out_bytes <= limit:
            d.callback(None)
            return d
        entry: list = [limit, d, None]
        # IReactorTime declares callLater zope-style, without self: mypy shifts the arguments by one
        entry[2] = reactor.callLater(timeout, self._out_wait_over, entry)  # type: ignore[arg-type]
        self._out_waiters.append(entry)
        return d

    def release_out_waiters(self) -> None:
        """Fire every :meth:`wait_out_bytes` Deferred now (the crawl is closing)."""
        waiters, self._out_waiters = self._out_waiters, []
        for limit, d, call in waiters:
            if call is not None and call.active():
                call.cancel()
            d.callback(None)

    def _out_wait_over(self, entry: list) -> None:
        if entry in self._out_waiters:
            self._out_waiters.remove(entry)
            entry[1].callback(None)

    def _wake_out_waiters(self) -> None:
        still = []
        for entry in self._out_waiters:
            limit, d, call = entry
            if self.out_bytes <= limit:
                if call is not None and call.active():
                    call.cancel()
                d.callback(None)
            else:
                still.append(entry)
        self._out_waiters = still
