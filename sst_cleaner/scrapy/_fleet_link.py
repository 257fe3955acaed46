"""A fleet worker's connection to Redis: the calls, off the reactor thread, and what a
failure means for the crawl.

Redis is never on the crawl's critical path for longer than one call: every call runs in
this link's threads with the socket timeout ``SST_REDIS_TIMEOUT`` (a response's callback
waits for its page's record, no other call is waited on by the crawl), and the first
failure (down, slow, a refused script) switches the crawl to local models, said once in
the log and counted in ``sst/redis/down``. From then on Redis is pinged with backoff (from
RECONNECT_SECONDS to RECONNECT_MAX_SECONDS); when it answers the crawl shares again
(``sst/redis/reconnects``, and the time spent local in ``sst/redis/local_seconds``).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Coroutine, Optional

from sst_cleaner.scrapy._redact import redact_url
from sst_cleaner.scrapy._redis_store import RedisFleet, redacted

logger = logging.getLogger(__name__)

#: after a failure, Redis is pinged after RECONNECT_SECONDS, then backing off to
#: RECONNECT_MAX_SECONDS: a fleet is back to sharing within seconds of Redis coming back,
#: and a dead Redis sees one ping per worker every few seconds
RECONNECT_SECONDS = 0.5
RECONNECT_MAX_SECONDS = 8.0


def sleep(seconds: float) -> Any:
    """A Deferred fired after ``seconds`` (awaited by the fleet's coroutines)."""
    from twisted.internet import reactor, task

    return task.deferLater(reactor, seconds, lambda: None)


class RedisLink:
    """Owns the Redis calls' threads and the connection's health: whether Redis is down,
    the outages counted (one per failure after the last reconnect: ``epoch``), the pings
    with backoff while it is down, and the time the crawl spent on local models.

    ``on_down()`` runs when an outage starts, ``on_back()`` when Redis answers again."""

    def __init__(
        self,
        fleet: RedisFleet,
        deferred: Callable[[Any], Any],
        inc: Callable[..., None],
        on_down: Callable[[], None],
        on_back: Callable[[], None],
    ):
        self.fleet, self.config = fleet, fleet.config
        self._deferred = deferred  # a concurrent future -> a Deferred fired on the reactor thread
        self._inc, self._on_down, self._on_back = inc, on_down, on_back
        self._exec = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sst-redis")
        self.down = False
        # reconnects so far: a call that started before the last one and fails after it
        # failed on the outage already counted, not on the Redis that answers now
        self._epoch = 0
        self._down_since = 0.0
        self._retry_at = 0.0
        self._retry_delay = RECONNECT_SECONDS
        self._running: set[str] = set()

    def call(self, func: Callable[..., Any], *args: Any) -> Any:
        """A Deferred of ``func(*args)``, run in a Redis thread."""

        def in_thread() -> Any:
            epoch = self._epoch
            try:
                return func(*args)
            except Exception as exc:
                try:
                    exc.sst_epoch = epoch  # type: ignore[attr-defined]
                except AttributeError:
                    pass
                raise

        return self._deferred(self._exec.submit(in_thread))

    def send(self, func: Callable[..., Any], *args: Any) -> None:
        """``func(*args)`` in a Redis thread, nobody waiting for it; a failure is :meth:`failed`."""
        self.call(func, *args).addErrback(self.failed)

    async def attempt(self, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)`` in a Redis thread, awaited; None when it failed (see :meth:`failed`)."""
        try:
            return await self.call(func, *args)
        except Exception as exc:
            self.failed(exc)
            return None

    def start(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coroutine`` (its Deferred); its failure is :meth:`failed`."""
        from twisted.internet.defer import Deferred

        return Deferred.fromCoroutine(coroutine).addErrback(self.failed)

    def once(self, name: str, start: Callable[[], Any]) -> Optional[Any]:
        """``start()``'s Deferred, unless the one started under ``name`` has not fired yet (None)."""
        if name in self._running:
            return None
        self._running.add(name)
        return start().addBoth(self._fired, name)

    def _fired(self, result: Any, name: str) -> Any:
        self._running.discard(name)
        return result

    def failed(self, exc: Any) -> None:
        """Redis failed: this crawl goes on with local models (said once)."""
        exc = getattr(exc, "value", exc)
        self._inc("redis/errors")
        if self.down or getattr(exc, "sst_epoch", self._epoch) < self._epoch:
            return
        self.down = True
        self._down_since = time.monotonic()
        self._retry_delay = RECONNECT_SECONDS
        self._retry_at = self._down_since + self._retry_delay
        self._on_down()
        self._inc("redis/down")
        logger.warning(
            "sst: the shared model store (Redis at %s) failed: %s; this crawl goes on "
            "with local models (sites are learnt from this process's own pages) until it answers again",
            redact_url(self.config.url),
            self.said(exc),
        )

    def count_local_time(self) -> None:
        now = time.monotonic()
        self._inc("redis/local_seconds", round(now - self._down_since, 3))
        self._down_since = now

    def reconnect(self) -> None:
        """While down: ping Redis when the backoff is due; back to sharing when it answers."""
        if time.monotonic() < self._retry_at:
            return
        pinged = self.once("ping", lambda: self.call(self.fleet.ping))
        if pinged is not None:
            pinged.addCallbacks(self._answered, self._still_down).addErrback(self._still_down)

    def _answered(self, ok: Any) -> None:
        if not ok:
            raise ConnectionError("no PONG")
        self.count_local_time()
        self.down = False
        self._epoch += 1
        self._inc("redis/reconnects")
        logger.info(
            "sst: the shared model store (Redis at %s) answers again: back to sharing site models",
            redact_url(self.config.url),
        )
        self._on_back()

    def _still_down(self, failure: Any) -> None:
        self._inc("redis/errors")
        self._retry_delay = min(self._retry_delay * 2, RECONNECT_MAX_SECONDS)
        self._retry_at = time.monotonic() + self._retry_delay

    def said(self, exc: Any) -> str:
        """An exception as the log shows it: without the secrets of the Redis URL."""
        return redacted(repr(exc), self.config)

    def close(self) -> None:
        try:
            self._exec.shutdown(wait=True, cancel_futures=True)
        finally:
            self.fleet.close()
