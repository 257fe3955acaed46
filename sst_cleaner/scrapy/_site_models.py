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
  fall-back to threads use it), at most ``SST_MAX_MODELS`` of them in memory
  (:mod:`~sst_cleaner.scrapy._local_models`); refinements happen in the worker only, and
  the workers save the refined models at close. A worker that dies fails the one call it was
  running; the calls queued behind it go to a new worker, given its sites' models from
  the local copies; after ``MAX_RESTARTS`` crashes the work moves to threads.
* ``"thread"``: in the store's thread pool (:meth:`SiteModelStore.run`); every operation
  on one site's ``SiteCleaner`` holds that site's lock, because a method's ``partial_fit``
  may mutate state that ``clean`` reads. The local copy is the model here; an evicted one
  is written out with its refinements.

The local copies are the one exception to "reactor thread only": threads look them up
too, so they keep their own lock (see :mod:`~sst_cleaner.scrapy._local_models`).

:class:`SiteModelStore` is the face the crawl's components use; behind it, each concern
has its own module: site keys (:mod:`~sst_cleaner.scrapy._site_keys`), model files
(:mod:`~sst_cleaner.scrapy._model_files`), the dispatch of CPU work to processes or
threads with crash recovery (:mod:`~sst_cleaner.scrapy._dispatch`), and the item -> page
map with the released-bytes accounting (:mod:`~sst_cleaner.scrapy._item_pages`).
"""

from __future__ import annotations

import logging
import threading
from enum import Enum
from typing import Any, Callable, NamedTuple, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.scrapy._dispatch import Dispatcher
from sst_cleaner.scrapy._item_pages import ItemPages, PageRecord
from sst_cleaner.scrapy._local_models import LocalModels
from sst_cleaner.scrapy._model_files import ModelFiles, model_filename
from sst_cleaner.scrapy._settings import SSTConfig
from sst_cleaner.scrapy._site_keys import domain_key, host_key, resolve_site_key

# the names that moved to the modules above, for code that imports them from here
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


def _check_worker_init(path: str) -> None:
    """Fail now if ``SST_WORKER_INIT`` names no module: every worker process would die at
    its start, and the crawl fall back to threads after the restarts. The module itself is
    only found, not run: its function is meant for the workers."""
    from importlib.util import find_spec

    module, _, _ = path.rpartition(".")
    try:
        found = bool(module) and find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ValueError(f"sst-cleaner: SST_WORKER_INIT {path!r}: no module {module or path!r} to import")


class ModelSource(Enum):
    """Where the model of a finished build came from."""

    FITTED = "fitted"  # fitted by this process (or its worker) on the pages
    FLEET = "fleet"  # the fleet's published model, loaded
    NONE = "none"  # none: too few pages; the site's pages get the page-level fallback


class Built(NamedTuple):
    """A finished build: the fit's seconds and the share of the sample's text judged
    template (both 0 when the model was not fitted here), and where the model came from."""

    seconds: float
    share: float
    source: ModelSource = ModelSource.FITTED


#: a build that ended without a model
NOT_BUILT = Built(0.0, 0.0, ModelSource.NONE)


class FitOverBudget(Exception):
    """A site's fit ran past ``Limits.site_time_budget`` (or, for a method that learns a
    page straight into its model, a page past ``page_time_budget``): the fit ended there,
    once, and its half-built model was discarded. The build ends as a failed one (the
    site's pages get the page-level fallback), logged and counted as an overrun rather
    than as an error."""

    def __init__(self, site: str, n_pages: int, seconds: float):
        super().__init__(f"the fit of site {site} on {n_pages} pages overran its time budget after {seconds:.2f}s")
        self.site = site


# -- the store ---------------------------------------------------------------------------


class SiteModelStore:
    """Site models of one crawl, the item -> page map, and the CPU work on them.

    Owns the local model copies (``get``, ``put``) and the sites' locks; the rest is
    delegated: :attr:`files` (:class:`~sst_cleaner.scrapy._model_files.ModelFiles`),
    :attr:`dispatch` (:class:`~sst_cleaner.scrapy._dispatch.Dispatcher`) and
    :attr:`item_pages` (:class:`~sst_cleaner.scrapy._item_pages.ItemPages`).
    """

    def __init__(self, config: SSTConfig, stats: Any = None):
        self.config = config
        self.stats = stats
        self._site_key = resolve_site_key(config.site_key)
        self._locks: dict[str, threading.Lock] = {}
        # in thread mode the copy is the model, saved to SST_MODEL_DIR at the close: an
        # evicted one goes there too; in process mode SST_MODEL_DIR holds the workers'
        # refined models, which a copy as it was built must not overwrite
        self._models = LocalModels(
            config.max_models,
            config.model_dir if config.workers == "thread" else None,
            lambda path: SiteCleaner.load(path, params=config.params),
            self.lock,
        )
        self._refine_budget: Any = None
        self.item_pages = ItemPages(self.max_stat)
        self._fallback: Optional[SiteCleaner] = None
        self.dispatch = Dispatcher(config, self._models, self.inc)
        self.files = ModelFiles(config, self._models, self.dispatch, self.inc, self.lock)
        # fail now, not at the first page: an unknown method or bad SST_PARAMS is a
        # configuration error the user must see before anything is crawled
        from sst_cleaner.engine._registry import method_class

        try:
            method_class(config.method)
        except ValueError as exc:
            raise ValueError(f"sst-cleaner: SST_METHOD: {exc}") from None
        try:
            SiteCleaner(config.method, **config.params)
        except Exception as exc:
            raise ValueError(
                f"sst-cleaner: SST_PARAMS {config.params!r} do not fit method {config.method!r}: {exc}"
            ) from exc
        if config.worker_init and config.workers == "process":
            _check_worker_init(config.worker_init)

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
            self._models.flush()  # evicted models on disk before the saving reads them
            self.files.save_all()
        finally:
            self.item_pages.close()
            self.dispatch.shutdown()  # after the workers' last reads of evicted models
            self._models.close()
            self._report_models()
            if _ACTIVE is self:
                _ACTIVE = None

    def finish(self) -> Any:
        """Work to end before :meth:`close` (a fleet's last merges): a Deferred, or None."""
        return None

    # -- site keys and models
    def site_key(self, url: str) -> str:
        """The site a URL belongs to (``SST_SITE_KEY``)."""
        return str(self._site_key(url))

    def get(self, site_key: str) -> Optional[SiteCleaner]:
        """The site's model (built, or loaded by :meth:`ensure_loaded`), or None. One
        evicted by ``SST_MAX_MODELS`` is read back from its file, on the calling thread,
        through the bounded loader."""
        return self._models.get(site_key)

    def ensure_loaded(self, site_key: str):
        """The first time a site is seen with ``SST_MODEL_DIR`` set: read its model file in
        a worker thread (bounded, checked: :mod:`~sst_cleaner.engine._model_file`). Returns a
        Deferred fired (never failed) once the model is in the store or was found
        unusable, or None when there is nothing to read. A file that cannot be used (a
        directory, unreadable, forged, over the size cap...) is logged, counted in
        ``sst/models_rejected`` and the site builds a new model."""
        return self.files.ensure_loaded(site_key)

    def has_model(self, site_key: str) -> bool:
        return site_key in self._models

    def put(self, site_key: str, cleaner: SiteCleaner) -> None:
        self._models.put(site_key, cleaner)
        self.files.dirty.add(site_key)
        self._report_models()

    def _report_models(self) -> None:
        """The local copies' evictions, reloads and losses into the crawl's stats (kept
        by the copies themselves until now: threads count them too)."""
        counts, peak = self._models.take_counts()
        for what, n in counts.items():
            self.inc(f"local_models_{what}", n)
        if counts["lost"]:
            self.inc("errors", counts["lost"])
        self.max_stat("peak_local_models", peak)

    def mark_dirty(self, site_key: str) -> None:
        self.files.dirty.add(site_key)

    def lock(self, site_key: str) -> threading.Lock:
        lock = self._locks.get(site_key)
        if lock is None:  # setdefault: the thread writing out evicted models asks too
            lock = self._locks.setdefault(site_key, threading.Lock())
        return lock

    def fallback(self) -> SiteCleaner:
        """An unfitted cleaner: the method's page-level fallback, for pages of sites
        without a model (evicted, failed, or fewer pages than ``SST_MIN_FIT_PAGES``)."""
        if self._fallback is None:
            self._fallback = SiteCleaner(self.config.method, **self.config.params)
        return self._fallback

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
        """Fit ``site``'s model on ``pages``; a Deferred of its :class:`Built` (see
        :func:`~sst_cleaner.scrapy._workers.fit_site`), fired once the model is in the store."""
        from sst_cleaner.scrapy._workers import fit_site

        cfg = self.config
        fields = [p.fields for p in pages]
        generation = self.dispatch.worker_generation(site)
        d = self.dispatch.call(site, "fit", (fields,), lambda: fit_site(cfg.method, cfg.params, fields))

        def built(result: tuple):
            if isinstance(result[0], SiteCleaner):  # fitted in a thread
                cleaner, seconds, share = result
                if cleaner.fit_status == "over_budget":
                    raise FitOverBudget(site, len(fields), seconds)
                if cleaner.model_full_pages:
                    self.inc("model_full_pages", cleaner.model_full_pages)
                self.put(site, cleaner)
                return Built(seconds, share)
            seconds, share, data, full_pages = result  # fitted in the site's worker: a local copy
            if fields and not data.get("learnt_pages"):
                # an overrun fit is discarded with the pages it was given (see
                # SiteCleaner.fit): the worker's unfitted copy cleans page by page
                raise FitOverBudget(site, len(fields), seconds)
            if full_pages:
                self.inc("model_full_pages", full_pages)

            def keep(cleaner: SiteCleaner) -> Built:
                self.put(site, cleaner)
                self.dispatch.remote_pages[site] = cleaner.n_pages
                now = self.dispatch.worker_generation(site)
                if now is not None and now != generation:
                    # the worker died after the fit was sent, and the new one was given
                    # back the local copies before this one was made: without it, the
                    # site's pages would get the fallback (refinements and cleans of the
                    # site are sent after this, so they queue behind it)
                    given = self.dispatch.give_model(site, data, cleaner.n_pages)
                    if given is not None:
                        given.addErrback(
                            lambda f: logger.warning(
                                "sst: could not give the model of %s to its new worker: %s", site, f.value
                            )
                        )
                return Built(seconds, share)

            return self.run(self.files.from_dict, data).addCallback(keep)

        return d.addCallback(built)

    def unlearnt(self, site: str) -> list[PageRecord]:
        """Pages passed to the site's last build that its model did not learn (a fleet's
        store: see :meth:`SharedSiteModelStore.unlearnt`); here a build learns them all."""
        return []

    def model_pages(self, site: str) -> int:
        """Pages the site's model has learnt from (0: no model)."""
        if site not in self._models:
            return 0
        return max(self._models.n_pages(site), self.dispatch.remote_pages.get(site, 0))

    def refine(self, site: str, page: PageRecord):
        """``partial_fit`` of the site's model with ``page``; a Deferred of the model's page
        count, or None when nothing was added (no model, the page learnt already, or the
        refinement budget spent)."""
        from sst_cleaner.scrapy._workers import REFINE_NOT_ADDED, REFINE_SKIPPED, refine_site

        models, lock = self._models, self.lock(site)
        if self._refine_budget is None:
            from sst_cleaner.engine._refine_budget import RefineBudget

            self._refine_budget = RefineBudget()  # the thread mode's share
        budget = self._refine_budget

        def in_thread() -> Optional[int]:
            # the model is looked up holding the site's lock, so it is never a copy
            # being written out and dropped (the refinement would be lost with it); and
            # only here: in process mode an evicted copy is not read back for nothing
            with lock:
                return refine_site(models.get(site), *page.fields, budget=budget)

        def done(n_pages: Optional[int]) -> Optional[int]:
            if n_pages == REFINE_SKIPPED:
                self.inc("refinements_skipped")
                return None
            if n_pages == REFINE_NOT_ADDED:  # learnt already, or skipped: nothing added
                return None
            if n_pages is not None and site in self.dispatch.remote_pages:
                self.dispatch.remote_pages[site] = max(self.dispatch.remote_pages[site], n_pages)
            self.mark_dirty(site)
            return n_pages

        return self.dispatch.call(site, "refine", page.fields, in_thread).addCallback(done)

    def clean(self, page: PageRecord, sentences: bool = False, blocks: bool = False, outputs: tuple = ()):
        """Clean ``page`` with its site's model (the page-level fallback if the site has
        none); a Deferred of :class:`~sst_cleaner.scrapy._workers.CleanFields` (with the
        ``outputs`` of :func:`~sst_cleaner.scrapy._settings.outputs_of`)."""
        from sst_cleaner.scrapy._workers import choose_cleaner, clean_page

        # whether the site has a model is decided now, as the pipeline sees it; the model
        # itself is looked up in the thread, if the call runs in one (in process mode an
        # evicted copy is not read back for nothing)
        has_model = bool(page.site) and page.site in self._models
        models, fallback = self._models, self.fallback()
        site_lock, fallback_lock = self.lock(page.site if has_model else "\0fallback"), self.lock("\0fallback")
        args = page.fields + (sentences, blocks, tuple(outputs))

        def in_thread() -> Any:
            model = models.get(page.site) if has_model else None
            cleaner, site_model = choose_cleaner(model, lambda: fallback)
            return clean_page(cleaner, site_model, *args, lock=site_lock if model is not None else fallback_lock)

        return self.dispatch.call(page.site, "clean", args, in_thread)

    def run(self, func: Callable[..., Any], *args: Any):
        """Run ``func(*args)`` in the store's worker threads; a Deferred fired on the
        reactor thread with its result (works with any Twisted reactor)."""
        return self.dispatch.run(func, *args)
