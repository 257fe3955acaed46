"""Refining a fleet's shared site model with the pages each worker crawls after it.

Why it can be shared at all: the default method's model (and ``sentences``') is a sum
over pages (:meth:`SiteStats.merge`, the same merge ``fit(n_jobs=...)`` uses), so a
worker can learn a few of its own pages into a small model of their own (a *delta*) and
add it to the fleet's model; the result is the model of all those pages, whichever
worker saw them. Each page is learnt once for the whole fleet, the fleet's model grows
up to ``SST_MAX_MODEL_PAGES`` (a batch may end past it by less than one batch), and the
workers that merge clean with the same, latest model.

A batch is merged when it has ``SST_REDIS_MERGE_PAGES`` pages, or when its oldest page
has waited ``SST_REDIS_MERGE_SECONDS`` (a worker of a large fleet may see only a few
later pages of a site: waiting for a full batch would keep them out of the fleet's model
for the whole crawl), and at the close of the crawl every page still waiting is merged
(:meth:`FleetRefiner.flush`) before the spider closes.

Concurrency is optimistic: a worker reads the model and its version, merges, and writes
the result only if the version has not moved (a Lua compare-and-set); if it has
(``sst/redis/merge_conflicts``), it waits a moment (random, so two workers that collided
do not collide again) and reads the new one and merges again, at most ``MAX_TRIES``
times; then the batch goes back to the site's queue for the next merge (at close: it is
given up, counted in ``sst/redis/pages_not_merged``).

Methods whose models cannot be added up (``sst``, ``wisdom``, ``infodiscoverer``, ``cetd``)
keep the model the builder published, refined by each worker for itself as before.

The delta fit and the merge run in the crawl process's worker threads (not its worker
processes, whose call protocol this does not extend): one small fit per batch of
``SST_REDIS_MERGE_PAGES`` pages, and one parse and one serialisation of the site's model
per merge, for at most ``SST_MAX_MODEL_PAGES`` pages per site in the whole fleet.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.engine._registry import learns_in_shards
from sst_cleaner.scrapy._fleet_link import sleep
from sst_cleaner.scrapy._redis_store import model_json, parse_model_json

logger = logging.getLogger(__name__)

#: compare-and-set attempts per merge before its batch goes back to the queue
MAX_TRIES = 6
#: the pause after a lost compare-and-set: random up to this, doubling per attempt
CONFLICT_PAUSE = 0.2
#: pages queued per site while its merge runs (in batches), and page bytes queued for all
#: sites together: past either, a page is not learnt (sst/redis/refine_skipped)
MAX_QUEUED_BATCHES = 4
MAX_QUEUED_BYTES = 16 * 1024 * 1024


def fit_delta(method: str, params: dict, pages: list) -> dict:
    """A model of ``pages`` alone [(url, body, encoding)], as ``to_dict`` data."""
    return SiteCleaner(method, **params).fit(pages).to_dict()


def merge_into(raw: bytes, limit: int, delta: dict, max_pages: int) -> Optional[tuple]:
    """(merged cleaner, its dict, its JSON) of the fleet's model ``raw`` plus ``delta``;
    None when the fleet's model has ``max_pages`` pages already. ``raw`` is untrusted
    (checked as in :func:`~sst_cleaner.scrapy._redis_store.parse_model_json`)."""
    base = SiteCleaner.from_dict(parse_model_json(raw, limit))
    if base.n_pages >= max_pages:
        return None
    extra = SiteCleaner.from_dict(delta)
    if base.method != extra.method:
        raise ModelFormatError(f"the fleet's model was made by {base.method!r}")
    # SiteCleaner.fit merges its shards the same way (see cleaner._fit)
    base._impl.merge_shard(extra._impl.shard_state())
    data = base.to_dict()
    return base, data, model_json(data)


class FleetRefiner:
    """The merging side of a :class:`~sst_cleaner.scrapy._fleet.SharedSiteModelStore`."""

    def __init__(self, store: Any):
        self.store = store
        self.batch = store.redis_config.merge_pages
        self.wait = store.redis_config.merge_seconds
        self.enabled = self.batch > 0 and learns_in_shards(store.config.method)
        self._sites: set[str] = set()  # sites whose model is the fleet's
        self._pending: dict[str, list] = {}  # site -> page fields waiting for a merge
        self._since: dict[str, float] = {}  # site -> when its oldest waiting page came
        self._queued_bytes = 0
        self._merging: dict[str, Any] = {}  # site -> the Deferred of its running merge
        self._full: set[str] = set()
        self._closing = False

    def adopt(self, site: str) -> None:
        """``site``'s model is now the fleet's (published here, or loaded)."""
        if self.enabled:
            self._sites.add(site)

    def wants(self, site: str) -> bool:
        return site in self._sites and site not in self._full and not self.store.down

    def add(self, site: str, fields: tuple) -> None:
        """Queue a page for the fleet's model; a batch is merged when complete (or when
        it has waited long enough, see :meth:`tick`)."""
        pending = self._pending.setdefault(site, [])
        size = len(fields[1])
        if len(pending) >= MAX_QUEUED_BATCHES * self.batch or self._queued_bytes + size > MAX_QUEUED_BYTES:
            self.store.inc("redis/refine_skipped")  # merges fall behind the crawl
            return
        if not pending:
            self._since[site] = time.monotonic()
        pending.append(fields)
        self._queued_bytes += size
        if len(pending) >= self.batch and site not in self._merging:
            self._start(site)

    def tick(self) -> None:
        """Merge the batches that waited ``SST_REDIS_MERGE_SECONDS`` (called by the store's
        poll, on the reactor thread)."""
        if not self._pending or self.store.down:
            return
        due = time.monotonic() - self.wait
        for site, pages in list(self._pending.items()):
            if pages and site not in self._merging and self._since.get(site, 0.0) <= due and self.wants(site):
                self._start(site)

    async def flush(self) -> None:
        """The close of the crawl: merge every page still waiting, after the merges that
        are running; what cannot be merged (Redis down, conflicts) is counted in
        ``sst/redis/pages_not_merged``."""
        from twisted.internet.defer import DeferredList

        self._closing = True
        while self._merging or any(self._pending.values()):
            for site, pages in list(self._pending.items()):
                if pages and site not in self._merging:
                    if self.wants(site):
                        self._start(site)
                    else:  # full, or Redis is down: nothing more will reach the fleet's model
                        self._drop(site)
            if not self._merging:
                break
            # a DeferredList leaves each merge's result as it was (this runs as Deferred.fromCoroutine)
            await DeferredList(list(self._merging.values()))

    def _take(self, site: str) -> list:
        """Every page queued for ``site``, off the queue."""
        pages = self._pending.pop(site, [])
        self._since.pop(site, None)
        self._queued_bytes -= sum(len(p[1]) for p in pages)
        return pages

    def _drop(self, site: str) -> None:
        pages = self._take(site)
        if pages and site not in self._full:
            self.store.inc("redis/pages_not_merged", len(pages))

    def _start(self, site: str) -> None:
        from twisted.internet.defer import Deferred

        pages = self._take(site)  # every queued page: one merge

        def failed(failure: Any) -> None:
            logger.warning(
                "sst: merging %d pages into the fleet's model of site %s failed: %s", len(pages), site, failure.value
            )
            self.store.inc("redis/merge_errors")
            self.store.inc("redis/pages_not_merged", len(pages))

        def done(_: Any) -> None:
            self._merging.pop(site, None)
            if len(self._pending.get(site, ())) >= self.batch and self.wants(site) and not self._closing:
                self._start(site)

        d = Deferred.fromCoroutine(self._merge(site, pages))
        self._merging[site] = d
        d.addErrback(failed).addBoth(done)

    def _requeue(self, site: str, pages: list) -> None:
        """Put a batch that lost every compare-and-set back in front of the site's queue:
        the next merge (on the timer, or at close) takes it with the pages that came since."""
        if self._closing:
            self.store.inc("redis/pages_not_merged", len(pages))
            return
        pending = self._pending.setdefault(site, [])
        if not pending:
            self._since[site] = time.monotonic()
        pending[:0] = pages
        self._queued_bytes += sum(len(p[1]) for p in pages)

    async def _merge(self, site: str, pages: list) -> None:
        store, cfg = self.store, self.store.config
        delta = await store.run(fit_delta, cfg.method, cfg.params, pages)
        for attempt in range(MAX_TRIES):
            merged = await self._merge_once(site, pages, delta)
            if merged is not None:
                if not merged:
                    store.inc("redis/pages_not_merged", len(pages))
                return
            store.inc("redis/merge_conflicts")  # another worker merged first: again, a moment later
            await sleep(random.uniform(0.0, CONFLICT_PAUSE * (2**attempt)))
        logger.info(
            "sst: %d pages of site %s lost %d compare-and-sets of the fleet's model in a row; merging them later",
            len(pages),
            site,
            MAX_TRIES,
        )
        self._requeue(site, pages)

    async def _merge_once(self, site: str, pages: list, delta: dict) -> Optional[bool]:
        """One read, merge and compare-and-set of the fleet's model: True when the pages
        are in it (or it is full), False when they cannot be merged (Redis down, no
        model to merge into), None when another worker replaced it meanwhile."""
        store, cfg, link = self.store, self.store.config, self.store.link
        if store.down:
            return False
        try:
            raw, version = await link.call(store.fleet.read_model, site)
        except ModelFormatError as exc:  # the build path rejects and rebuilds it
            logger.info("sst: not merging into the fleet's model of site %s: %s", site, exc)
            return False
        except Exception as exc:
            link.failed(exc)
            return False
        if raw is None:  # expired or dropped: nothing to merge into
            return False
        merged = await store.run(merge_into, raw, store.redis_config.max_model_bytes, delta, cfg.max_model_pages)
        if merged is None:
            self._full.add(site)
            return True
        cleaner, data, blob = merged
        new = await link.attempt(store.fleet.replace_model, site, version, blob, cleaner.n_pages, store.worker_id)
        if new is None:  # Redis failed
            return False
        if not new:  # another worker replaced it first
            return None
        store.adopt_model(site, cleaner, data)
        store.inc("redis/merges")
        store.inc("redis/pages_merged", len(pages))
        logger.debug(
            "sst: merged %d pages into the fleet's model of site %s (version %d, %d pages)",
            len(pages),
            site,
            new,
            cleaner.n_pages,
        )
        if cleaner.n_pages >= cfg.max_model_pages:
            self._full.add(site)
        return True
