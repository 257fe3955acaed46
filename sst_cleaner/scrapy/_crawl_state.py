"""What the spider middleware and the item pipeline of one crawl share: the site model
store, the error reporter, the marker of non-HTML pages and the stand-in for both when an
``SST_*`` setting is bad. Each is kept on the crawler and created by whichever component
asks first, so neither component imports the other.
"""

from __future__ import annotations

import collections
import logging
from typing import Any, AsyncIterator

from scrapy import signals

from sst_cleaner.scrapy._compat import close_spider
from sst_cleaner.scrapy._settings import load_config, store_url
from sst_cleaner.scrapy._site_models import SiteModelStore

# these log lines keep the logger name they were always written under (Scrapy prints it,
# and a crawl's logging settings may select it)
logger = logging.getLogger("sst_cleaner.scrapy._middleware")


class _NonHtmlPage:
    """Marker bound to items of non-HTML responses, so the pipeline can tell them
    (``sst_status = "non_html"``) from items that came from no response at all."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NON_HTML"


NON_HTML = _NonHtmlPage()


class ErrorReporter:
    """Counts the failures of one crawl per stage, and logs each distinct cause once.

    Why: one cause (a method bug, a site whose pages all trip the same parser corner)
    usually hits every page of a site, or of the crawl; one ERROR line with a traceback
    per page buries everything else in the log and costs I/O per page. So the first
    occurrence of a cause, (stage, exception type, message), is logged at ERROR with its
    traceback, later ones at DEBUG, and when the spider closes one WARNING per repeated
    cause gives its count. Every occurrence is counted in ``sst/errors`` and
    ``sst/errors/<stage>``.

    Distinct causes remembered are capped per stage (``max_causes``): messages that hold a
    URL or an offset make every failure "distinct", and memory must stay bounded; past
    the cap, new causes of that stage are logged at DEBUG and summed in the summary.
    """

    #: stage -> what failed, as the log line says it
    STAGES = {
        "record": "recording a page (site model look-up, holding)",
        "fit": "building a site model",
        "refine": "refining a site model",
        "clean": "cleaning a page",
        "write": "writing the clean fields into an item",
        "handover": "handing a held item to the item pipelines",
        "field": "an item class without the output field",
        "held_at_close": "items still held when the spider closed",
    }

    def __init__(self, stats: Any = None, max_causes: int = 50):
        self.stats = stats
        self.max_causes = max_causes
        self._causes: dict[tuple[str, str, str], list] = {}  # key -> [count, exc repr]
        self._per_stage: collections.Counter = collections.Counter()  # distinct causes kept
        self._overflow: collections.Counter = collections.Counter()  # occurrences past the cap

    def count(self, stage: str, n: int = 1) -> None:
        """Count ``n`` failures of ``stage`` without logging (the caller logs its own way)."""
        if self.stats is not None:
            self.stats.inc_value("sst/errors", n)
            self.stats.inc_value(f"sst/errors/{stage}", n)

    def report(self, stage: str, exc: BaseException, where: str = "", consequence: str = "") -> bool:
        """Count one failure; log it at ERROR if its cause is new, else at DEBUG.
        Returns whether it was logged at ERROR."""
        self.count(stage)
        message = str(exc)[:300]
        key = (stage, f"{type(exc).__module__}.{type(exc).__qualname__}", message)
        what = self.STAGES.get(stage, stage)
        entry = self._causes.get(key)
        if entry is None and self._per_stage[stage] < self.max_causes:
            self._per_stage[stage] += 1
            self._causes[key] = [1, repr(exc)[:300]]
            logger.error(
                "sst: %s failed%s: %r%s (further failures with this cause are logged "
                "at DEBUG and counted in sst/errors/%s)",
                what,
                f" ({where})" if where else "",
                exc,
                f"; {consequence}" if consequence else "",
                stage,
                exc_info=(type(exc), exc, exc.__traceback__),
            )
            return True
        if entry is None:
            self._overflow[stage] += 1
        else:
            entry[0] += 1
        logger.debug("sst: %s failed again%s: %r", what, f" ({where})" if where else "", exc)
        return False

    def summary(self) -> list[str]:
        """One line per cause seen more than once, and per stage past the cause cap."""
        lines = []
        for (stage, _, _), (n, text) in self._causes.items():
            if n > 1:
                lines.append(
                    f"sst: {self.STAGES.get(stage, stage)} failed {n} times with {text} (logged once at ERROR above)"
                )
        for stage, n in self._overflow.items():
            lines.append(
                f"sst: {self.STAGES.get(stage, stage)} failed {n} more times with causes "
                f"past the first {self.max_causes} (logged at DEBUG)"
            )
        return lines

    def log_summary(self, spider: Any = None, reason: str = "") -> None:
        for line in self.summary():
            logger.warning(line)


def get_errors(crawler: Any) -> ErrorReporter:
    """The crawl's shared :class:`ErrorReporter` (created on first use; its summary is
    logged when the spider closes)."""
    errors = getattr(crawler, "_sst_errors", None)
    if errors is None:
        errors = ErrorReporter(getattr(crawler, "stats", None))
        crawler._sst_errors = errors
        signals_ = getattr(crawler, "signals", None)
        if signals_ is not None:
            signals_.connect(errors.log_summary, signal=signals.spider_closed)
    return errors


#: the finish reason of a crawl stopped by a bad ``SST_*`` setting
BAD_SETTING_REASON = "sst_bad_setting"


class BadSettings:
    """Stands in for the middleware and the pipeline when an ``SST_*`` setting is bad.

    A component that raises while Scrapy builds it ends the crawl with an unretrieved task
    exception and a long traceback, and the command still exits 0: the cause is hard to
    find. A crawl that went on without cleaning would be worse: its items would lack their
    text. So the bad setting is one ERROR line naming it (and its valid values), and this
    stand-in stops the crawl before anything is requested: its ``process_start`` drops the
    start requests and it closes the spider when it opens (finish reason
    ``sst_bad_setting``). Items reaching it pass unchanged."""

    def __init__(self, crawler: Any, error: Exception):
        self.crawler = crawler
        self.error = error
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return
        yield  # an async generator that yields nothing

    def process_item(self, item: Any, spider: Any = None) -> Any:
        return item

    def spider_opened(self, spider: Any = None) -> None:
        close_spider(self.crawler, BAD_SETTING_REASON)


def refuse_bad_settings(crawler: Any, error: Exception) -> BadSettings:
    """The crawl's :class:`BadSettings` stand-in; its error is logged once, whichever
    component meets it first."""
    refusal = getattr(crawler, "_sst_bad_settings", None)
    if refusal is None:
        message = str(error)
        if not message.startswith("sst-cleaner:"):
            message = f"sst-cleaner: {message}"
        logger.error("%s; the crawl is stopped", message)
        refusal = crawler._sst_bad_settings = BadSettings(crawler, error)
    return refusal


def get_store(crawler: Any) -> SiteModelStore:
    """The crawl's shared :class:`SiteModelStore` (created on first use)."""
    store = getattr(crawler, "_sst_store", None)
    if store is None:
        config = load_config(crawler.settings)
        store = _make_store(config, crawler)
        crawler._sst_store = store
    return store


def _make_store(config: Any, crawler: Any) -> SiteModelStore:
    """The in-process store, or with ``SST_MODEL_STORE`` the fleet's shared one (the only
    path that imports the Redis client)."""
    if store_url(crawler.settings) is None:
        return SiteModelStore(config, crawler.stats)
    from sst_cleaner.scrapy._fleet import SharedSiteModelStore

    # the spider's name fills in the keys' namespace (SST_REDIS_NAMESPACE)
    spider = getattr(crawler.spidercls, "name", None)
    return SharedSiteModelStore(config, crawler.stats, crawler.settings, spider=spider)
