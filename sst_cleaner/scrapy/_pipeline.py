"""Item pipeline: writes each item's clean text, from the site model of the page it came from.

The spider does not put HTML in its items: the spider middleware remembers which page
each item came from (:meth:`SiteModelStore.bind`), and guarantees the page's site has a
model (or has been given up to the page-level fallback) before the item gets here, so
this pipeline never waits for a model to be built.

Cleaning a page is CPU work (parse + one pass of the model), a few milliseconds for a
usual page but unbounded for a huge one, so it runs in the page's site's worker process
(``SST_WORKERS = "process"``) or in a worker thread (``"thread"``, ``SST_THREADS``), and
the reactor only awaits the result: downloads go on while pages are cleaned. Items of
the same page share one cleaning.

Every item leaves with its outcome in ``SST_STATUS_FIELD`` (``sst_status``): how its text
was made, or why it has none. Nothing here drops an item: a failure is flagged, counted
and logged once per cause (:class:`~sst_cleaner.scrapy._middleware.ErrorReporter`), and the item
passes on.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, cast

from itemadapter import ItemAdapter
from scrapy.utils.defer import maybe_deferred_to_future

from sst_cleaner.scrapy._explain_sample import ExplainSample
from sst_cleaner.scrapy._item_pages import PageClean, PageRecord
from sst_cleaner.scrapy._settings import component_config, outputs_of
from sst_cleaner.scrapy._workers import CleanFields

logger = logging.getLogger(__name__)

#: ``sst_status`` values: the item's text came from its site's model / from the method's
#: page-level fallback (no site model: evicted, fit failed, too few pages); cleaning was
#: cut short (``CleanResult.status``, see :mod:`sst_cleaner.engine._limits`); cleaning raised or the
#: fields could not be written (the item passes on uncleaned); no source page; the source
#: response was not HTML.
STATUS_CLEANED = "cleaned"
STATUS_FALLBACK = "fallback"
STATUS_OVER_BUDGET = "over_budget"
STATUS_TRUNCATED = "truncated"
STATUS_ERROR = "error"
STATUS_NO_PAGE = "no_page"
STATUS_NON_HTML = "non_html"
#: the site's model kept (almost) nothing of the page: the text is the page-level fallback's
STATUS_SITE_EMPTY = "site_empty"
#: method ``cehtd`` found no layout in the page (not rendered): the text is ``cetd``'s
STATUS_NO_LAYOUT = "no_layout"
#: the method kept no text of a page that holds prose: the text is a page-level fallback's
STATUS_EMPTY_FALLBACK = "empty_fallback"
STATUSES = (
    STATUS_CLEANED,
    STATUS_FALLBACK,
    STATUS_OVER_BUDGET,
    STATUS_TRUNCATED,
    STATUS_ERROR,
    STATUS_NO_PAGE,
    STATUS_NON_HTML,
    STATUS_SITE_EMPTY,
    STATUS_NO_LAYOUT,
    STATUS_EMPTY_FALLBACK,
)


class SSTPipeline:
    """Maps each item's page onto its site model and writes ``SST_TEXT_FIELD`` (and the
    optional ``SST_SENTENCES_FIELD`` / ``SST_BLOCKS_FIELD``), and the outcome in
    ``SST_STATUS_FIELD``."""

    def __init__(self, crawler: Any):
        config = component_config(crawler.settings)
        from sst_cleaner.scrapy._crawl_state import NON_HTML, get_errors, get_store

        self.crawler = crawler
        self.config = config
        self.status_field = config.status_field
        self.store = get_store(crawler)
        self.errors = get_errors(crawler)
        self._non_html = NON_HTML
        self._class_ok: dict[type, Optional[str]] = {}
        self._status_ok: dict[type, bool] = {}
        self._optional_ok: dict[type, dict[str, bool]] = {}
        #: (setting, field name) of every optional output field that is on
        self._optional = [
            (setting, name)
            for setting, name in (
                ("SST_SENTENCES_FIELD", config.sentences_field),
                ("SST_BLOCKS_FIELD", config.blocks_field),
                ("SST_MARKDOWN_FIELD", config.markdown_field),
                ("SST_HTML_FIELD", config.html_field),
                ("SST_METADATA_FIELD", config.metadata_field),
            )
            if name
        ]
        # whether the status field was named by the user rather than left at its default
        self._status_field_named = "SST_STATUS_FIELD" in crawler.settings
        self._outputs = outputs_of(config)
        self._truncated_sites: set = set()
        self.explain: Optional[ExplainSample] = (
            ExplainSample(config.explain_dir, config.explain_pages, self.store) if config.explain_dir else None
        )

    @classmethod
    def from_crawler(cls, crawler: Any) -> Any:
        """The pipeline, or with a bad ``SST_*`` setting the stand-in that stops the crawl
        (see :class:`~sst_cleaner.scrapy._crawl_state.BadSettings`)."""
        try:
            return cls(crawler)
        except ValueError as exc:
            from sst_cleaner.scrapy._crawl_state import refuse_bad_settings

            return refuse_bad_settings(crawler, exc)

    def open_spider(self, spider: Any = None) -> None:
        self.store.open()

    def close_spider(self, spider: Any = None) -> Any:
        """Write the explain report (``SST_EXPLAIN_DIR``), in a thread: the close waits for
        it, the reactor does not."""
        if self.explain is None:
            return None
        name = getattr(spider, "name", None) or getattr(getattr(self.crawler, "spider", None), "name", None)
        return self.explain.write(name)

    # -- field checks ----------------------------------------------------------------------
    def _check_class(self, item: Any) -> Optional[str]:
        """None if the item's class has ``SST_TEXT_FIELD``, else the error message (logged
        once per class): the text is what the add-on is for, so its items pass uncleaned."""
        cls = type(item)
        if cls in self._class_ok:
            return self._class_ok[cls]
        names = ItemAdapter.get_field_names_from_class(cls)
        message = None
        field = self.config.text_field
        if names is not None and field not in names:  # dicts take any key; declared classes only their fields
            message = (
                f"sst-cleaner: item class {cls.__module__}.{cls.__qualname__} has no field {field!r} "
                f"(SST_TEXT_FIELD). Declare it, e.g. `{field} = scrapy.Field()` or a dataclass "
                f"field with a default, or point the setting at an existing field. Items of this "
                f"class are passed on uncleaned."
            )
            logger.error(message)
        self._class_ok[cls] = message
        return message

    def _optional_fields(self, item: Any) -> dict[str, bool]:
        """Which optional output fields (SST_SENTENCES_FIELD ... SST_METADATA_FIELD) the
        item's class can take, by setting name.

        Each is an addition to the text: a class without one still gets its text and the
        fields it has. The missing one is warned about once per class and each item that
        misses it is counted in ``sst/items_missing_optional_field``."""
        cls = type(item)
        takes = self._optional_ok.get(cls)
        if takes is None:
            names = ItemAdapter.get_field_names_from_class(cls)
            takes = {setting: names is None or name in names for setting, name in self._optional}
            missing = [(setting, name) for setting, name in self._optional if not takes[setting]]
            if missing:
                logger.warning(
                    "sst-cleaner: item class %s.%s has no field %s, so its items get their text "
                    "without it; declare the field, or unset the setting",
                    cls.__module__,
                    cls.__qualname__,
                    ", ".join(f"{name!r} ({setting})" for setting, name in missing),
                )
            self._optional_ok[cls] = takes
        return takes

    def _takes_status(self, item: Any) -> bool:
        """Whether the item's class has the status field (said once per class if not).

        A class without it still gets its text: the flag is an addition, counted in
        ``sst/items_without_status_field`` when it cannot be written. The field is on by
        default, and an item class like the README's (``url`` and ``text``) has none: that
        is an INFO line, not a warning on every crawl. A field the user named is a
        WARNING: the name was meant to be written.
        """
        cls = type(item)
        ok = self._status_ok.get(cls)
        if ok is None:
            names = ItemAdapter.get_field_names_from_class(cls)
            ok = names is None or self.status_field in names
            if not ok:
                logger.log(
                    logging.WARNING if self._status_field_named else logging.INFO,
                    "sst-cleaner: item class %s.%s has no %r field (SST_STATUS_FIELD), so "
                    "its items are not flagged with their cleaning outcome; declare the "
                    "field to have it, or set SST_STATUS_FIELD = None to turn the flag off",
                    cls.__module__,
                    cls.__qualname__,
                    self.status_field,
                )
            self._status_ok[cls] = ok
        return ok

    def _flag(self, item: Any, status: str) -> Any:
        """Write ``status`` into the item's status field (when it has one); returns the item."""
        self.store.inc(f"status/{status}")
        if self.status_field is None:
            return item
        if not self._takes_status(item):
            self.store.inc("items_without_status_field")
            return item
        try:
            ItemAdapter(item)[self.status_field] = status
        except Exception:  # e.g. a frozen dataclass; the write error is reported already
            self.store.inc("items_without_status_field")
        return item

    # -- the item --------------------------------------------------------------------------
    async def process_item(self, item: Any, spider: Any = None) -> Any:
        page = self.store.page_for(item)
        try:
            return await self._process_item(item, page)
        finally:
            self.store.item_done(page)  # its page no longer counts as released

    async def _process_item(self, item: Any, page: Any) -> Any:
        non_html = page is self._non_html
        if non_html:
            page = None
        if self._check_class(item) is not None:
            self.store.inc("items_missing_field")
            self.errors.count("field")
            return self._flag(item, STATUS_ERROR)
        adapter = ItemAdapter(item)
        cfg = self.config
        html = None
        if cfg.source_field:
            value = adapter.get(cfg.source_field)
            if isinstance(value, (str, bytes)) and value:
                html = value
        if page is None and html is None and not non_html and cfg.url_field:
            # items the spider middleware never saw (scrapy parse --pipelines)
            page = self.store.callback_page(adapter.get(cfg.url_field))
        if page is None and html is None:
            self.store.inc("items_without_page")
            return self._flag(item, STATUS_NON_HTML if non_html else STATUS_NO_PAGE)
        if html is not None:
            url = page.url if page is not None else _as_url(adapter.get(cfg.url_field) if cfg.url_field else None)
            page = PageRecord(
                url or "",
                html if isinstance(html, bytes) else html.encode("utf-8"),
                None if isinstance(html, bytes) else "utf-8",
                self.store.site_key(url) if url else "",
            )
        try:
            result, status = await self._clean(page)
        except Exception:  # reported by _clean, once per page
            return self._flag(item, STATUS_ERROR)
        takes = self._optional_fields(item)
        if not all(takes.values()):
            self.store.inc("items_missing_optional_field")
        try:
            adapter[cfg.text_field] = {"markdown": result.markdown, "html": result.html}.get(cfg.format, result.text)
            for setting, name, value in (
                ("SST_MARKDOWN_FIELD", cfg.markdown_field, result.markdown),
                ("SST_HTML_FIELD", cfg.html_field, result.html),
                ("SST_METADATA_FIELD", cfg.metadata_field, result.metadata),
            ):
                if name and takes[setting]:
                    adapter[name] = value
            # both are lists whenever their field is set: _clean() asks for them then
            if cfg.sentences_field and takes["SST_SENTENCES_FIELD"]:
                adapter[cfg.sentences_field] = list(cast(list, result.sentences))
            if cfg.blocks_field and takes["SST_BLOCKS_FIELD"]:
                adapter[cfg.blocks_field] = list(cast(list, result.blocks))
        except Exception as exc:  # e.g. a frozen dataclass: report, never lose the item
            self.errors.report(
                "write",
                exc,
                f"{type(item).__module__}.{type(item).__qualname__} item",
                "the item is passed on uncleaned",
            )
            return self._flag(item, STATUS_ERROR)
        self.store.inc("items_cleaned")
        return self._flag(item, status)

    async def _clean(self, page: PageRecord) -> tuple[CleanFields, str]:
        """Clean ``page`` once (in the site's worker process, or a worker thread), sharing
        the outcome among its items (see :class:`PageClean`):
        ``(result, status)``, or the exception for every item of the page.
        """
        if page.clean is not None:  # another item of this page is cleaned, or was
            return await maybe_deferred_to_future(page.clean.outcome())
        cfg = self.config
        clean = page.clean = PageClean()
        try:
            result = await maybe_deferred_to_future(
                self.store.clean(
                    page, sentences=bool(cfg.sentences_field), blocks=bool(cfg.blocks_field), outputs=self._outputs
                )
            )
        except Exception as exc:
            clean.failed(exc)
            which = "site" if page.site and self.store.has_model(page.site) else "fallback"
            self.errors.report(
                "clean", exc, f"page {page.url}, {which} model", "its items are passed on uncleaned, flagged 'error'"
            )
            raise
        if result.metadata_dropped:
            self.store.inc("metadata_fields_dropped", result.metadata_dropped)
        status = STATUS_CLEANED if result.site_model else STATUS_FALLBACK
        if not result.site_model:
            self.store.inc("fallback_cleans")
        if result.status in (
            STATUS_OVER_BUDGET,
            STATUS_TRUNCATED,
            STATUS_SITE_EMPTY,
            STATUS_NO_LAYOUT,
            STATUS_EMPTY_FALLBACK,
        ):
            status = result.status
        if status == STATUS_TRUNCATED:
            self._log_truncated(page)
        outcome = (result, status)
        if self.explain is not None:
            self.explain.offer(page)
        clean.done(outcome)
        return outcome

    def _log_truncated(self, page: PageRecord) -> None:
        """One warning per site the first time one of its pages is cut by a size cap:
        its items lose the text past the cut, and the user can raise the caps."""
        self.store.inc("pages_truncated")
        if page.site in self._truncated_sites:
            return
        self._truncated_sites.add(page.site)
        from sst_cleaner.engine._limits import Limits

        caps, _ = Limits.split_params(self.config.params)
        logger.warning(
            "sst: page %s (site %s) was cut by a size cap before cleaning: its items "
            "are flagged 'truncated' and miss the text past the cut. The caps are "
            "max_page_bytes %d, max_tags %d, max_elements %d, max_tiny_blocks %d, max_depth %d in this crawl "
            '(raise them in SST_PARAMS, e.g. {"max_elements": 80000}). Logged once per '
            "site; sst/pages_truncated counts them all.",
            page.url,
            page.site,
            caps.max_page_bytes,
            caps.max_tags,
            caps.max_elements,
            caps.max_tiny_blocks,
            caps.max_depth,
        )


def _as_url(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None
