"""A site's model in Redis: published by the worker that built it, loaded by the others.

A model read from Redis is untrusted data, checked like a model file (size cap, schema,
then :meth:`SiteCleaner.from_dict`); a bad one is rejected (logged, counted in
``sst/redis/models_rejected``) and deleted if it has not changed since, so that the next
claim builds it again. A model of another identity (another crawl's method, parameters
or sample size) is neither used nor deleted.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.scrapy._fleet_link import RedisLink
from sst_cleaner.scrapy._fleet_refine import FleetRefiner
from sst_cleaner.scrapy._redis_store import ForeignModel, model_json, parse_model_json
from sst_cleaner.scrapy._site_models import Built, ModelSource, SiteModelStore

logger = logging.getLogger(__name__)

FOREIGN = ("foreign",)  # SharedModels.load: the stored model is of another identity


def _model_json(model: SiteCleaner, lock: Any) -> bytes:
    """The model as published. Under the site's lock: in thread mode a refinement may be
    changing the model in another thread."""
    with lock:
        data = model.to_dict()
    return model_json(data)


def _parse_model(raw: bytes, limit: int) -> tuple[SiteCleaner, dict]:
    """(cleaner, model dict) from a model key's JSON: runs in a thread (parsing a large
    model is CPU work the reactor must not wait on)."""
    data = parse_model_json(raw, limit)
    return SiteCleaner.from_dict(data), data


class SharedModels:
    """Owns the exchange of finished models with the fleet: serialising and publishing
    one under the builder's lock, reading, checking and adopting a published one (in
    this process and its worker), rejecting a bad one."""

    def __init__(self, store: SiteModelStore, link: RedisLink, refiner: FleetRefiner, worker_id: str):
        self.store, self.link, self.fleet, self.refiner, self.worker_id = store, link, link.fleet, refiner, worker_id

    async def publish(self, site: str, token: str) -> bool:
        """Publish this process's model of ``site`` with the lock ``token``: whether it is the fleet's now."""
        model = self.store.get(site)
        if model is None or self.link.down:
            return False
        try:
            raw = await self.store.run(_model_json, model, self.store.lock(site))
        except Exception:  # the model is built and used here all the same
            logger.exception("sst: could not serialise the model of site %s for the fleet", site)
            return False
        version = await self.link.attempt(self.fleet.publish, site, token, raw, model.n_pages, self.worker_id)
        if version is None:  # Redis failed
            return False
        if not version:
            logger.warning(
                "sst: the model of site %s was not published: another worker holds its "
                "lock now; this process keeps its own",
                site,
            )
            self.store.inc("redis/publish_refused")
            return False
        self.refiner.adopt(site)
        self.store.inc("redis/models_published")
        logger.info(
            "sst: published the model of site %s for the fleet (version %d, %d pages)", site, version, model.n_pages
        )
        return True

    async def load(self, site: str) -> Optional[tuple]:
        """Load the site's published model into this process (and its worker). None when
        it is gone or was rejected (and dropped, so it can be built again); FOREIGN when
        it is another crawl's kind of model (another method, parameters or sample size):
        then it is neither used nor deleted."""
        version = ""
        try:
            try:
                raw, version = await self.link.call(self.fleet.read_model, site)
            except ForeignModel as exc:
                return self._foreign(site, exc)
            except ModelFormatError:
                raise
            except Exception as exc:
                self.link.failed(exc)
                return None
            if raw is None:
                return None  # deleted (expired) since the claim: claim again
            cleaner, data = await self.store.run(_parse_model, raw, self.link.config.max_model_bytes)
            if cleaner.method != self.store.config.method:
                return self._foreign(site, ForeignModel(f"made by method {cleaner.method!r}"))
        except (ModelFormatError, ValueError, TypeError, KeyError, RecursionError) as exc:
            await self._reject(site, version, exc)
            return None
        self.adopt_model(site, cleaner, data)
        self.refiner.adopt(site)
        self.store.inc("redis/models_loaded")
        logger.info("sst: loaded the fleet's model of site %s (version %s, %d pages)", site, version, cleaner.n_pages)
        return Built(0.0, 0.0, ModelSource.FLEET)

    def _foreign(self, site: str, exc: BaseException) -> tuple:
        self.store.inc("redis/models_foreign")
        logger.warning(
            "sst: the shared model of site %s is not this crawl's (%s); building it here, and leaving it in place",
            site,
            str(exc)[:300],
        )
        return FOREIGN

    async def _reject(self, site: str, version: str, exc: BaseException) -> None:
        """Count and log a bad shared model, and delete it (unless it changed since it
        was read) before the next claim, which then builds it again."""
        self.store.inc("redis/models_rejected")
        self.store.inc("errors")
        logger.warning(
            "sst: rejected the shared model of site %s (version %r): %s; building it again",
            site,
            version,
            str(exc)[:300],
        )
        if not self.link.down:
            await self.link.attempt(self.fleet.drop_model, site, version)

    def adopt_model(self, site: str, cleaner: SiteCleaner, data: dict) -> None:
        """Make the fleet's model (``cleaner``, and ``data``, its ``to_dict``) this
        process's model of ``site``, in its worker process too."""
        self.store.put(site, cleaner)
        sent = self.store.dispatch.give_model(site, data, cleaner.n_pages, retry=False)  # the worker cleans with it too
        if sent is not None:
            sent.addErrback(
                lambda f: logger.warning("sst: could not give the fleet's model of %s to its worker: %s", site, f.value)
            )
