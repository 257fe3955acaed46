"""The hold book: which sites are held (no model yet), their sample pages, the items
waiting for their model, the bounds on all of it, and the decisions that follow from it.

Plain Python, no Scrapy or Twisted, so every decision about holding can be tested with
fake pages and a fake clock: whether a page's items are held, whether a site is fitted
now and on which pages (a full sample, a timeout, the end of the crawl), which holds are
evicted past a cap, when CLOSESPIDER_ITEMCOUNT is reached, when a response must wait
for the pipelines (back-pressure) and whether a page may still refine its site's model.
:class:`~sst_cleaner.scrapy._middleware.SSTSpiderMiddleware` and
:class:`~sst_cleaner.scrapy._builds.SiteBuilds` carry these decisions out: fits,
Deferreds and the spider output stay there. The book counts into the store's stats
(``inc`` / ``max_stat``) and is told the time by ``clock``.

Bounds: held items and the bytes of pages kept only because a site is held are capped
(SST_MAX_HELD_ITEMS / SST_MAX_HELD_BYTES). Past a cap the site held longest is *evicted*:
its items are released (cleaned by the page-level fallback) and its sample pages dropped.
A site being fitted keeps its sample (the fit is reading it) and is evicted last, and
then only of what it gathered during the fit.
"""

from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Protocol, TypeVar

if TYPE_CHECKING:
    from sst_cleaner.scrapy._site_models import PageRecord

T = TypeVar("T")


class Stats(Protocol):
    """What the book needs of the store: its ``sst/*`` counters."""

    def inc(self, key: str, count: float = 1) -> None: ...

    def max_stat(self, key: str, value: float) -> None: ...


class ItemCount(NamedTuple):
    """What :meth:`HoldBook.check_item_count` decided."""

    just_reached: bool  # the count is reached now, the first time: close the crawl
    release: bool  # items are held: fit their sites with what they have and release them


class _SiteHold:
    """A site without a model yet: its sample pages and the items waiting for the model."""

    __slots__ = ("site", "pages", "page_ids", "items", "since", "building", "bytes", "waiters", "late")

    def __init__(self, site: str, since: float):
        self.site = site
        self.pages: list[PageRecord] = []
        self.page_ids: set[int] = set()
        self.items: list[Any] = []
        self.since = since
        self.building = False
        self.bytes = 0  # bytes of pages kept only because of this hold
        self.waiters: list[Any] = []  # the middleware's Deferreds, fired when a running fit ends
        # pages the fit does not see (they came during it, or past a full sample): learnt
        # after it, or a re-crawl with the saved model would learn them and clean otherwise
        self.late: list[PageRecord] = []


