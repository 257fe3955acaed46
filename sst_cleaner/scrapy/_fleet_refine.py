"""Refining a fleet's shared site model with the pages each worker crawls after it.

Why it can be shared at all: the default method's model (and ``sentences``') is a sum
over pages (:meth:`SiteStats.merge`, the same merge ``fit(n_jobs=...)`` uses), so a
worker can learn a few of its own pages into a small model of their own (a *delta*) and
add it to the fleet's model; the result is the model of all those pages, whichever
worker saw them. Each page is learnt once for the whole fleet, the fleet's model grows
up to ``SST_MAX_MODEL_PAGES`` (a batch may end past it by less than one batch), and the
workers that merge clean with the same, latest model.

Concurrency is optimistic: a worker reads the model and its version, merges, and writes
the result only if the version has not moved (a Lua compare-and-set); if it has, it
reads the new one and merges again (at most ``MAX_TRIES`` times, then the batch is
dropped from the fleet's model, counted in ``sst/redis/merge_conflicts``).

Methods whose models cannot be added up (``sst``, ``wisdom``, ``infodiscoverer``, ``cetd``)
keep the model the builder published, refined by each worker for itself as before.

The delta fit and the merge run in the crawl process's worker threads (not its worker
processes, whose call protocol this does not extend): one small fit per batch of
``SST_REDIS_MERGE_PAGES`` pages, and one parse and one serialisation of the site's model
per merge, for at most ``SST_MAX_MODEL_PAGES`` pages per site in the whole fleet.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.engine._registry import learns_in_shards
from sst_cleaner.scrapy._redis_store import parse_model_json

logger = logging.getLogger(__name__)

#: compare-and-set attempts per batch before it is dropped from the fleet's model
MAX_TRIES = 4
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
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return base, data, blob


class FleetRefiner:
    """The merging side of a :class:`~sst_cleaner.scrapy._fleet.SharedSiteModelStore`."""

    def __init__(self, store: Any):
        self.store = store
        self.batch = store.redis_config.merge_pages
        self.enabled = self.batch > 0 and learns_in_shards(store.config.method)
        self._sites: set[str] = set()  # sites whose model is the fleet's
        self._pending: dict[str, list] = {}  # site -> page fields waiting for a merge
        self._queued_bytes = 0
        self._merging: set[str] = set()
        self._full: set[str] = set()

    def adopt(self, site: str) -> None:
        """``site``'s model is now the fleet's (published here, or loaded)."""
        if self.enabled:
            self._sites.add(site)

    def wants(self, site: str) -> bool:
        return site in self._sites and site not in self._full and not self.store.down

    def add(self, site: str, fields: tuple) -> None:
        """Queue a page for the fleet's model; a batch is merged when complete."""
        pending = self._pending.setdefault(site, [])
        size = len(fields[1])
        if len(pending) >= MAX_QUEUED_BATCHES * self.batch or self._queued_bytes + size > MAX_QUEUED_BYTES:
            self.store.inc("redis/refine_skipped")  # merges fall behind the crawl
            return
        pending.append(fields)
        self._queued_bytes += size
        if len(pending) >= self.batch and site not in self._merging:
            self._start(site)

    def _start(self, site: str) -> None:
        from twisted.internet.defer import Deferred

        pages, self._pending[site] = self._pending[site], []  # every queued page: one merge
        self._queued_bytes -= sum(len(p[1]) for p in pages)
        self._merging.add(site)

        def failed(failure: Any) -> None:
            logger.warning(
                "sst: merging %d pages into the fleet's model of site %s failed: %s", len(pages), site, failure.value
            )
            self.store.inc("redis/merge_errors")

        def done(_: Any) -> None:
            self._merging.discard(site)
            if len(self._pending.get(site, ())) >= self.batch and self.wants(site):
                self._start(site)

        Deferred.fromCoroutine(self._merge(site, pages)).addErrback(failed).addBoth(done)

    async def _merge(self, site: str, pages: list) -> None:
        store, cfg = self.store, self.store.config
        delta = await store.run(fit_delta, cfg.method, cfg.params, pages)
        for _ in range(MAX_TRIES):
            if store.down:
                return
            try:
                raw, version = await store._redis(store.fleet.read_model, site)
            except ModelFormatError as exc:  # the build path rejects and rebuilds it
                logger.info("sst: not merging into the fleet's model of site %s: %s", site, exc)
                return
            except Exception as exc:
                store._failed(exc)
                return
            if raw is None:  # expired or dropped: nothing to merge into
                return
            merged = await store.run(merge_into, raw, store.redis_config.max_model_bytes, delta, cfg.max_model_pages)
            if merged is None:
                self._full.add(site)
                return
            cleaner, data, blob = merged
            try:
                new = await store._redis(
                    store.fleet.replace_model, site, version, blob, cleaner.n_pages, store.worker_id
                )
            except Exception as exc:
                store._failed(exc)
                return
            if new:
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
                return
            store.inc("redis/merge_conflicts")  # another worker merged first: again
        logger.info(
            "sst: gave up merging %d pages into the fleet's model of site %s after %d conflicting writes",
            len(pages),
            site,
            MAX_TRIES,
        )
