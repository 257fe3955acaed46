"""Item pipeline: writes each item's clean text, from the site model of the page it came from.

The spider does not put HTML in its items: the spider middleware remembers which page
each item came from (:meth:`SiteModelStore.bind`), and guarantees the page's site has a
model (or has been given up to the page-level fallback) before the item gets here, so
this pipeline never waits for a model to be built.

Cleaning a page is CPU work (parse + one pass of the model), a few milliseconds for a
usual page but unbounded for a huge one, so it runs in the store's worker threads
(``SST_THREADS``) and the reactor only awaits the result: downloads go on while pages
are cleaned. Items of the same page share one cleaning.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from .result import INFORMATIVE, CleanResult
from .settings import load_config
from .site_models import PageRecord

logger = logging.getLogger(__name__)


class SSTPipeline:
    """Maps each item's page onto its site model and writes ``SST_TEXT_FIELD`` (and the
    optional ``SST_SENTENCES_FIELD`` / ``SST_BLOCKS_FIELD``)."""

    def __init__(self, crawler: Any):
        config = load_config(crawler.settings)
        if not config.enabled:
            raise NotConfigured("SST_ENABLED is False")
        from .middleware import get_store

        self.crawler = crawler
        self.config = config
        self.store = get_store(crawler)
        self._class_ok: dict[type, Optional[str]] = {}
        self._out_fields = [f for f in (config.text_field, config.sentences_field, config.blocks_field) if f]

    @classmethod
    def from_crawler(cls, crawler: Any) -> "SSTPipeline":
        return cls(crawler)

    def open_spider(self, spider: Any = None) -> None:
        self.store.open()

    # -- field checks ----------------------------------------------------------------------
    def _check_class(self, item: Any) -> Optional[str]:
        """None if the item's class can take our fields, else the error message (once)."""
        cls = type(item)
        if cls in self._class_ok:
            return self._class_ok[cls]
        names = ItemAdapter.get_field_names_from_class(cls)
        message = None
        if names is not None:  # dicts take any key; declared classes only their fields
            missing = [f for f in self._out_fields if f not in names]
            if missing:
                message = (f"sst-cleaner: item class {cls.__module__}.{cls.__qualname__} has no field "
                           f"{', '.join(repr(m) for m in missing)} (set by SST_TEXT_FIELD / "
                           f"SST_SENTENCES_FIELD / SST_BLOCKS_FIELD). Declare it, e.g. "
                           f"`{missing[0]} = scrapy.Field()` or a dataclass field with a default, "
                           f"or point the setting at an existing field. Items of this class are "
                           f"passed on uncleaned.")
                logger.error(message)
        self._class_ok[cls] = message
        return message

    # -- the item --------------------------------------------------------------------------
    async def process_item(self, item: Any, spider: Any = None) -> Any:
        page = self.store.page_for(item)
        if self._check_class(item) is not None:
            self.store.inc("items_missing_field")
            self.store.inc("errors")
            return item
        adapter = ItemAdapter(item)
        cfg = self.config
        html = None
        if cfg.source_field:
            value = adapter.get(cfg.source_field)
            if isinstance(value, (str, bytes)) and value:
                html = value
        if page is None and html is None:
            self.store.inc("items_without_page")
            return item
        if html is not None:
            url = page.url if page is not None else _as_url(adapter.get(cfg.url_field) if cfg.url_field else None)
            page = PageRecord(url or "", html if isinstance(html, bytes) else html.encode("utf-8"),
                              None if isinstance(html, bytes) else "utf-8",
                              self.store.site_key(url) if url else "")
        try:
            result = await self._clean(page)
        except Exception as exc:
            logger.error("sst: cleaning %s failed: %r; item passed on uncleaned", page.url, exc)
            self.store.inc("errors")
            return item
        try:
            adapter[cfg.text_field] = result.text
            if cfg.sentences_field:
                adapter[cfg.sentences_field] = list(result.sentences)
            if cfg.blocks_field:
                adapter[cfg.blocks_field] = [b.to_dict() for b in result.blocks if b.label == INFORMATIVE]
        except Exception as exc:  # e.g. a frozen dataclass: report, never lose the item
            logger.error("sst: cannot write the clean text into %s item: %r", type(item).__name__, exc)
            self.store.inc("errors")
            return item
        self.store.inc("items_cleaned")
        return item

    async def _clean(self, page: PageRecord) -> CleanResult:
        """Clean ``page`` once (in a worker thread), sharing the result among its items."""
        cached = page.clean_result
        if isinstance(cached, CleanResult):
            return cached
        if isinstance(cached, list):  # another item of this page is being cleaned: wait
            waiter: defer.Deferred = defer.Deferred()
            cached.append(waiter)
            return await maybe_deferred_to_future(waiter)
        model = self.store.get(page.site) if page.site else None
        if model is None:
            model = self.store.fallback()
            self.store.inc("fallback_cleans")
            lock = self.store.lock("\0fallback")
        else:
            lock = self.store.lock(page.site)

        def work() -> CleanResult:
            prepared = page.prepare()
            with lock:
                return model.clean(prepared)

        waiters: list = []
        page.clean_result = waiters
        try:
            result = await maybe_deferred_to_future(self.store.run(work))
        except Exception as exc:
            page.clean_result = None
            for waiter in waiters:
                waiter.errback(exc)
            raise
        page.clean_result = result
        for waiter in waiters:
            waiter.callback(result)
        return result


def _as_url(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None