class HoldBook:
    """The holds of one crawl, the items they released, and their counters and caps."""

    def __init__(
        self,
        stats: Stats,
        *,
        sample_pages: int,
        max_held_items: int,
        max_held_bytes: int,
        hold_timeout: float,
        on_sample_page: Optional[Callable[[str, PageRecord], None]] = None,
        clock: Callable[[], float] = time.monotonic,
        min_fit_pages: int = 1,
        fit_small_samples: bool = False,
        item_count: int = 0,
    ):
        self.stats = stats
        self.sample_pages = sample_pages
        self.max_held_items = max_held_items
        self.max_held_bytes = max_held_bytes
        self.hold_timeout = hold_timeout
        # told of each page a site's sample gains outside a fit (a fleet's shared sample)
        self.on_sample_page = on_sample_page
        self.clock = clock
        self.holds: dict[str, _SiteHold] = {}
        self.ready: collections.deque = collections.deque()  # released, not yet handed out
        self.held_items = 0
        self.held_bytes = 0
        self._peaks = (-1, -1)  # the peaks already written to the stats
        self.min_fit_pages = min_fit_pages
        # a fleet's store fits on the fleet's sample, so a small local one is no reason
        # to give the site up
        self.fit_small_samples = fit_small_samples
        self.failed: set[str] = set()  # sites whose fit raised: not held again
        self.closing = False  # the spider is closing: nothing new is held
        self.item_count = item_count  # CLOSESPIDER_ITEMCOUNT (0: none)
        self.items_out = 0  # items handed on, minus those the pipelines dropped since
        self.count_reached = False  # from then on, nothing is held

    # -- holds -------------------------------------------------------------------------------
    def get(self, site: str) -> Optional[_SiteHold]:
        return self.holds.get(site)

    def accepting(self) -> bool:
        """Whether a page may still be held: not once the spider is closing or the item
        count is reached (what is held then is fitted with what it has and released)."""
        return not self.closing and not self.count_reached

    def hold_for(self, site: str, has_model: bool) -> Optional[_SiteHold]:
        """The hold a page of ``site`` joins: the site's current hold, or a new one unless
        the site has a model or its fit failed (None: the page's items pass on)."""
        hold = self.holds.get(site)
        if hold is None and site not in self.failed and not has_model:
            hold = self.open(site)
        return hold

    def open(self, site: str) -> _SiteHold:
        """Start holding ``site`` (it has no hold yet)."""
        hold = self.holds[site] = _SiteHold(site, self.clock())
        return hold

    def is_current(self, hold: _SiteHold) -> bool:
        """Whether ``hold`` is still its site's hold (not dropped or evicted meanwhile)."""
        return self.holds.get(hold.site) is hold

    def sample_complete(self, hold: _SiteHold) -> bool:
        """Whether ``hold`` is current, not being fitted, and has its whole sample."""
        return not hold.building and self.is_current(hold) and len(hold.pages) >= self.sample_pages

    def pending(self) -> int:
        """Items held or released but not yet handed out."""
        return self.held_items + len(self.ready)

    def add_sample_page(self, hold: _SiteHold, page: PageRecord) -> None:
        """Count ``page`` against ``hold`` (once), and keep it in the sample while there is room."""
        if id(page) in hold.page_ids:
            return
        hold.page_ids.add(id(page))
        if hold.building or len(hold.pages) >= self.sample_pages:
            hold.late.append(page)
        if len(hold.pages) < self.sample_pages:  # during a fit too: it may end without a model
            hold.pages.append(page)
        if self.on_sample_page is not None and not hold.building:
            self.on_sample_page(hold.site, page)
        hold.bytes += page.size
        self.held_bytes += page.size

    def hold_item(self, hold: _SiteHold, item: Any) -> None:
        hold.items.append(item)
        self.held_items += 1
        self.stats.inc("items_held")

    # -- builds ------------------------------------------------------------------------------
    def begin_build(self, hold: _SiteHold) -> Optional[list[PageRecord]]:
        """Decide whether ``hold``'s site is fitted now: the pages to fit it on, or None
        when they are too few to learn a template from (the hold is dropped and its items
        released to the page-level fallback).

        The hold is marked ``building`` here, synchronously, so no other response can
        start a second fit of the same site or evict its sample in the meantime.
        """
        pages = list(hold.pages)
        if len(pages) < min(self.min_fit_pages, self.sample_pages) and not self.fit_small_samples:
            self.drop_hold(hold)
            return None
        hold.building = True
        return pages

    def build_failed(self, hold: _SiteHold) -> tuple[list[Any], list[PageRecord]]:
        """``hold``'s fit raised: the site is not held again (its pages would fail the
        same way); otherwise as :meth:`fit_ended`."""
        self.failed.add(hold.site)
        return self.fit_ended(hold)

    # -- release -----------------------------------------------------------------------------
    def release(self, hold: _SiteHold, items: list[Any]) -> None:
        self.ready.extend(items)
        self.held_items -= len(items)
        self.stats.inc("items_released", len(items))

    def drop_hold(self, hold: _SiteHold) -> None:
        """Release all items of a hold and forget its pages."""
        self.release(hold, hold.items)
        hold.items = []
        self.held_bytes -= hold.bytes
        hold.bytes = 0
        if self.holds.get(hold.site) is hold:
            del self.holds[hold.site]

    def fit_ended(self, hold: _SiteHold) -> tuple[list[Any], list[PageRecord]]:
        """``hold``'s fit ended (with a model or not): release its items and drop it.
        Returns the waiters of the fit, for the caller to fire, and the pages the fit did
        not see, for the caller to learn from if the site has a model now."""
        hold.building = False
        self.drop_hold(hold)
        waiters, hold.waiters = hold.waiters, []
        late, hold.late = hold.late, []
        return waiters, late

    # -- bounds ------------------------------------------------------------------------------
    def within_bounds(self) -> bool:
        return self.held_items <= self.max_held_items and self.held_bytes <= self.max_held_bytes

    def enforce_bounds(self) -> None:
        """Evict holds, longest-held first, until both caps hold again.

        A hold whose model is being fitted cannot give its sample back, but the items
        and extra pages it gathered during the fit can go: they are released to the
        page-level fallback like an evicted site.
        """
        if self.within_bounds():
            self._note_peaks()
            return
        for hold in sorted(self.holds.values(), key=lambda h: (h.building, h.since)):
            if self.within_bounds():
                break
            self.stats.inc("evictions")
            if not hold.building:
                self.drop_hold(hold)
            else:
                self.release(hold, hold.items)
                hold.items = []
                hold.late = []
                sample_bytes = sum(p.size for p in hold.pages)
                self.held_bytes -= hold.bytes - sample_bytes
                hold.bytes = sample_bytes
        self._note_peaks()

    def _note_peaks(self) -> None:
        peak_bytes, peak_items = self._peaks
        if self.held_bytes > peak_bytes or self.held_items > peak_items:
            self._peaks = (max(peak_bytes, self.held_bytes), max(peak_items, self.held_items))
            self.stats.max_stat("peak_held_bytes", self.held_bytes)
            self.stats.max_stat("peak_held_items", self.held_items)

    def check_timeouts(self, fit: Callable[[_SiteHold], T]) -> list[T]:
        """Call ``fit`` on every site held longer than SST_HOLD_TIMEOUT (to fit it with the
        pages it has); returns what the calls returned."""
        now = self.clock()
        fits = []
        for hold in list(self.holds.values()):
            if not hold.building and hold.items and now - hold.since >= self.hold_timeout:
                self.stats.inc("hold_timeouts")
                fits.append(fit(hold))
        return fits

    # -- CLOSESPIDER_ITEMCOUNT ---------------------------------------------------------------
    def item_out(self) -> None:
        """An item left the middleware (held ones are counted while held)."""
        self.items_out += 1

    def item_gone(self) -> None:
        """An item was dropped or failed in the pipelines: Scrapy does not count it."""
        self.items_out -= 1

    def check_item_count(self, scraped: int) -> ItemCount:
        """Whether the items handed on and held together reach CLOSESPIDER_ITEMCOUNT.

        Scrapy counts an item when it is through the item pipelines (``scraped``) and
        closes the crawl at the count; the responses already downloaded still deliver
        their items (one concurrency window). With the add-on an item takes longer to
        get through: it may be held until its site has a model, and the pipeline waits
        for its cleaning. Had the add-on left the count to Scrapy, the crawl would go on
        downloading (and holding) pages all that while, and deliver far more items than
        without the add-on. So an item counts when it leaves the middleware or is held,
        minus the items the pipelines dropped; when the count is reached the caller
        closes the crawl with Scrapy's reason, held sites are fitted with what they have
        and their items released, and later items are not held.
        """
        if not self.item_count or max(scraped, self.items_out) + self.held_items < self.item_count:
            return ItemCount(False, False)
        first = not self.count_reached
        self.count_reached = True
        return ItemCount(first, bool(self.held_items))

    # -- back-pressure -----------------------------------------------------------------------
    def must_wait(self, out_bytes: int) -> bool:
        """Whether a response waits before its items go out: the pages released but not
        yet cleaned by the pipelines (``out_bytes``) count against SST_MAX_HELD_BYTES
        with the held ones, until the spider closes."""
        return not self.closing and out_bytes > 0 and out_bytes + self.held_bytes > self.max_held_bytes

    def out_room(self) -> int:
        """How many bytes of released pages fit under SST_MAX_HELD_BYTES beside the held ones."""
        return max(0, self.max_held_bytes - self.held_bytes)

    # -- progress ----------------------------------------------------------------------------
    def status(self) -> tuple[int, int, int, float]:
        """(held items, held sites, sites gathering their sample, age in seconds of the
        oldest hold with items), for the middleware's periodic log line."""
        oldest = max((self.clock() - h.since for h in self.holds.values() if h.items), default=0.0)
        gathering = sum(1 for h in self.holds.values() if not h.building)
        return self.held_items, len(self.holds), gathering, oldest


class RefineQueue:
    """Refinements asked for per site and not yet done, so a site's model is not sent
    more pages than SST_MAX_MODEL_PAGES allows while earlier ones are still in flight."""

    def __init__(self, max_model_pages: int):
        self.max_model_pages = max_model_pages
        self._queued: dict[str, int] = {}

    def take(self, site: str, model_pages: int) -> bool:
        """Whether one more page may refine ``site``'s model of ``model_pages`` pages
        (counted as queued when it may)."""
        queued = self._queued.get(site, 0)
        if model_pages + queued >= self.max_model_pages:
            return False
        self._queued[site] = queued + 1
        return True

    def done(self, site: str) -> None:
        self._queued[site] -= 1
