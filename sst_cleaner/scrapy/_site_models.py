"""The per-crawl store of site models, shared by the spider middleware, the item pipeline
and anything else that needs a site's model during a crawl (e.g. a link extractor).

    store = active_store()          # the store of the running crawl, or None
    key = store.site_key(url)       # "host" (default), "domain", or SST_SITE_KEY(url)
    cleaner = store.get(key)        # SiteCleaner, or None while the site has no model

Thread model: all bookkeeping (dicts, counters) is touched only from the reactor thread.
CPU work (fitting, refining, cleaning: :meth:`SiteModelStore.build`, ``refine``, ``clean``)
runs, by ``SST_WORKERS``:

* ``"process"`` (default): in worker processes (:mod:`sst_cleaner.scrapy._workers`), each site
  pinned to one, which owns the site's ``SiteCleaner``. The store keeps a local copy of
  each model as it was built or loaded (``get`` returns it: link extractors and the
  fall-back to threads use it); refinements happen in the worker only, and the workers
  save the refined models at close. A worker that dies fails the one call it was
  running; the calls queued behind it go to a new worker, given its sites' models from
  the local copies; after ``MAX_RESTARTS`` crashes the work moves to threads.
* ``"thread"``: in the store's thread pool (:meth:`SiteModelStore.run`); every operation
  on one site's ``SiteCleaner`` holds that site's lock, because a method's ``partial_fit``
  may mutate state that ``clean`` reads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from typing import Any, Callable, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.scrapy._dispatch import Dispatcher
from sst_cleaner.scrapy._item_pages import ItemPages, PageRecord
from sst_cleaner.scrapy._settings import SSTConfig
from sst_cleaner.scrapy._site_keys import domain_key, host_key, resolve_site_key

# the site key functions moved to their own module; imported from here before
__all__ = [
    "PageRecord",
    "SiteModelStore",
    "active_store",
    "domain_key",
    "host_key",
    "model_filename",
    "resolve_site_key",
]

logger = logging.getLogger(__name__)

_ACTIVE: Optional["SiteModelStore"] = None


def active_store() -> Optional["SiteModelStore"]:
    """The model store of the crawl that is running now (None outside a crawl)."""
    return _ACTIVE


# -- model file names -----------------------------------------------------------------


_WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_PREFIX_MAX = 48


def model_filename(site_key: str) -> str:
    """A file name for a site's model that is safe whatever the key holds.

    ``site-<sanitized prefix>-<sha256[:20]>.json``: the prefix keeps only ``[a-z0-9_-]``
    (dots become ``_``, so no ``..`` and no hidden files), is cut to 48 characters, and
    the hash keeps distinct keys distinct. The constant ``site-`` start means the stem is
    never a Windows device name (CON, NUL, COM1...), and the name is never longer than
    ~80 characters, whatever the host string.
    """
    raw = site_key.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()[:20]
    prefix = "".join(ch if ch in _SAFE else "_" for ch in site_key.lower())[:_PREFIX_MAX].strip("_-")
    if prefix in _WINDOWS_RESERVED:  # cannot happen after "site-", kept as a second guard
        prefix = "_" + prefix
    return f"site-{prefix or 'x'}-{digest}.json"


# -- the store ---------------------------------------------------------------------------


class SiteModelStore:
    """Site models of one crawl, the item -> page map, and the CPU worker threads."""

    def __init__(self, config: SSTConfig, stats: Any = None):
        self.config = config
        self.stats = stats
        self._site_key = resolve_site_key(config.site_key)
        self._models: dict[str, SiteCleaner] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._dirty: set[str] = set()
        self._load_tried: set[str] = set()
        self._refine_budget: Any = None
        self._loading: dict[str, list] = {}  # site -> Deferreds waiting for its model file
        self.item_pages = ItemPages(self.max_stat)
        self._fallback: Optional[SiteCleaner] = None
        self.dispatch = Dispatcher(config, self._models, self.inc)
        # fail now, not at the first page: an unknown method or bad SST_PARAMS is a
        # configuration error the user must see before anything is crawled
        try:
            SiteCleaner(config.method, **config.params)
        except Exception as exc:
            raise ValueError(
                f"sst-cleaner: cannot create method {config.method!r} with SST_PARAMS {config.params!r}: {exc}"
            ) from exc

    # -- stats helper
    def inc(self, key: str, count: float = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"sst/{key}", count)

    def max_stat(self, key: str, value: float) -> None:
        if self.stats is not None:
            self.stats.max_value(f"sst/{key}", value)

    # -- lifecycle
    def open(self) -> None:
        global _ACTIVE
        _ACTIVE = self
        self.dispatch.start()

    def close(self) -> None:
        global _ACTIVE
        try:
            self.dispatch.stop_work()
            self.save_all()
        finally:
            self.item_pages.close()
            self.dispatch.shutdown()
            if _ACTIVE is self:
                _ACTIVE = None

    # -- site keys and models
    def site_key(self, url: str) -> str:
        """The site a URL belongs to (``SST_SITE_KEY``)."""
        return str(self._site_key(url))

    def get(self, site_key: str) -> Optional[SiteCleaner]:
        """The site's model, if it has one in memory (built, or loaded by
        :meth:`ensure_loaded`). Never reads a file: callers on the reactor thread use it."""
        return self._models.get(site_key)

    def ensure_loaded(self, site_key: str):
        """The first time a site is seen with ``SST_MODEL_DIR`` set: read its model file in
        a worker thread (bounded, checked: :mod:`~sst_cleaner.engine._model_file`). Returns a
        Deferred fired (never failed) once the model is in the store or was found
        unusable, or None when there is nothing to read. A file that cannot be used (a
        directory, unreadable, forged, over the size cap...) is logged, counted in
        ``sst/models_rejected`` and the site builds a new model."""
        if not self.config.model_dir or site_key in self._models:
            return None
        waiting = self._loading.get(site_key)
        if waiting is None:
            if site_key in self._load_tried:
                return None
            self._load_tried.add(site_key)
            waiting = self._loading[site_key] = []
            self.run(self._read_model, site_key).addBoth(self._model_read, site_key)
        from twisted.internet.defer import Deferred

        d: Deferred = Deferred()
        waiting.append(d)
        return d

    def has_model(self, site_key: str) -> bool:
        return site_key in self._models

    def put(self, site_key: str, cleaner: SiteCleaner) -> None:
        self._models[site_key] = cleaner
        self._dirty.add(site_key)

    def mark_dirty(self, site_key: str) -> None:
        self._dirty.add(site_key)

    def sites(self) -> list[str]:
        return list(self._models)

    def lock(self, site_key: str) -> threading.Lock:
        lock = self._locks.get(site_key)
        if lock is None:
            lock = self._locks[site_key] = threading.Lock()
        return lock

    def fallback(self) -> SiteCleaner:
        """An unfitted cleaner: the method's page-level fallback, for pages of sites
        without a model (evicted, failed, or fewer pages than ``SST_MIN_FIT_PAGES``)."""
        if self._fallback is None:
            self._fallback = SiteCleaner(self.config.method, **self.config.params)
        return self._fallback

    def model_path(self, site_key: str) -> Optional[str]:
        if not self.config.model_dir:
            return None
        return os.path.join(self.config.model_dir, model_filename(site_key))

    def from_dict(self, data: dict) -> SiteCleaner:
        """A cleaner from model data, with this crawl's method parameters and limits
        (``SST_PARAMS``), whatever the model was saved with."""
        return SiteCleaner.from_dict(data, params=self.config.params)

    def _read_model(self, site_key: str) -> tuple:
        """In a worker thread: (cleaner or None, model data, path, why it was refused)."""
        from sst_cleaner.engine._model_io import read_json_model

        path = self.model_path(site_key)
        try:
            if path is None or not os.path.lexists(path):
                return None, None, path, None
            data = read_json_model(path)
            model = self.from_dict(data)
        except Exception as exc:  # untrusted file: anything is a refusal, never a crash
            return None, None, path, exc
        if model.method != self.config.method:
            return None, None, path, f"made by method {model.method!r}, not {self.config.method!r}"
        return model, data, path, None

    def _model_read(self, outcome: Any, site_key: str) -> None:
        """On the reactor thread: install what :meth:`_read_model` found, wake the waiters."""
        try:
            if not isinstance(outcome, tuple):  # a Failure: _read_model cannot fail, kept safe
                outcome = (None, None, self.model_path(site_key), getattr(outcome, "value", outcome))
            model, data, path, why = outcome
            if why is not None:
                logger.warning(
                    "sst: ignoring unusable model file %s for site %s (%s); building a new model", path, site_key, why
                )
                self.inc("models_rejected")
                if isinstance(why, BaseException):
                    self.inc("errors")
            elif model is not None and site_key not in self._models:
                self._models[site_key] = model
                # the site's worker gets the checked data, not the path
                sent = self.dispatch.give_model(site_key, data, model.n_pages)
                if sent is not None:
                    sent.addErrback(
                        lambda f: logger.warning(
                            "sst: the worker could not take the model of %s: %s", site_key, f.value
                        )
                    )
                self.inc("models_loaded")
                logger.info("sst: loaded model for site %s (%d pages) from %s", site_key, model.n_pages, path)
        except Exception:
            logger.exception("sst: installing the model of site %s failed", site_key)
            self.inc("errors")
        finally:
            for d in self._loading.pop(site_key, []):
                d.callback(None)

    def save_all(self) -> None:
        if not self.config.model_dir:
            return
        remote = self.dispatch.save_in_workers(sorted(self._dirty), self.model_path)
        for site in sorted(self._dirty):
            model = self._models.get(site)
            if model is None:
                continue
            if site in remote:
                self.inc("models_saved")
                continue
            try:
                with self.lock(site):
                    path = self.model_path(site)
                    assert path is not None  # there is a model_dir: checked on entry
                    model.save(path)
                self.inc("models_saved")
            except Exception:
                logger.exception("sst: could not save the model of site %s", site)
                self.inc("errors")
        self._dirty.clear()

    # -- the item -> page map and the released bytes (see ItemPages)
    @property
    def out_bytes(self) -> int:
        """Bytes of pages whose items left the middleware and are not through the pipeline."""
        return self.item_pages.out_bytes

    def bind(self, item: Any, page: PageRecord) -> None:
        self.item_pages.bind(item, page)

    def note_callback_page(self, page: PageRecord) -> None:
        self.item_pages.note_callback_page(page)

    def callback_page(self, url: Any) -> Optional[PageRecord]:
        return self.item_pages.callback_page(url)

    def page_for(self, item: Any) -> Optional[PageRecord]:
        return self.item_pages.page_for(item)

    def forget(self, item: Any) -> None:
        self.item_pages.forget(item)

    def item_out(self, item: Any) -> Any:
        return self.item_pages.item_out(item)

    def item_done(self, page: Any) -> None:
        self.item_pages.item_done(page)

    def wait_out_bytes(self, limit: int, timeout: float):
        return self.item_pages.wait_out_bytes(limit, timeout)

    def release_out_waiters(self) -> None:
        self.item_pages.release_out_waiters()

    # -- the three kinds of CPU work
    def build(self, site: str, pages: list[PageRecord]):
        """Fit ``site``'s model on ``pages``; a Deferred of ``(seconds, share)`` (see
        :func:`~sst_cleaner.scrapy._workers.fit_site`), fired once the model is in the store."""
        from sst_cleaner.scrapy._workers import fit_site

        cfg = self.config
        fields = [p.fields for p in pages]
        d = self.dispatch.call(site, "fit", (fields,), lambda: fit_site(cfg.method, cfg.params, fields))

        def built(result: tuple):
            if isinstance(result[0], SiteCleaner):  # fitted in a thread
                cleaner, seconds, share = result
                self.put(site, cleaner)
                return seconds, share
            seconds, share, data = result  # fitted in the site's worker: a local copy

            def keep(cleaner: SiteCleaner) -> tuple:
                self.put(site, cleaner)
                self.dispatch.remote_pages[site] = cleaner.n_pages
                return seconds, share

            return self.run(self.from_dict, data).addCallback(keep)

        return d.addCallback(built)

    def model_pages(self, site: str) -> int:
        """Pages the site's model has learnt from (0: no model)."""
        model = self.get(site)
        if model is None:
            return 0
        return max(model.n_pages, self.dispatch.remote_pages.get(site, 0))

    def refine(self, site: str, page: PageRecord):
        """``partial_fit`` of the site's model with ``page``; a Deferred fired when done."""
        from sst_cleaner.scrapy._workers import REFINE_SKIPPED, refine_site

        model, lock = self.get(site), self.lock(site)
        if self._refine_budget is None:
            from sst_cleaner.engine._refine_budget import RefineBudget

            self._refine_budget = RefineBudget()  # the thread mode's share
        budget = self._refine_budget

        def done(n_pages: Optional[int]) -> Optional[int]:
            if n_pages == REFINE_SKIPPED:
                self.inc("refinements_skipped")
                return None
            if n_pages is not None and site in self.dispatch.remote_pages:
                self.dispatch.remote_pages[site] = max(self.dispatch.remote_pages[site], n_pages)
            self.mark_dirty(site)
            return n_pages

        return self.dispatch.call(
            site, "refine", page.fields, lambda: refine_site(model, *page.fields, lock=lock, budget=budget)
        ).addCallback(done)

    def clean(self, page: PageRecord, sentences: bool = False, blocks: bool = False, outputs: tuple = ()):
        """Clean ``page`` with its site's model (the page-level fallback if the site has
        none); a Deferred of :class:`~sst_cleaner.scrapy._workers.CleanFields` (with the
        ``outputs`` of :func:`~sst_cleaner.scrapy._settings.outputs_of`)."""
        from sst_cleaner.scrapy._workers import choose_cleaner, clean_page

        model = self.get(page.site) if page.site else None
        cleaner, site_model = choose_cleaner(model, self.fallback)
        lock = self.lock(page.site if model is not None else "\0fallback")
        args = page.fields + (sentences, blocks, tuple(outputs))
        return self.dispatch.call(page.site, "clean", args, lambda: clean_page(cleaner, site_model, *args, lock=lock))

    def run(self, func: Callable[..., Any], *args: Any):
        """Run ``func(*args)`` in the store's worker threads; a Deferred fired on the
        reactor thread with its result (works with any Twisted reactor)."""
        return self.dispatch.run(func, *args)
