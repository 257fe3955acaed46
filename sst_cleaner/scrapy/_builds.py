"""The fits and refinements of a crawl's site models, as the hold book decides them.

A held site is fitted in its worker when its sample is complete, when it has been held
longer than SST_HOLD_TIMEOUT, or at the end of the crawl; its items are released when
the fit ends, with or without a model. A site with a model is refined by its later
pages until the model has SST_MAX_MODEL_PAGES pages. The decisions (fit or not, on
which pages, refine or not) are :class:`~sst_cleaner.scrapy._holds.HoldBook`'s; this
module starts the store's calls and handles their Deferreds.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional, cast

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from sst_cleaner.scrapy._holds import HoldBook, RefineQueue, _SiteHold
from sst_cleaner.scrapy._site_models import Built, ModelSource

if TYPE_CHECKING:
    from sst_cleaner.scrapy._crawl_state import ErrorReporter
    from sst_cleaner.scrapy._fleet import SharedSiteModelStore
    from sst_cleaner.scrapy._site_models import PageRecord, SiteModelStore

# the build log lines keep the logger name they were always written under (Scrapy prints
# it, and a crawl's logging settings may select it)
logger = logging.getLogger("sst_cleaner.scrapy._middleware")


class SiteBuilds:
    """Starts the fits of held sites and the refinements of sites with a model."""

    def __init__(self, book: HoldBook, store: SiteModelStore, errors: ErrorReporter, max_model_pages: int):
        self.book = book
        self.store = store
        self.errors = errors
        # a store shared by a fleet of crawl processes (SST_MODEL_STORE, see _fleet.py)
        self.shared = bool(getattr(store, "shared", False))
        self.refines = RefineQueue(max_model_pages)

    # -- fits --------------------------------------------------------------------------------
    def sample_build(self, hold: _SiteHold) -> Optional[Deferred]:
        """Start fitting ``hold``'s site if its sample is complete (None: nothing started)."""
        if self.book.sample_complete(hold):
            return self.build(hold, reason="sample")
        return None

    def timeout_builds(self) -> list[Optional[Deferred]]:
        """Fit sites held longer than SST_HOLD_TIMEOUT with the pages they have."""
        return self.book.check_timeouts(lambda hold: self.build(hold, reason="timeout"))

    async def release_everything(self) -> None:
        """End of crawl: fit every held site with what it has, release all its items."""
        builds = [self.build(hold, reason="end") for hold in list(self.book.holds.values()) if not hold.building]
        for build in builds:
            if build is not None:
                await maybe_deferred_to_future(build)
        for hold in list(self.book.holds.values()):  # a fit started elsewhere: wait for it
            if hold.building:  # asked after each wait: a fit that ended meanwhile has no waiters left
                waiter: Deferred = Deferred()
                hold.waiters.append(waiter)
                await maybe_deferred_to_future(waiter)

    def shared_ready(self, site: str) -> None:
        """The fleet's sample of ``site`` is complete, or its model is published: build
        (or load) it now, even if this process has only a few of its pages."""
        hold = self.book.get(site)
        if hold is not None and not hold.building and not self.book.closing:
            self.build(hold, reason="fleet")

    def build(self, hold: _SiteHold, reason: str) -> Optional[Deferred]:
        """Start fitting ``hold``'s site in its worker; its items are released when
        the fit ends. Returns the Deferred to wait on (None: released at once)."""
        pages = self.book.begin_build(hold)
        if pages is None:
            return None
        if self.shared:  # a fleet's build: not fitted locally on a few pages while Redis is down
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

    def _build_done(self, built: Built, hold: _SiteHold, n_pages: int, reason: str) -> None:
        if built.source is not ModelSource.FITTED:  # the fleet's model was loaded, or there is none
            if built.source is ModelSource.NONE and reason == "fleet" and not self.book.closing:
                self._hold_on(hold)
                return
            self._fit_ended(*self.book.fit_ended(hold), site=hold.site)
            return
        seconds, share = built.seconds, built.share
        if self.shared:  # fitted on the fleet's sample, not only this process's pages
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
        self._fit_ended(*self.book.fit_ended(hold), site=hold.site)

    def _hold_on(self, hold: _SiteHold) -> None:
        """The fleet announced a model of the site that was then rejected (or expired)
        while this process had too few pages to build one: the site is held on and built
        from its own sample, or at the end of the crawl, rather than given up."""
        hold.building = False
        if hold.waiters:  # the end of the crawl is waiting on this site
            self.build(hold, reason="end")
        else:
            self.sample_build(hold)

    def _build_failed(self, failure: Failure, hold: _SiteHold, n_pages: int) -> None:
        from sst_cleaner.scrapy._site_models import FitOverBudget

        if failure.check(FitOverBudget):
            # a budget doing its job, not an error: one line per site, and a count
            self.store.inc("models_over_budget")
            logger.warning("sst: %s; the site's pages get the page-level fallback", failure.value)
        else:
            where = f"site {hold.site}, {n_pages} pages"
            self.errors.report("fit", failure.value, where, "the site's pages get the page-level fallback")
        self._fit_ended(*self.book.build_failed(hold), site=hold.site)

    def _fit_ended(self, waiters: list[Any], late: list[PageRecord], site: str) -> None:
        unlearnt = self.store.unlearnt(site)
        # the pages that came during the fit (and, in a fleet, the held pages the fleet's
        # model was fitted without) are learnt now, before their released items are
        # cleaned (the site's worker takes its calls in order): a re-crawl with the saved
        # model then has nothing new to learn, and cleans as this crawl did
        if self.store.has_model(site):
            for page in unlearnt + late:
                self.refine(page)
        for waiter in waiters:
            waiter.callback(None)

    # -- refinements -------------------------------------------------------------------------
    def refine(self, page: PageRecord) -> None:
        """Refine ``page``'s site model with it, if the site has a model with room."""
        if not self.store.has_model(page.site):
            return
        if not self.refines.take(page.site, self.store.model_pages(page.site)):
            return

        def done(result: Any) -> None:
            self.refines.done(page.site)
            if isinstance(result, Failure):
                self.errors.report(
                    "refine", result.value, f"site {page.site}, page {page.url}", "the model stays as it was"
                )
            elif result is not None:  # None: nothing added (no model, learnt already, skipped)
                self.store.inc("pages_refined")

        self.store.refine(page.site, page).addBoth(done)
