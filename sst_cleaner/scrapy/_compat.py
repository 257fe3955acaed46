"""Every place the Scrapy layer leans on Scrapy internals or on one Scrapy version's API.

The add-on supports Scrapy >= 2.13. Scrapy has no public hook for two things the middleware
needs (handing items to the item pipelines itself, and acting between "the spider is
closing" and "the item pipelines are closed"), so it uses the engine's scraper, whose API
moved from Deferreds (2.13) to coroutines (2.14). Each function says which versions need
it and why; when support for a version ends, its branch goes here and nowhere else.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Optional

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future

logger = logging.getLogger(__name__)


def engine_scraper(crawler: Any) -> Optional[Any]:
    """The engine's scraper (``crawler.engine.scraper``), or None while there is no engine.

    All versions: the scraper is not public API, but it is the only object that runs an
    item through the item pipelines, ``item_scraped`` and feed exports as Scrapy does."""
    return getattr(getattr(crawler, "engine", None), "scraper", None)


def shared_queue(crawler: Any) -> bool:
    """Whether the crawl's scheduler keeps its requests outside this process (e.g.
    scrapy-redis): there any worker may pop a request, and it must be serializable.

    All versions: the scheduler is reachable only through the engine's private slot
    (``engine._slot.scheduler``); Scrapy has no public accessor for it."""
    engine = getattr(crawler, "engine", None)
    slot = getattr(engine, "_slot", None)
    scheduler = getattr(slot, "scheduler", None)
    return scheduler is not None and type(scheduler).__module__.startswith("scrapy_redis")


def hook_scraper_close(scraper: Any, before_close: Callable[[], Awaitable[None]]) -> None:
    """Make the scraper await ``before_close()`` before it closes the spider (and with it
    the item pipelines), by wrapping its close method on this instance only.

    Scrapy >= 2.14: the engine awaits ``scraper.close_spider_async()``.
    Scrapy 2.13: the engine calls ``scraper.close_spider()``, which returns a Deferred.
    Each one the scraper's class has is wrapped, since the version's engine picks which
    to call. The class is asked, not the instance: the class says what this Scrapy
    version has, whatever has been set on the instance."""
    if hasattr(type(scraper), "close_spider_async"):
        original_async = scraper.close_spider_async

        async def close_spider_async(*args: Any, **kwargs: Any) -> Any:
            await before_close()
            return await original_async(*args, **kwargs)

        scraper.close_spider_async = close_spider_async
    if hasattr(type(scraper), "close_spider"):
        original = scraper.close_spider

        def close_spider(*args: Any, **kwargs: Any) -> Any:
            d = deferred_from_coro(before_close())
            d.addBoth(lambda _: original(*args, **kwargs))
            return d

        scraper.close_spider = close_spider


async def start_itemproc(scraper: Any, item: Any) -> None:
    """Send one item through the scraper's item path (pipelines, ``item_scraped``, feed
    exports) and wait until it is through.

    Scrapy >= 2.14: ``start_itemproc_async`` is a coroutine.
    Scrapy 2.13: ``start_itemproc``; what it returns (a Deferred or an awaitable) is
    waited on either way."""
    if hasattr(scraper, "start_itemproc_async"):
        await scraper.start_itemproc_async(item, response=None)
        return
    result = scraper.start_itemproc(item, response=None)
    if hasattr(result, "addCallback"):
        await maybe_deferred_to_future(result)
    elif result is not None:
        await result


def close_spider(crawler: Any, reason: str) -> None:
    """Ask the engine to close the spider with ``reason``, without waiting for it (the
    caller may be inside the spider output the close waits for). A spider already closing
    stays closing with its first reason.

    Scrapy >= 2.14: ``engine.close_spider_async(reason=...)`` is a coroutine.
    Scrapy 2.13: ``engine.close_spider(spider, reason)`` returns a Deferred. There the
    spider opens before the engine starts, and a spider closed in between makes the
    crawler stop an engine that is not running, which raises ("Engine not running") after
    the close; so such a close waits until the engine runs (Scrapy 2.14 checks first)."""
    engine = getattr(crawler, "engine", None)
    if engine is None:
        return
    if hasattr(engine, "close_spider_async"):
        d = deferred_from_coro(engine.close_spider_async(reason=reason))
    elif not engine.running:
        _close_once_started(crawler, reason)
        return
    else:
        d = engine.close_spider(crawler.spider, reason)
    d.addErrback(lambda f: logger.error("sst: closing the spider failed: %s", f.value))


def _close_once_started(crawler: Any, reason: str) -> None:
    """Scrapy 2.13: close the spider with ``reason`` once its engine runs.

    The engine sends ``engine_started`` before it marks itself running, and marks it
    without giving the reactor a turn; so the close is called from the reactor's next
    turn after the signal."""
    from twisted.internet import reactor

    def started() -> None:
        crawler.signals.disconnect(started, signal=signals.engine_started)
        # IReactorTime declares callLater zope-style, without self: mypy shifts the arguments by one
        reactor.callLater(0, close_spider, crawler, reason)  # type: ignore[arg-type]

    crawler.signals.connect(started, signal=signals.engine_started, weak=False)
