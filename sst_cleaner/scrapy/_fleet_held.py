"""Crash safety for the pages a fleet worker has parsed and not yet delivered.

A worker holds a page's items until its site has a model, then cleans them in the item
pipeline. If the worker dies (SIGKILL, OOM, a lost machine) the items it holds or cleans
die with it, and the fleet's shared duplicate filter (scrapy-redis's) has marked the
page's URL as seen, so no worker would crawl it again. So each page's request is
recorded in Redis (:meth:`RedisFleet.hold_page`, one hash per worker, next to a
heartbeat key the worker renews) before its callback runs, and the record is deleted
once every item the callback yielded is through the pipelines (``item_scraped``,
``item_dropped`` or ``item_error``): whenever the spider has yielded an item that is not
delivered yet, its page's record is in Redis. A worker whose heartbeat stops is dead,
and a live one takes its records (a Lua script: one taker per record) and schedules
those requests again with ``dont_filter`` (past the duplicate filter), so their items
are delivered once.

What is left: a callback that is not a generator has run (and made its items) before
the middleware sees its output, so its record is written after; a worker killed between
an item's delivery and the deletion of its page's record (one Redis round trip) has that
page crawled again, its items then delivered twice; and a page some of whose items were
delivered when its worker died has all of them delivered again.

A record is a request as JSON (never pickled): :func:`encode_request` keeps what
``Request.to_dict`` gives that JSON can carry (bytes as base64, meta values that are not
JSON are left out) and :func:`decode_request` reads it back as untrusted data: size
capped, a plain ``Request`` (a recorded class path is never imported), callbacks only
public methods of the spider.

:class:`HeldPages` keeps this worker's records: written, followed item by item, deleted,
and the heartbeat and the sweep for dead workers' records.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
import weakref
from typing import Any, Callable, Optional

from sst_cleaner.scrapy._fleet_link import RedisLink
from sst_cleaner.scrapy._redis_store import MAX_HELD_RECORD
from sst_cleaner.scrapy._settings import SSTConfig

logger = logging.getLogger(__name__)

#: meta key of a request scheduled again for a dead worker's held page
RECOVERED_META = "sst_recovered"

_BYTES = "__sst_bytes__"

#: a worker renews its heartbeat every HEARTBEAT_SECONDS and is taken for dead
#: HEARTBEAT_TTL after its last one; live workers look for dead ones every SWEEP_SECONDS
#: and take at most MAX_ADOPTED records at a time
HEARTBEAT_SECONDS = 2.0
HEARTBEAT_TTL = 15.0
SWEEP_SECONDS = 5.0
MAX_ADOPTED = 500
#: records of pages done while Redis was down, kept to be deleted when it answers again
MAX_UNRELEASED = 100_000
#: items followed to the end of the pipelines beyond the held ones (SST_MAX_HELD_ITEMS):
#: far above what Scrapy's item concurrency lets into the pipelines at once
MAX_IN_FLIGHT = 100_000


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(type(value).__name__)


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_BYTES} and isinstance(value[_BYTES], str):
            return base64.b64decode(value[_BYTES].encode("ascii"), validate=True)
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def encode_request(request: Any, spider: Any) -> Optional[bytes]:
    """The request as a record, or None when it cannot be one (a callback that is not a
    spider method, a body or headers JSON cannot carry, over the size cap)."""
    try:
        data = request.to_dict(spider=spider)
    except ValueError:  # a callback that is not a method of the spider
        return None
    data.pop("_class", None)
    meta = {}
    for key, value in (data.pop("meta", None) or {}).items():
        try:
            meta[str(key)] = _jsonable(value)
        except TypeError:
            continue  # a value only this process can hold (a middleware's object)
    try:
        data = _jsonable(data)
    except TypeError:
        return None
    data["meta"] = meta
    raw = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return raw if len(raw) <= MAX_HELD_RECORD else None


def decode_request(raw: bytes, spider: Any) -> Any:
    """A record read back as a ``Request`` with ``dont_filter``; ValueError when it is not
    a record this module wrote."""
    from scrapy import Request

    if len(raw) > MAX_HELD_RECORD:
        raise ValueError("held-page record over the size cap")
    try:
        data = _from_json(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"held-page record is not JSON: {exc}"[:200]) from None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise ValueError("held-page record has no url")
    kwargs = {k: v for k, v in data.items() if k in Request.attributes and k not in ("callback", "errback")}
    for name in ("callback", "errback"):
        method = data.get(name)
        if method is None:
            continue
        if not isinstance(method, str) or method.startswith("_") or not callable(getattr(spider, method, None)):
            raise ValueError(f"held-page record names {name} {str(method)[:50]!r}, not a method of the spider")
        kwargs[name] = getattr(spider, method)
    if not isinstance(kwargs.get("meta", {}), dict):
        raise ValueError("held-page record's meta is not an object")
    kwargs["dont_filter"] = True
    kwargs["meta"] = dict(kwargs.get("meta") or {}, **{RECOVERED_META: True})
    try:
        return Request(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"held-page record is not a request: {exc}"[:200]) from None


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


class HeldPages:
    """This worker's held-page records in Redis (one hash per incarnation): written before
    a page's callback runs, deleted once its items are through the pipelines (or when
    Redis answers again, for pages done while it was down); the heartbeat, and the
    sweep that crawls again the records of workers whose heartbeat stopped."""

    def __init__(self, link: RedisLink, config: SSTConfig, incarnation: str, inc: Callable[..., None]):
        self.link, self.fleet, self.config, self.incarnation, self.inc = link, link.fleet, config, incarnation, inc
        # ``rescheduler(record)`` schedules a dead worker's held page again (reactor thread)
        self.rescheduler: Optional[Callable[[bytes], None]] = None
        # id(item) -> its page's record, for the items not yet through the pipelines
        # (insertion order: the oldest first); id(response) -> the record of its page
        self._in_flight: dict[int, InFlight] = {}
        self._by_response: dict[int, InFlight] = {}
        self._by_url: dict[str, InFlight] = {}
        # records of pages done while Redis was down: deleted when it answers again
        self._unreleased: set[str] = set()
        self._next_beat = self._next_sweep = 0.0

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
        request = getattr(response, "request", None)
        if self.link.down or request is None:
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
            written = self.link.call(self.fleet.hold_page, self.incarnation, entry.field, raw, HEARTBEAT_TTL)
            await maybe_deferred_to_future(written)
        except Exception as exc:
            self.link.failed(exc)
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
        if self.link.down:  # deleted once Redis answers again (see release_unreleased)
            if len(self._unreleased) < MAX_UNRELEASED:
                self._unreleased.add(entry.field)
            return
        self.link.send(self.fleet.release_page, self.incarnation, entry.field)

    def release_unreleased(self) -> None:
        """Redis answers again: delete the records of the pages done meanwhile."""
        fields, self._unreleased = sorted(self._unreleased), set()
        if fields:
            self.link.send(self.fleet.release_page, self.incarnation, *fields)

    def beat(self) -> None:
        """Renew the heartbeat; now and then, take over the held pages of dead workers."""
        if time.monotonic() >= self._next_beat:
            self.link.once("beat", self._start_beat)

    def _start_beat(self) -> Any:
        now = time.monotonic()
        self._next_beat = now + HEARTBEAT_SECONDS
        sweep = self.rescheduler is not None and now >= self._next_sweep
        if sweep:
            self._next_sweep = now + SWEEP_SECONDS
        return self.link.start(self._heartbeat(sweep))

    async def _heartbeat(self, sweep: bool) -> None:
        call, fleet = self.link.call, self.fleet
        await call(fleet.heartbeat, self.incarnation, HEARTBEAT_TTL)
        if not sweep:
            return
        for worker in await call(fleet.dead_workers, self.incarnation):
            records = await call(fleet.adopt_pages, worker, MAX_ADOPTED)
            if records:
                logger.warning(
                    "sst: a fleet worker stopped with %d pages whose items it held: crawling them again here",
                    len(records),
                )
            for raw in records:
                try:
                    assert self.rescheduler is not None
                    self.rescheduler(raw)
                    self.inc("redis/pages_recovered")
                except Exception as exc:  # a bad record, or the crawl is closing
                    self.inc("redis/recover_errors")
                    logger.warning("sst: could not crawl a dead worker's held page again: %s", str(exc)[:300])

    def close(self) -> None:
        """The crawl closes: with Redis up, its held items were handed over and nothing
        of this worker is left to recover."""
        if not self.link.down:
            try:
                self.fleet.forget_worker(self.incarnation)
            except Exception as exc:
                logger.info("sst: could not clear this worker's held-page records: %s", self.link.said(exc))
        self._in_flight.clear()
        self._by_response.clear()
        self._by_url.clear()
