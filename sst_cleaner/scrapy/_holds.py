"""The hold book: which sites are held (no model yet), their sample pages, the items
waiting for their model, and the bounds on all of it.

Plain Python, no Scrapy or Twisted: :class:`~sst_cleaner.scrapy._middleware.SSTSpiderMiddleware`
decides when to hold, fit and release, and keeps the book here; fits, Deferreds and the
spider output stay there. The book counts into the store's stats (``inc`` /
``max_stat``) and is told the time by ``clock``, so it can be tested with fake pages and
a fake clock.

Bounds: held items and the bytes of pages kept only because a site is held are capped
(SST_MAX_HELD_ITEMS / SST_MAX_HELD_BYTES). Past a cap the site held longest is *evicted*:
its items are released (cleaned by the page-level fallback) and its sample pages dropped.
A site being fitted keeps its sample (the fit is reading it) and is evicted last, and
then only of what it gathered during the fit.
"""

from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, TypeVar

if TYPE_CHECKING:
    from sst_cleaner.scrapy._site_models import PageRecord

T = TypeVar("T")


class Stats(Protocol):
    """What the book needs of the store: its ``sst/*`` counters."""

    def inc(self, key: str, count: float = 1) -> None: ...

    def max_stat(self, key: str, value: float) -> None: ...


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

    # -- holds -------------------------------------------------------------------------------
    def get(self, site: str) -> Optional[_SiteHold]:
        return self.holds.get(site)

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

    # -- progress ----------------------------------------------------------------------------
    def status(self) -> tuple[int, int, int, float]:
        """(held items, held sites, sites gathering their sample, age in seconds of the
        oldest hold with items), for the middleware's periodic log line."""
        oldest = max((self.clock() - h.since for h in self.holds.values() if h.items), default=0.0)
        gathering = sum(1 for h in self.holds.values() if not h.building)
        return self.held_items, len(self.holds), gathering, oldest
