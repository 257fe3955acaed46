"""A site model store shared by a fleet of crawl processes through Redis (``SST_MODEL_STORE``).

:class:`SharedSiteModelStore` is the in-process :class:`~sst_cleaner.scrapy._site_models.SiteModelStore`
plus a Redis side (:mod:`sst_cleaner.scrapy._redis_store`), for crawls that run as many Scrapy
processes (e.g. scrapy-redis workers) over the same sites. It wires up one part per concern:

* :mod:`~sst_cleaner.scrapy._fleet_link`: the Redis calls, off the reactor thread; the
  first failure switches the crawl to local models until Redis answers again;
* :mod:`~sst_cleaner.scrapy._fleet_sample`: sample pages shared, so a site's sample fills
  at the fleet's speed, and the middleware told (``set_listener``) when it is complete;
* :mod:`~sst_cleaner.scrapy._fleet_build`: each site's model built once for the fleet
  (claimed, fitted and published by one worker, loaded by the others), and the models
  themselves, untrusted when read, in :mod:`~sst_cleaner.scrapy._fleet_models`;
* :mod:`~sst_cleaner.scrapy._fleet_held`: the pages whose items a worker holds, recorded
  in Redis so that a live worker crawls them again if it dies;
* :mod:`~sst_cleaner.scrapy._fleet_refine`: later pages merged into the fleet's model when
  the method's models add up (the default method's); otherwise each process refines its
  own copy (``partial_fit``), as a single-process crawl does.

Items are held and released by the middleware as always, so none is lost or doubled
whatever Redis does. "Later pages" include the pages this process held for the site
that the fleet's model has not seen (they came after the shared sample was complete, or
it had no room for them): :meth:`SharedSiteModelStore.unlearnt` gives them to the
middleware once the model is in. Pages still waiting for a merge when the crawl ends are
merged before the spider closes (:meth:`SharedSiteModelStore.finish`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from typing import Any, Callable, Optional

from sst_cleaner.scrapy._fleet_build import FleetBuilder
from sst_cleaner.scrapy._fleet_held import HeldPages
from sst_cleaner.scrapy._fleet_link import RedisLink
from sst_cleaner.scrapy._fleet_models import SharedModels
from sst_cleaner.scrapy._fleet_refine import FleetRefiner
from sst_cleaner.scrapy._fleet_sample import POLL_SECONDS, SharedSamples
from sst_cleaner.scrapy._redact import redact_url
from sst_cleaner.scrapy._redis_store import ModelIdentity, RedisFleet
from sst_cleaner.scrapy._settings import RedisConfig, SSTConfig, load_redis_config
from sst_cleaner.scrapy._site_models import PageRecord, SiteModelStore

logger = logging.getLogger(__name__)


class SharedSiteModelStore(SiteModelStore):
    """Site models of one crawl process, learnt once per site for the whole fleet: the
    local store, with the fleet's parts (``link``, ``samples``, ``builder``, ``models``,
    ``refiner``, ``held``) wired to it and to each other, and the poll that drives them."""

    shared = True

    def __init__(
        self,
        config: SSTConfig,
        stats: Any = None,
        settings: Any = None,
        fleet: Optional[RedisFleet] = None,
        spider: Optional[str] = None,
    ):
        super().__init__(config, stats)
        redis_config = load_redis_config(settings, spider) if fleet is None else fleet.config
        if redis_config is None:
            raise ValueError("SharedSiteModelStore needs SST_MODEL_STORE")
        self.redis_config: RedisConfig = redis_config
        identity = ModelIdentity.of(config.method, config.params, config.sample_pages)
        self.fleet = fleet if fleet is not None else RedisFleet(self.redis_config, identity=identity)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        # this process's held pages in Redis: a new one per run, so a restarted worker
        # with the same pid recovers its dead predecessor's pages
        self.incarnation = hashlib.sha1(f"{self.worker_id}:{uuid.uuid4().hex}".encode()).hexdigest()[:16]
        self.link = RedisLink(self.fleet, self.dispatch.deferred, self.inc, self._redis_down, self._redis_back)
        self.samples = SharedSamples(self.link, config.sample_pages, self.has_model, self.inc)
        self.refiner = FleetRefiner(self)
        self.models = SharedModels(self, self.link, self.refiner, self.worker_id)
        self.builder = FleetBuilder(self, super().build, self.link, self.samples, self.models)
        self.held = HeldPages(self.link, config, self.incarnation, self.inc)
        self._poller: Any = None
        # the parts' methods the middleware and the refiner call on the store
        self.sample_added = self.samples.added
        self.record_page = self.held.record_page
        self.note_item = self.held.note_item
        self.page_parsed = self.held.page_parsed
        self.watch_items = self.held.watch_items
        self.adopt_model = self.models.adopt_model

    @property
    def down(self) -> bool:
        """Whether Redis failed and the crawl went on with local models."""
        return self.link.down

    def _redis_down(self) -> None:
        self.samples.stop_polling()

    def _redis_back(self) -> None:
        self.held.release_unreleased()
        if self.builder.unpublished:
            self.link.start(self.builder.share_local_models())

    # -- lifecycle
    def open(self) -> None:
        from twisted.internet.task import LoopingCall

        super().open()
        if self._poller is not None:  # opened already (the middleware and the pipeline both open it)
            return
        logger.info(
            "sst: site models shared through Redis at %s (prefix %r, namespace %r)",
            redact_url(self.redis_config.url),
            self.redis_config.prefix,
            self.redis_config.namespace,
        )
        self._poller = LoopingCall(self._poll)
        self._poller.start(POLL_SECONDS, now=False).addErrback(
            lambda f: logger.error("sst: polling the shared store stopped: %s", self.link.said(f.value))
        )

    def _poll(self) -> None:
        """Drive the parts: while Redis is down, see whether it is back; else renew the
        heartbeat, merge the batches due and check the sites waiting for the fleet."""
        if self.link.down:
            self.link.reconnect()
            return
        self.held.beat()
        self.refiner.tick()
        self.samples.poll()

    def close(self) -> None:
        try:
            if self._poller is not None and self._poller.running:
                self._poller.stop()
            if self.link.down:
                self.link.count_local_time()
            self.held.close()
            super().close()
        finally:
            self.link.close()

    def finish(self) -> Any:
        """The close of the crawl, before :meth:`close`: a Deferred fired once the pages
        still waiting to be merged into the fleet's models are merged (None: none wait)."""
        if not self.refiner.enabled:
            return None
        from twisted.internet.defer import Deferred

        said = self.link.said
        return Deferred.fromCoroutine(self.refiner.flush()).addErrback(
            lambda f: logger.warning("sst: merging the last pages into the fleet's models failed: %s", said(f.value))
        )

    def set_listener(self, listener: Callable[[str], None]) -> None:
        """``listener(site)`` is called (reactor thread) when the fleet is ready to give
        ``site`` a model: its shared sample is complete or its model is published."""
        self.samples.listener = listener

    def set_rescheduler(self, rescheduler: Callable[[bytes], None]) -> None:
        """``rescheduler(record)`` schedules a dead worker's held page again (reactor thread)."""
        self.held.rescheduler = rescheduler

    # -- models
    def build(self, site: str, pages: list[PageRecord], fleet_only: bool = False) -> Any:
        """Through the fleet: see :meth:`FleetBuilder.build <sst_cleaner.scrapy._fleet_build.FleetBuilder.build>`."""
        return self.builder.build(site, pages, fleet_only)

    def unlearnt(self, site: str) -> list[PageRecord]:
        """The pages this process held for ``site`` that the model it now has did not
        learn (the fleet's sample was complete without them): the middleware refines the
        model with them, as with any later page. Asked once, when the site's build ends."""
        self.samples.sampled.pop(site, None)
        return self.builder.unlearnt.pop(site, [])

    def refine(self, site: str, page: PageRecord) -> Any:
        """Learn a later page of ``site``: into the fleet's model when it can merge (see
        :mod:`sst_cleaner.scrapy._fleet_refine`), else into this process's copy."""
        if self.refiner.wants(site):
            from twisted.internet.defer import succeed

            self.refiner.add(site, page.fields)
            return succeed(None)
        return super().refine(site, page)
