"""Building a site's model once for a whole fleet: claim, then fit and publish, or load.

``build`` claims the site: the worker that gets the lock fits the model on the shared
sample (in its worker process, as usual) while renewing the lock, then publishes it; the
others wait (polling with backoff) and load the published model; a builder that dies
stops renewing, its lock expires and the next claim takes over. A bad shared model is
built again (see :mod:`~sst_cleaner.scrapy._fleet_models`).

While Redis is down a site is fitted here only on this process's complete sample, at
its hold timeout or at the end of the crawl, never because the fleet said it was ready
(every waiting worker would fit it); and a site this process saw another worker building
is not fitted here at all before SST_REDIS_WAIT from then (that worker may have fitted
it): when Redis answers again it is claimed as usual, so it is loaded, or built once
more for the fleet. Sites that got a local model meanwhile keep it, and offer it to the
fleet if it has none (``sst/redis/local_models_shared``), so after Redis comes back empty
each is built once for the fleet.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Callable

from sst_cleaner.scrapy._fleet_link import RECONNECT_SECONDS, RedisLink, sleep
from sst_cleaner.scrapy._fleet_models import FOREIGN, SharedModels
from sst_cleaner.scrapy._fleet_sample import MAX_WATCHED, SharedSamples
from sst_cleaner.scrapy._item_pages import PageRecord
from sst_cleaner.scrapy._site_models import NOT_BUILT, Built, SiteModelStore

logger = logging.getLogger(__name__)

#: a site whose shared model is rejected this many times in one build is built locally
MAX_REJECTIONS = 2


class FleetBuilder:
    """Owns the builds of site models through the fleet: the claim loop and the wait for
    another worker's build, the fit under the site's lock (published, or a published
    model loaded, through :class:`SharedModels`), the models fitted here while Redis was
    down (``unpublished``, offered to the fleet when it answers again), and the pages of
    a build that its model did not learn (``unlearnt``)."""

    def __init__(
        self,
        store: SiteModelStore,
        fit: Callable[[str, list[PageRecord]], Any],
        link: RedisLink,
        samples: SharedSamples,
        models: SharedModels,
    ):
        self.store, self.config, self.fit = store, store.config, fit  # fit: the store's own build
        self.link, self.fleet, self.redis_config = link, link.fleet, link.config
        self.samples, self.models = samples, models
        self.unlearnt: dict[str, list[PageRecord]] = {}
        self.unpublished: set[str] = set()

    def _too_few(self, pages: list) -> bool:
        return len(pages) < min(self.config.min_fit_pages, self.config.sample_pages)

    def build(self, site: str, pages: list[PageRecord], fleet_only: bool = False) -> Any:
        """A Deferred of the build's :class:`~sst_cleaner.scrapy._site_models.Built`,
        fired once the model is in the store: fitted here, loaded from the fleet
        (``ModelSource.FLEET``), or none when the fleet has too few pages for one
        (``ModelSource.NONE``).

        ``fleet_only``: the build was started by the fleet (its sample is complete, or
        its model published), not by this process's own sample, a timeout or the end of
        the crawl. If Redis is down then, the site is not fitted here on the few pages
        this process has (every worker of the fleet would fit it): none, and the
        site stays held until its own sample is complete, its hold times out, the crawl
        ends, or Redis answers again and the fleet builds it once. A site another worker
        was building: while Redis is down, its build waits for Redis to answer, up to
        SST_REDIS_WAIT from when that build was first seen, then claims it again."""
        from twisted.internet.defer import Deferred, succeed

        if self.link.down and fleet_only:
            return succeed(NOT_BUILT)
        if self.link.down and site not in self.samples.elsewhere:
            if self._too_few(pages):
                return succeed(NOT_BUILT)
            return self.fit(site, pages).addCallback(self._fitted_alone, site)
        self.samples.building(site)
        return Deferred.fromCoroutine(self._shared_build(site, pages, fleet_only))

    async def _shared_build(self, site: str, pages: list[PageRecord], fleet_only: bool) -> Built:
        token = uuid.uuid4().hex
        started = time.monotonic()
        elsewhere = self.samples.elsewhere
        # the wait for another worker's build began when it was first seen building
        deadline = elsewhere.get(site, started) + self.redis_config.wait
        delay, waited, rejections = 0.05, False, 0
        while True:
            if self.link.down:
                # Redis failed while another worker was building the site: that worker
                # may have fitted it, and each waiting worker fitting it here too would
                # make as many fits; wait for Redis (as for the build) and claim again
                if fleet_only or site not in elsewhere or not await self._answers_before(deadline):
                    break
                continue
            claimed = await self.link.attempt(self.fleet.claim, site, token)
            if claimed is None:  # Redis down or slow: see above
                continue
            state = claimed[0]
            if waited and state != "busy":  # how long another worker's build kept this site's items
                seconds = round(time.monotonic() - started, 3)
                self.store.inc("redis/wait_seconds", seconds)
                self.store.max_stat("redis/max_wait_seconds", seconds)
            if state == "lock":
                elsewhere.pop(site, None)
                logger.info("sst: building the model of site %s for the fleet", site)
                return await self._fit_and_publish(site, pages, token, took_over=waited)
            if state == "model":
                loaded = await self.models.load(site)
                if loaded == FOREIGN:
                    break  # not this crawl's kind of model: built here, and left in place
                if isinstance(loaded, Built):
                    elsewhere.pop(site, None)
                    sampled = self.samples.sampled.get(site, set())
                    self.unlearnt[site] = [p for p in pages if p.url not in sampled]
                    return loaded
                rejections += 1
                if rejections >= MAX_REJECTIONS or self.link.down:
                    break
                continue  # the bad value was dropped: claim the site to build it again
            if not waited:
                logger.info("sst: waiting for another worker to build the model of site %s", site)
                waited = True
            self.samples.mark_elsewhere(site, started)
            if time.monotonic() >= deadline:
                logger.warning(
                    "sst: waited %.0fs (SST_REDIS_WAIT) for another worker to build the "
                    "model of site %s; building it here",
                    self.redis_config.wait,
                    site,
                )
                self.store.inc("redis/wait_timeouts")
                break
            await sleep(delay)
            delay = min(delay * 2, 1.0)
        if self.link.down and fleet_only:  # Redis failed meanwhile: held on (see build)
            return NOT_BUILT
        elsewhere.pop(site, None)
        down = self.link.down
        built = NOT_BUILT if self._too_few(pages) else await self.fit(site, pages)
        return self._fitted_alone(built, site) if down else built

    async def _answers_before(self, deadline: float) -> bool:
        """Whether Redis answers again (see RedisLink.reconnect) before ``deadline``."""
        while self.link.down:
            if time.monotonic() >= deadline:
                return False
            await sleep(RECONNECT_SECONDS / 2)
        return True

    async def _fit_and_publish(self, site: str, local: list[PageRecord], token: str, took_over: bool) -> Built:
        from twisted.internet.task import LoopingCall

        if took_over:
            self.store.inc("redis/takeovers")
            logger.info(
                "sst: building the model of site %s here: the worker that held its lock let it go or expired", site
            )
        renew = LoopingCall(self._renew, site, token)
        renew.start(self.redis_config.lock_ttl / 3, now=False)
        published = False
        try:
            most = max(self.config.sample_pages, len(local))
            shared = await self.link.attempt(self.fleet.read_sample, site, most)
            pages = self._merge_pages(site, shared or [], local)
            if self._too_few(pages):
                return NOT_BUILT
            built = await self.fit(site, pages)
            fitted = {p.url for p in pages}
            self.unlearnt[site] = [p for p in local if p.url not in fitted]
            published = await self.models.publish(site, token)
            if not published and self.link.down:  # Redis failed during the fit
                self._fitted_alone(built, site)
            return built
        finally:
            if renew.running:
                renew.stop()
            if not published and not self.link.down:
                self.link.send(self.fleet.release, site, token)

    def _merge_pages(self, site: str, shared: list, local: list[PageRecord]) -> list[PageRecord]:
        """The shared sample, then this process's pages it lacks, up to the sample size
        (or all local pages, when there are more: an end-of-crawl fit uses what it has)."""
        pages, seen = [], set()
        for url, body, encoding in shared:
            if url not in seen and self.store.site_key(url) == site:  # another site's page is not evidence
                seen.add(url)
                pages.append(PageRecord(url, body, encoding, site))
        limit = max(self.config.sample_pages, len(local))
        for page in local:
            if len(pages) >= limit:
                break
            if page.url not in seen:
                seen.add(page.url)
                pages.append(page)
        return pages

    def _fitted_alone(self, built: Built, site: str) -> Built:
        """A model fitted here while Redis was down: offered to the fleet when it answers."""
        if self.store.has_model(site) and len(self.unpublished) < MAX_WATCHED:
            self.unpublished.add(site)
        return built

    async def share_local_models(self) -> None:
        """Redis answers again: publish the models fitted here meanwhile for the sites the
        fleet has none of (after an empty restart, all of them), so the other workers load
        them rather than fit the sites again. A site the fleet has a model of, or that
        another worker is building, keeps both."""
        sites, self.unpublished = sorted(self.unpublished), set()
        for site in sites:
            if self.link.down:
                return
            if not self.store.has_model(site):
                continue
            token = uuid.uuid4().hex
            state, _ = await self.link.call(self.fleet.claim, site, token)
            if state != "lock":
                continue
            if await self.models.publish(site, token):
                self.store.inc("redis/local_models_shared")
            elif not self.link.down:
                self.link.send(self.fleet.release, site, token)

    def _renew(self, site: str, token: str) -> None:
        def renewed(ok: bool) -> None:
            if not ok:
                logger.warning(
                    "sst: lost the lock of site %s while fitting it (is SST_REDIS_LOCK_TTL "
                    "shorter than a fit's pauses?)",
                    site,
                )

        self.link.call(self.fleet.renew, site, token).addCallbacks(renewed, self.link.failed)
