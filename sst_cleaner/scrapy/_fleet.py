"""A site model store shared by a fleet of crawl processes through Redis (``SST_MODEL_STORE``).

:class:`SharedSiteModelStore` is the in-process :class:`~sst_cleaner.scrapy._site_models.SiteModelStore`
plus a Redis side (:mod:`sst_cleaner.scrapy._redis_store`), for crawls that run as many Scrapy
processes (e.g. scrapy-redis workers) over the same sites:

* every sample page of a held site is also pushed to the site's shared sample list, so
  the sample fills at the fleet's speed; when the list is complete (or another worker has
  published the model) the middleware is told (``set_listener``) and starts its build;
* ``build`` claims the site: the worker that gets the lock fits the model on the shared
  sample (in its worker process, as usual) while renewing the lock, then publishes it;
  the others wait (polling with backoff) and load the published model; a builder that
  dies stops renewing, its lock expires and the next claim takes over;
* every page is recorded in Redis before its callback runs, until its items are through
  the pipelines (held here first or not), with a heartbeat; the pages of a worker whose
  heartbeat stopped are crawled again by a live one (:mod:`sst_cleaner.scrapy._fleet_held`);
* a model read from Redis is untrusted data, checked like a model file; a bad one is
  rejected (logged, counted in ``sst/redis/models_rejected``), deleted if it has not
  changed since, and built again.

Redis is never on the crawl's critical path for longer than one call: every call runs in
this store's threads with the socket timeout ``SST_REDIS_TIMEOUT`` (a response's callback
waits for its page's record, no other call is waited on by the crawl), and the first failure (down, slow, a
refused script) switches the crawl to local models, said once in the log and counted in
``sst/redis/down``. From then on Redis is pinged with backoff (from RECONNECT_SECONDS to
RECONNECT_MAX_SECONDS); when it answers the crawl shares again (``sst/redis/reconnects``,
and the time spent local in ``sst/redis/local_seconds``). Sites that got a local model
meanwhile keep it, and offer it to the fleet if it has none (``sst/redis/local_models_shared``);
the others are claimed through Redis as before, so after Redis comes back empty each is
built once for the fleet. While Redis is down a site is fitted here only on this
process's complete sample, at its hold timeout or at the end of the crawl, never because
the fleet said it was ready (every waiting worker would fit it); and a site this process
saw another worker building is not fitted here at all before SST_REDIS_WAIT from then
(that worker may have fitted it): when Redis answers again it is claimed as usual, so it
is loaded, or built once more for the fleet. Items are held and released by the
middleware as always, so none is lost or doubled whatever Redis does.

Refinement: when the method's models add up (the default method's), later pages of a
site are learnt in batches and merged into the fleet's model (:mod:`sst_cleaner.scrapy._fleet_refine`);
otherwise each process refines its own copy (``partial_fit``), as a single-process crawl
does. "Later pages" include the pages this process held for the site that the fleet's
model has not seen (they came after the shared sample was complete, or it had no room
for them): :meth:`SharedSiteModelStore.unlearnt` gives them to the middleware once the
model is in. Pages still waiting for a merge when the crawl ends are merged before the
spider closes (:meth:`SharedSiteModelStore.finish`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.scrapy._fleet_refine import FleetRefiner
from sst_cleaner.scrapy._redact import redact_text, redact_url
from sst_cleaner.scrapy._redis_store import ForeignModel, ModelIdentity, RedisFleet, parse_model_json
from sst_cleaner.scrapy._settings import RedisConfig, SSTConfig, load_redis_config
from sst_cleaner.scrapy._site_models import PageRecord, SiteModelStore

logger = logging.getLogger(__name__)

#: page bytes waiting to be pushed to Redis, all sites together: past it a page is not
#: shared (the local sample still has it), so a slow Redis cannot pile up memory here
MAX_PUSH_BACKLOG = 8 * 1024 * 1024
#: how often sites waiting for the fleet are checked (one pipelined round trip for all
#: the sites due): each site first after POLL_SECONDS, then backing off to POLL_MAX_SECONDS,
#: so a crawl with many small sites does not poll Redis for each of them four times a second
POLL_SECONDS = 0.25
POLL_MAX_SECONDS = 4.0
POLL_SITES = 500
#: sites watched at most (the oldest are let go: they still get their model when their
#: own sample is complete, at their hold timeout or at the end of the crawl)
MAX_WATCHED = 10_000
#: a site whose shared model is rejected this many times in one build is built locally
MAX_REJECTIONS = 2
#: after a failure, Redis is pinged after RECONNECT_SECONDS, then backing off to
#: RECONNECT_MAX_SECONDS: a fleet is back to sharing within seconds of Redis coming back,
#: and a dead Redis sees one ping per worker every few seconds
RECONNECT_SECONDS = 0.5
RECONNECT_MAX_SECONDS = 8.0
#: crash safety of held pages (see _fleet_held.py): a worker renews its heartbeat every
#: HEARTBEAT_SECONDS and is taken for dead HEARTBEAT_TTL after its last one; live workers
#: look for dead ones every SWEEP_SECONDS and take at most MAX_ADOPTED records at a time
HEARTBEAT_SECONDS = 2.0
HEARTBEAT_TTL = 15.0
SWEEP_SECONDS = 5.0
MAX_ADOPTED = 500
#: records of pages done while Redis was down, kept to be deleted when it answers again
MAX_UNRELEASED = 100_000
#: items followed to the end of the pipelines beyond the held ones (SST_MAX_HELD_ITEMS):
#: far above what Scrapy's item concurrency lets into the pipelines at once
MAX_IN_FLIGHT = 100_000

SHARED = "shared"  # third element of a build result: the model came from the fleet
FOREIGN = ("foreign",)  # _load_shared: the stored model is of another identity
NO_MODEL = "none"  # ... or there is none (too few pages): the page-level fallback


class InFlight:
    """The Redis record of one page whose callback runs or whose items are not yet
    through the pipelines (held, or being cleaned)."""

    __slots__ = ("field", "url", "key", "response", "items", "parsing")

    def __init__(self, field: str, response: Any):
        self.field = field  # the record's field in this worker's hash
        self.url = str(getattr(response, "url", ""))
        # the page's response (weakly: not kept for this): its items reach the item
        # signals with it when the middleware did not hold them
        self.response = _weak(response)
        self.key = id(response)
        self.items: dict[int, Any] = {}  # the page's items not yet through the pipelines
        self.parsing = True  # its callback may yield more


def _weak(obj: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(obj)
    except TypeError:  # an object without weak references is never matched
        return lambda: None


def _model_json(model: SiteCleaner, lock: Any) -> bytes:
    """The model as published. Under the site's lock: in thread mode a refinement may be
    changing the model in another thread."""
    import json

    with lock:
        data = model.to_dict()
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class SharedSiteModelStore(SiteModelStore):
    """Site models of one crawl process, learnt once per site for the whole fleet."""

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
        # id(item) -> its page's record, for the items not yet through the pipelines
        # (insertion order: the oldest first); id(response) -> the record of its page
        self._in_flight: dict[int, InFlight] = {}
        self._by_response: dict[int, InFlight] = {}
        self._by_url: dict[str, InFlight] = {}
        # records of pages done while Redis was down: deleted when it answers again
        self._unreleased: set[str] = set()
        self._rescheduler: Optional[Callable[[bytes], None]] = None
        self._next_beat = self._next_sweep = 0.0
        self._beating = False
        self._rexec = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sst-redis")
        self._down = False
        # reconnects so far: a call that started before the last one and fails after it
        # failed on the outage already counted, not on the Redis that answers now
        self._epoch = 0
        self._down_since = 0.0
        self._retry_at = 0.0
        self._retry_delay = RECONNECT_SECONDS
        self._pinging = False
        self._listener: Optional[Callable[[str], None]] = None
        # sites waiting for the fleet -> [when to check next, interval]; insertion order
        self._watch: dict[str, list] = {}
        self._notified: set[str] = set()
        self._push_backlog = 0
        self._polling = False
        self._poller: Any = None
        self._refiner = FleetRefiner(self)
        # site -> URLs of this process's pages that went into the site's shared sample,
        # and the pages of a build the site's model has not learnt (see unlearnt)
        self._sampled: dict[str, set[str]] = {}
        self._unlearnt: dict[str, list[PageRecord]] = {}
        # sites this process fitted while Redis was down (or whose publish it cut short):
        # offered to the fleet when Redis answers again
        self._unpublished: set[str] = set()
        # site -> when this process first saw another worker building it: while Redis is
        # down such a site is not fitted here before SST_REDIS_WAIT from then (see _shared_build)
        self._elsewhere: dict[str, float] = {}

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
            lambda f: logger.error("sst: polling the shared store stopped: %s", self._said(f.value))
        )

    def close(self) -> None:
        try:
            if self._poller is not None and self._poller.running:
                self._poller.stop()
            if self._down:
                self._count_local_time()
            else:
                try:  # closed cleanly: its held items were handed over, nothing to recover
                    self.fleet.forget_worker(self.incarnation)
                except Exception as exc:
                    logger.info("sst: could not clear this worker's held-page records: %s", self._said(exc))
            self._in_flight.clear()
            self._by_response.clear()
            self._by_url.clear()
            super().close()
        finally:
            self._rexec.shutdown(wait=True, cancel_futures=True)
            self.fleet.close()

    def finish(self) -> Any:
        """The close of the crawl, before :meth:`close`: a Deferred fired once the pages
        still waiting to be merged into the fleet's models are merged (None: none wait)."""
        if not self._refiner.enabled:
            return None
        from twisted.internet.defer import Deferred

        def failed(failure: Any) -> None:
            logger.warning("sst: merging the last pages into the fleet's models failed: %s", self._said(failure.value))

        return Deferred.fromCoroutine(self._refiner.flush()).addErrback(failed)

    def unlearnt(self, site: str) -> list[PageRecord]:
        """The pages this process held for ``site`` that the model it now has did not
        learn (the fleet's sample was complete without them): the middleware refines the
        model with them, as with any later page. Asked once, when the site's build ends."""
        self._sampled.pop(site, None)
        return self._unlearnt.pop(site, [])

    def set_listener(self, listener: Callable[[str], None]) -> None:
        """``listener(site)`` is called (reactor thread) when the fleet is ready to give
        ``site`` a model: its shared sample is complete or its model is published."""
        self._listener = listener

    def set_rescheduler(self, rescheduler: Callable[[bytes], None]) -> None:
        """``rescheduler(record)`` schedules a dead worker's held page again (reactor thread)."""
        self._rescheduler = rescheduler

    # -- pages in flight (crash safety, see _fleet_held.py)
    def watch_items(self, signals: Any) -> None:
        """Follow the crawl's items to their end (``signals``: the crawler's): a page's
        record is deleted once every item it yielded is through the pipelines."""
        from scrapy import signals as scrapy_signals

        for signal in (scrapy_signals.item_scraped, scrapy_signals.item_dropped, scrapy_signals.item_error):
            signals.connect(self._item_done, signal=signal)

    async def record_page(self, response: Any, spider: Any) -> Optional[InFlight]:
        """Record ``response``'s request in Redis, and wait for it to be written, before
        its callback runs (the middleware calls this before it reads the callback's
        output, and a generator callback runs only then): from the first item the spider
        yields until the last one is through the pipelines, a worker killed at any
        instant leaves the page for another worker to crawl again. None: not recorded
        (Redis is down, or the request cannot be a record)."""
        from sst_cleaner.scrapy._fleet_held import encode_request

        request = getattr(response, "request", None)
        if self._down or request is None:
            return None
        try:
            raw = encode_request(request, spider)
        except Exception as exc:  # whatever a request holds, the page's items go on
            logger.info("sst: could not record the page %s: %r", response.url, exc)
            raw = None
        if raw is None:
            self.inc("redis/held_not_recorded")
            return None
        from scrapy.utils.defer import maybe_deferred_to_future

        entry = InFlight(uuid.uuid4().hex, response)
        self._by_response[entry.key] = entry
        self._by_url[entry.url] = entry
        try:  # the middleware runs under Scrapy's loop (asyncio or not): a future, not a Deferred
            written = self._redis(self.fleet.hold_page, self.incarnation, entry.field, raw, HEARTBEAT_TTL)
            await maybe_deferred_to_future(written)
        except Exception as exc:
            self._failed(exc)
            # it may be written all the same (a reply that timed out): deleted when the
            # page is done, if Redis answers again by then
        else:
            self.inc("redis/held_recorded")
        return entry

    def note_item(self, entry: Optional[InFlight], item: Any) -> None:
        """``item`` came out of the callback of ``entry``'s page: the record stays until
        the item is through the pipelines (held first or not)."""
        if entry is None:
            return
        entry.items[id(item)] = item
        self._in_flight[id(item)] = entry
        if len(self._in_flight) > self.config.max_held_items + MAX_IN_FLIGHT:
            # items whose end was never seen (see _item_done): the oldest is taken as
            # delivered, so memory stays bounded
            key, oldest = next(iter(self._in_flight.items()))
            del self._in_flight[key]
            oldest.items.pop(key, None)
            self.inc("redis/items_not_followed")
            self._page_done(oldest)

    def page_parsed(self, entry: Optional[InFlight]) -> None:
        """The callback of ``entry``'s page yielded its last item (or raised)."""
        if entry is not None and entry.parsing:
            entry.parsing = False
            self._page_done(entry)

    def _item_done(self, item: Any = None, response: Any = None, **kwargs: Any) -> None:
        entry = self._in_flight.get(id(item))
        if entry is not None and entry.items.get(id(item)) is item:
            del self._in_flight[id(item)]
            del entry.items[id(item)]
        else:
            # a pipeline gave back another object than the item it got (item_scraped
            # carries what the last pipeline returned): it is an item of the page its
            # URL field names, or else of the page of its response (unless the
            # middleware held it: then the response is the one whose output released
            # it, and the item is let go at the cap)
            entry = self._page_of_copy(item, response)
            if entry is None:
                return
            key = next(iter(entry.items))
            del entry.items[key]
            self._in_flight.pop(key, None)
        self._page_done(entry)

    def _page_of_copy(self, item: Any, response: Any) -> Optional[InFlight]:
        entry = None
        if self.config.url_field:
            try:
                from itemadapter import ItemAdapter

                url = ItemAdapter(item).get(self.config.url_field)
            except Exception:  # not an item ItemAdapter knows
                url = None
            entry = self._by_url.get(url) if isinstance(url, str) else None
        if entry is None or not entry.items:
            entry = self._by_response.get(id(response)) if response is not None else None
            if entry is None or entry.response() is not response:
                return None
        return entry if entry.items else None

    def _page_done(self, entry: InFlight) -> None:
        if entry.parsing or entry.items:
            return
        if self._by_response.get(entry.key) is entry:
            del self._by_response[entry.key]
        if self._by_url.get(entry.url) is entry:
            del self._by_url[entry.url]
        self.inc("redis/records_released")
        if self._down:  # deleted once Redis answers again (see _reconnect)
            if len(self._unreleased) < MAX_UNRELEASED:
                self._unreleased.add(entry.field)
            return
        self._redis(self.fleet.release_page, self.incarnation, entry.field).addErrback(self._failed)

    def _release_unreleased(self) -> None:
        fields, self._unreleased = sorted(self._unreleased), set()
        if fields:
            self._redis(self.fleet.release_page, self.incarnation, *fields).addErrback(self._failed)

    def _beat(self) -> None:
        """Renew the heartbeat; now and then, take over the held pages of dead workers."""
        now = time.monotonic()
        if self._beating or now < self._next_beat:
            return
        self._beating = True
        self._next_beat = now + HEARTBEAT_SECONDS
        sweep = self._rescheduler is not None and now >= self._next_sweep
        if sweep:
            self._next_sweep = now + SWEEP_SECONDS

        from twisted.internet.defer import Deferred

        def done(result: Any) -> Any:
            self._beating = False
            return result

        Deferred.fromCoroutine(self._heartbeat(sweep)).addErrback(self._failed).addBoth(done)

    async def _heartbeat(self, sweep: bool) -> None:
        await self._redis(self.fleet.heartbeat, self.incarnation, HEARTBEAT_TTL)
        if not sweep:
            return
        for worker in await self._redis(self.fleet.dead_workers, self.incarnation):
            records = await self._redis(self.fleet.adopt_pages, worker, MAX_ADOPTED)
            if records:
                logger.warning(
                    "sst: a fleet worker stopped with %d pages whose items it held: crawling them again here",
                    len(records),
                )
            for raw in records:
                try:
                    assert self._rescheduler is not None
                    self._rescheduler(raw)
                    self.inc("redis/pages_recovered")
                except Exception as exc:  # a bad record, or the crawl is closing
                    self.inc("redis/recover_errors")
                    logger.warning("sst: could not crawl a dead worker's held page again: %s", str(exc)[:300])

    @property
    def down(self) -> bool:
        """Whether Redis failed and the crawl went on with local models."""
        return self._down

    # -- Redis calls, off the reactor thread
    def _redis(self, func: Callable[..., Any], *args: Any):
        def call() -> Any:
            epoch = self._epoch
            try:
                return func(*args)
            except Exception as exc:
                try:
                    exc.sst_epoch = epoch  # type: ignore[attr-defined]
                except AttributeError:
                    pass
                raise

        return self.dispatch.deferred(self._rexec.submit(call))

    def _failed(self, exc: Any) -> None:
        """Redis failed: this crawl goes on with local models (said once)."""
        exc = getattr(exc, "value", exc)
        self.inc("redis/errors")
        if self._down or getattr(exc, "sst_epoch", self._epoch) < self._epoch:
            return
        self._down = True
        self._down_since = time.monotonic()
        self._retry_delay = RECONNECT_SECONDS
        self._retry_at = self._down_since + self._retry_delay
        self._watch.clear()
        self.inc("redis/down")
        logger.warning(
            "sst: the shared model store (Redis at %s) failed: %s; this crawl goes on "
            "with local models (sites are learnt from this process's own pages) until it answers again",
            redact_url(self.redis_config.url),
            self._said(exc),
        )

    def _count_local_time(self) -> None:
        now = time.monotonic()
        self.inc("redis/local_seconds", round(now - self._down_since, 3))
        self._down_since = now

    def _reconnect(self) -> None:
        """While down: ping Redis when the backoff is due; back to sharing when it answers."""
        now = time.monotonic()
        if self._pinging or now < self._retry_at:
            return
        self._pinging = True

        def answered(ok: Any) -> None:
            if not ok:
                raise ConnectionError("no PONG")
            self._count_local_time()
            self._down = False
            self._epoch += 1
            self.inc("redis/reconnects")
            self._release_unreleased()
            logger.info(
                "sst: the shared model store (Redis at %s) answers again: back to sharing site models",
                redact_url(self.redis_config.url),
            )
            if self._unpublished:
                from twisted.internet.defer import Deferred

                Deferred.fromCoroutine(self._share_local_models()).addErrback(self._failed)

        def still_down(failure: Any) -> None:
            self.inc("redis/errors")
            self._retry_delay = min(self._retry_delay * 2, RECONNECT_MAX_SECONDS)
            self._retry_at = time.monotonic() + self._retry_delay

        def done(result: Any) -> Any:
            self._pinging = False
            return result

        self._redis(self.fleet.ping).addBoth(done).addCallbacks(answered, still_down).addErrback(still_down)

    def _said(self, exc: Any) -> str:
        """An exception as the log shows it: without the secrets of the Redis URL."""
        text = redact_text(repr(exc), self.redis_config.url)
        for secret in self.redis_config.secrets():  # REDIS_PARAMS' password
            text = text.replace(secret, "***")
        return text

    # -- the shared sample
    def sample_added(self, site: str, page: PageRecord) -> None:
        """A new sample page of a held site: share it with the fleet."""
        if self._down:
            return
        # a held site that is not being built: it needs telling again (its earlier hold
        # may have been evicted by a cap after a notification)
        self._notified.discard(site)
        if self._push_backlog + page.size > MAX_PUSH_BACKLOG:
            self.inc("redis/pages_not_shared")
            return
        self._push_backlog += page.size
        d = self._redis(self.fleet.push_page, site, page.url, page.body, page.encoding, self.config.sample_pages)

        def pushed(result: tuple) -> None:
            status, n = result
            if status in ("added", "filled"):
                self.inc("redis/pages_shared")
            if status in ("added", "filled", "dup"):  # in the sample the model is fitted on
                if site not in self._sampled and len(self._sampled) >= MAX_WATCHED:
                    self._sampled.pop(next(iter(self._sampled)))
                self._sampled.setdefault(site, set()).add(page.url)
            if status in ("added", "dup"):
                self._watch_site(site)
            elif status in ("filled", "full", "model") or n > 0:  # complete, or no room left
                self._ready(site)
            else:  # over the per-site cap on its own: this page is not shared
                self.inc("redis/pages_not_shared")

        def done(result: Any) -> Any:
            self._push_backlog -= page.size
            return result

        d.addBoth(done).addCallbacks(pushed, self._failed)

    def _watch_site(self, site: str) -> None:
        if site not in self._watch:
            if len(self._watch) >= MAX_WATCHED:
                self._watch.pop(next(iter(self._watch)))
            self._watch[site] = [time.monotonic() + POLL_SECONDS, POLL_SECONDS]

    def _mark_elsewhere(self, site: str, since: float) -> None:
        """Another worker builds ``site`` (or is about to: its shared sample is complete)."""
        if site not in self._elsewhere:
            if len(self._elsewhere) >= MAX_WATCHED:
                self._elsewhere.pop(next(iter(self._elsewhere)))
            self._elsewhere[site] = since

    def _ready(self, site: str) -> None:
        self._watch.pop(site, None)
        if site not in self._models:  # the fleet's sample is complete: a worker builds it
            self._mark_elsewhere(site, time.monotonic())
        if site in self._notified or self._listener is None:
            return
        self._notified.add(site)
        self._listener(site)

    def _poll(self) -> None:
        """Check the sites waiting for the fleet (one round trip for all of them); while
        Redis is down, see whether it is back."""
        if self._down:
            self._reconnect()
            return
        self._beat()
        self._refiner.tick()
        if self._polling or not self._watch:
            return
        now, sites = time.monotonic(), []
        for site, due in list(self._watch.items()):
            if site in self._models:  # built or loaded meanwhile
                del self._watch[site]
            elif due[0] <= now:
                sites.append(site)
                due[1] = min(due[1] * 2, POLL_MAX_SECONDS)
                due[0] = now + due[1]
                if len(sites) >= POLL_SITES:
                    break
        if not sites:
            return
        self._polling = True

        def polled(states: list) -> None:
            for site, (has_model, n) in zip(sites, states):
                if has_model or n >= self.config.sample_pages:
                    self._ready(site)

        def done(result: Any) -> Any:
            self._polling = False
            return result

        self._redis(self.fleet.sample_state, sites).addBoth(done).addCallbacks(polled, self._failed)

    # -- build: claim, fit and publish, or load
    def build(self, site: str, pages: list[PageRecord], fleet_only: bool = False):
        """A Deferred of ``(seconds, share)`` when this process fitted the model, or of
        ``(0.0, 0.0, "shared")`` when it loaded the fleet's, fired once the model is in
        the store; ``(0.0, 0.0, "none")`` when the fleet has too few pages for one.

        ``fleet_only``: the build was started by the fleet (its sample is complete, or
        its model published), not by this process's own sample, a timeout or the end of
        the crawl. If Redis is down then, the site is not fitted here on the few pages
        this process has (every worker of the fleet would fit it): ``"none"``, and the
        site stays held until its own sample is complete, its hold times out, the crawl
        ends, or Redis answers again and the fleet builds it once. A site another worker
        was building: while Redis is down, its build waits for Redis to answer, up to
        SST_REDIS_WAIT from when that build was first seen, then claims it again."""
        from twisted.internet.defer import Deferred, succeed

        if self._down and fleet_only:
            return succeed((0.0, 0.0, NO_MODEL))
        if self._down and site not in self._elsewhere:
            if len(pages) < min(self.config.min_fit_pages, self.config.sample_pages):
                return succeed((0.0, 0.0, NO_MODEL))
            return super().build(site, pages).addCallback(self._fitted_alone, site)

        self._watch.pop(site, None)
        self._notified.add(site)
        return Deferred.fromCoroutine(self._shared_build(site, pages, fleet_only))

    async def _shared_build(self, site: str, pages: list[PageRecord], fleet_only: bool = False) -> tuple:
        token = uuid.uuid4().hex
        started = time.monotonic()
        # the wait for another worker's build began when it was first seen building
        deadline = self._elsewhere.get(site, started) + self.redis_config.wait
        delay, waited, rejections = 0.05, False, 0
        while True:
            if self._down:
                # Redis failed while another worker was building the site: that worker
                # may have fitted it, and each waiting worker fitting it here too would
                # make as many fits; wait for Redis (as for the build) and claim again
                if fleet_only or site not in self._elsewhere or not await self._answers_before(deadline):
                    break
                continue
            try:
                state, detail = await self._redis(self.fleet.claim, site, token)
            except Exception as exc:  # Redis down or slow: see above
                self._failed(exc)
                continue
            if waited and state != "busy":  # how long another worker's build kept this site's items
                seconds = time.monotonic() - started
                self.inc("redis/wait_seconds", round(seconds, 3))
                self.max_stat("redis/max_wait_seconds", round(seconds, 3))
            if state == "lock":
                self._elsewhere.pop(site, None)
                logger.info("sst: building the model of site %s for the fleet", site)
                return await self._fit_and_publish(site, pages, token, took_over=waited)
            if state == "model":
                loaded = await self._load_shared(site)
                if loaded == FOREIGN:
                    break  # not this crawl's kind of model: built here, and left in place
                if loaded is not None:
                    self._elsewhere.pop(site, None)
                    sampled = self._sampled.get(site, set())
                    self._unlearnt[site] = [p for p in pages if p.url not in sampled]
                    return loaded
                rejections += 1
                if rejections >= MAX_REJECTIONS or self._down:
                    break
                continue  # the bad value was dropped: claim the site to build it again
            if not waited:
                logger.info("sst: waiting for another worker to build the model of site %s", site)
                waited = True
            self._mark_elsewhere(site, started)
            if time.monotonic() >= deadline:
                logger.warning(
                    "sst: waited %.0fs (SST_REDIS_WAIT) for another worker to build the "
                    "model of site %s; building it here",
                    self.redis_config.wait,
                    site,
                )
                self.inc("redis/wait_timeouts")
                break
            await self._sleep(delay)
            delay = min(delay * 2, 1.0)
        if self._down and fleet_only:  # Redis failed meanwhile: held on (see build)
            return 0.0, 0.0, NO_MODEL
        self._elsewhere.pop(site, None)
        down = self._down
        built = await self._local_build(site, pages)
        return self._fitted_alone(built, site) if down else built

    async def _local_build(self, site: str, pages: list[PageRecord]) -> tuple:
        if len(pages) < min(self.config.min_fit_pages, self.config.sample_pages):
            return 0.0, 0.0, NO_MODEL
        return await super().build(site, pages)

    async def _answers_before(self, deadline: float) -> bool:
        """Whether Redis answers again (see _reconnect) before ``deadline``."""
        while self._down:
            if time.monotonic() >= deadline:
                return False
            await self._sleep(RECONNECT_SECONDS / 2)
        return True

    @staticmethod
    def _sleep(seconds: float):
        from twisted.internet import reactor, task

        return task.deferLater(reactor, seconds, lambda: None)

    async def _fit_and_publish(self, site: str, local: list[PageRecord], token: str, took_over: bool) -> tuple:
        from twisted.internet.task import LoopingCall

        cfg = self.config
        if took_over:
            self.inc("redis/takeovers")
            logger.info(
                "sst: building the model of site %s here: the worker that held its lock let it go or expired", site
            )
        renew = LoopingCall(self._renew, site, token)
        renew.start(self.redis_config.lock_ttl / 3, now=False)
        published = False
        try:
            try:
                shared = await self._redis(self.fleet.read_sample, site, max(cfg.sample_pages, len(local)))
            except Exception as exc:
                self._failed(exc)
                shared = []
            pages = self._merge_pages(site, shared, local)
            if len(pages) < min(cfg.min_fit_pages, cfg.sample_pages):
                return 0.0, 0.0, NO_MODEL
            built = await super().build(site, pages)
            fitted = {p.url for p in pages}
            self._unlearnt[site] = [p for p in local if p.url not in fitted]
            published = await self._publish(site, token)
            if not published and self._down:  # Redis failed during the fit
                self._fitted_alone(built, site)
            return built
        finally:
            if renew.running:
                renew.stop()
            if not published and not self._down:
                self._redis(self.fleet.release, site, token).addErrback(self._failed)

    def _merge_pages(self, site: str, shared: list, local: list[PageRecord]) -> list[PageRecord]:
        """The shared sample, then this process's pages it lacks, up to the sample size
        (or all local pages, when there are more: an end-of-crawl fit uses what it has)."""
        pages, seen = [], set()
        for url, body, encoding in shared:
            if url not in seen and self.site_key(url) == site:  # another site's page is not evidence
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

    def _fitted_alone(self, built: Any, site: str) -> Any:
        """A model fitted here while Redis was down: offered to the fleet when it answers."""
        if site in self._models and len(self._unpublished) < MAX_WATCHED:
            self._unpublished.add(site)
        return built

    async def _share_local_models(self) -> None:
        """Redis answers again: publish the models fitted here meanwhile for the sites the
        fleet has none of (after an empty restart, all of them), so the other workers load
        them rather than fit the sites again. A site the fleet has a model of, or that
        another worker is building, keeps both."""
        sites, self._unpublished = sorted(self._unpublished), set()
        for site in sites:
            if self._down:
                return
            if site not in self._models:
                continue
            token = uuid.uuid4().hex
            state, _ = await self._redis(self.fleet.claim, site, token)
            if state != "lock":
                continue
            if await self._publish(site, token):
                self.inc("redis/local_models_shared")
            elif not self._down:
                self._redis(self.fleet.release, site, token).addErrback(self._failed)

    def _renew(self, site: str, token: str) -> None:
        def renewed(ok: bool) -> None:
            if not ok:
                logger.warning(
                    "sst: lost the lock of site %s while fitting it (is SST_REDIS_LOCK_TTL "
                    "shorter than a fit's pauses?)",
                    site,
                )

        self._redis(self.fleet.renew, site, token).addCallbacks(renewed, self._failed)

    async def _publish(self, site: str, token: str) -> bool:
        model = self._models.get(site)
        if model is None or self._down:
            return False
        try:
            raw = await self.run(_model_json, model, self.lock(site))
        except Exception:  # the model is built and used here all the same
            logger.exception("sst: could not serialise the model of site %s for the fleet", site)
            return False
        try:
            version = await self._redis(self.fleet.publish, site, token, raw, model.n_pages, self.worker_id)
        except Exception as exc:
            self._failed(exc)
            return False
        if version:
            self._refiner.adopt(site)
        if not version:
            logger.warning(
                "sst: the model of site %s was not published: another worker holds its "
                "lock now; this process keeps its own",
                site,
            )
            self.inc("redis/publish_refused")
            return False
        self.inc("redis/models_published")
        logger.info(
            "sst: published the model of site %s for the fleet (version %d, %d pages)", site, version, model.n_pages
        )
        return True

    async def _load_shared(self, site: str) -> Optional[tuple]:
        """Load the site's published model into this process (and its worker). None when
        it is gone or was rejected (and dropped, so it can be built again); FOREIGN when
        it is another crawl's kind of model (another method, parameters or sample size):
        then it is neither used nor deleted."""
        limit = self.redis_config.max_model_bytes
        version = ""
        try:
            try:
                raw, version = await self._redis(self.fleet.read_model, site)
            except ForeignModel as exc:
                return self._foreign(site, exc)
            except ModelFormatError:
                raise
            except Exception as exc:
                self._failed(exc)
                return None
            if raw is None:
                return None  # deleted (expired) since the claim: claim again
            cleaner, data = await self.run(_parse_model, raw, limit)
            if cleaner.method != self.config.method:
                return self._foreign(site, ForeignModel(f"made by method {cleaner.method!r}"))
        except (ModelFormatError, ValueError, TypeError, KeyError, RecursionError) as exc:
            await self._reject(site, version, exc)
            return None
        self.adopt_model(site, cleaner, data)
        self._refiner.adopt(site)
        self.inc("redis/models_loaded")
        logger.info("sst: loaded the fleet's model of site %s (version %s, %d pages)", site, version, cleaner.n_pages)
        return 0.0, 0.0, SHARED

    def _foreign(self, site: str, exc: BaseException) -> tuple:
        self.inc("redis/models_foreign")
        logger.warning(
            "sst: the shared model of site %s is not this crawl's (%s); building it here, and leaving it in place",
            site,
            str(exc)[:300],
        )
        return FOREIGN

    def adopt_model(self, site: str, cleaner: SiteCleaner, data: dict) -> None:
        """Make the fleet's model (``cleaner``, and ``data``, its ``to_dict``) this
        process's model of ``site``, in its worker process too."""
        self.put(site, cleaner)
        sent = self.dispatch.give_model(site, data, cleaner.n_pages, retry=False)  # the worker cleans with it too
        if sent is not None:
            sent.addErrback(
                lambda f: logger.warning("sst: could not give the fleet's model of %s to its worker: %s", site, f.value)
            )

    # -- refinement
    def refine(self, site: str, page: PageRecord):
        """Learn a later page of ``site``: into the fleet's model when it can merge (see
        :mod:`sst_cleaner.scrapy._fleet_refine`), else into this process's copy."""
        if self._refiner.wants(site):
            from twisted.internet.defer import succeed

            self._refiner.add(site, page.fields)
            return succeed(None)
        return super().refine(site, page)

    async def _reject(self, site: str, version: str, exc: BaseException) -> None:
        """Count and log a bad shared model, and delete it (unless it changed since it
        was read) before the next claim, which then builds it again."""
        self.inc("redis/models_rejected")
        self.inc("errors")
        logger.warning(
            "sst: rejected the shared model of site %s (version %r): %s; building it again",
            site,
            version,
            str(exc)[:300],
        )
        if not self._down:
            try:
                await self._redis(self.fleet.drop_model, site, version)
            except Exception as exc2:
                self._failed(exc2)


def _parse_model(raw: bytes, limit: int) -> tuple[SiteCleaner, dict]:
    """(cleaner, model dict) from a model key's JSON: runs in a thread (parsing a large
    model is CPU work the reactor must not wait on)."""
    data = parse_model_json(raw, limit)
    return SiteCleaner.from_dict(data), data
