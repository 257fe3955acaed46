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
import itertools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
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
        self._spill_dir: Optional[str] = None  # temporary folder of evicted worker models
        self._loading: dict[str, list] = {}  # site -> Deferreds waiting for its model file
        self.item_pages = ItemPages(self.max_stat)
        self._executor: Optional[ThreadPoolExecutor] = None
        self._fallback: Optional[SiteCleaner] = None
        # SST_WORKERS = "process": the worker processes, calls waiting for them to
        # start, each site's page count in its worker, and refinements not yet run
        self._pool: Any = None
        self._pending_calls: Optional[list] = None
        self._workers_given_up = False
        self._remote_pages: dict[str, int] = {}
        self._spawned_seen = 0
        self._outstanding: set = set()
        self._seq = itertools.count()
        self._inflight: dict[tuple[int, int], dict[int, Any]] = {}
        self._culprits: dict[tuple[int, int], int] = {}
        # outcomes of finished calls waiting for the reactor thread (see _hand_over)
        self._inbox: list[tuple[Any, Optional[BaseException], Any]] = []
        self._inbox_lock = threading.Lock()
        self._inbox_scheduled = False
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
        self._start_workers()

    def close(self) -> None:
        global _ACTIVE
        try:
            if self._pool is not None:  # refinements not started: dropped
                self._pool.skip_refinements()
            for future in list(self._outstanding):
                future.cancel()
            if self._executor is not None:
                # refinements not started yet are dropped; running ones finish first, so
                # the saved models are never written while a thread changes them
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = None
            self.save_all()
        finally:
            self.item_pages.close()
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            if self._spill_dir is not None:
                import shutil

                shutil.rmtree(self._spill_dir, ignore_errors=True)
                self._spill_dir = None
            self._pending_calls = None
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
                if self._pool is not None:  # the site's worker gets the checked data, not the path
                    self._remote_pages[site_key] = model.n_pages
                    self._call(site_key, "put", (data,), lambda: None).addErrback(
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
        remote = self._save_in_workers(sorted(self._dirty))
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

    def _save_in_workers(self, sites: list[str]) -> set[str]:
        """Process mode: the sites' workers (which hold the refined models) save them;
        the sites they saved. The rest are saved from the local copies."""
        pool = self._pool
        if pool is None or self._pending_calls is not None:
            return set()
        futures = {
            site: pool.submit(pool.index(site), "save", site, self.model_path(site))
            for site in sites
            if site in self._models
        }
        saved = set()
        for site, future in futures.items():
            try:
                if future.result(timeout=120):
                    saved.add(site)
            except Exception as exc:  # a dead worker: the local copy is saved instead
                logger.warning(
                    "sst: the worker could not save the model of site %s (%r); saving the copy made when it was built",
                    site,
                    exc,
                )
        return saved

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

    # -- CPU work: threads or worker processes ------------------------------------------
    @property
    def uses_processes(self) -> bool:
        """Whether CPU work goes (or is about to go) to worker processes."""
        return self._pool is not None

    def _start_workers(self) -> None:
        """``SST_WORKERS = "process"``: start the worker processes in the background.

        Worker 0 starts now, the others when their first site needs them. Calls made
        before worker 0 has answered its start call wait in ``_pending_calls``; if it
        cannot start (e.g. a custom method that
        ``SST_WORKER_INIT`` does not register there), the crawl uses threads instead.
        """
        from sst_cleaner.scrapy._workers import WorkerPool

        cfg = self.config
        if cfg.workers != "process" or self._pool is not None or self._workers_given_up:
            return
        if cfg.max_models and not cfg.model_dir and self._spill_dir is None:
            import tempfile

            # evicted models of this crawl only: removed at the close
            self._spill_dir = tempfile.mkdtemp(prefix="sst-models-")
        self._pool = WorkerPool(
            cfg.processes, cfg.method, cfg.params, cfg.worker_init, cfg.max_models, cfg.model_dir or self._spill_dir
        )
        self._pending_calls = []
        self._deferred(self._pool.start_first()).addCallbacks(self._workers_started, self._workers_not_started)
        self._count_spawned()

    def _count_spawned(self) -> None:
        pool = self._pool
        if pool is not None and pool.spawned > self._spawned_seen:
            self.inc("worker_processes", pool.spawned - self._spawned_seen)
            self._spawned_seen = pool.spawned

    def _workers_started(self, pid: Any) -> None:
        if self._pool is None:  # the crawl ended (or went to threads) before worker 0 answered
            return
        logger.info(
            "sst: worker processes up (SST_WORKERS = 'process', SST_PROCESSES = %d; each "
            "starts when its first site needs it)",
            self._pool.n,
        )
        self._run_pending_calls()

    def _workers_not_started(self, failure: Any) -> None:
        if self._pool is None:  # closed meanwhile: nothing waits for the workers any more
            return
        exc = getattr(failure, "value", failure)
        logger.warning(
            "sst: worker processes could not start (%r); fitting and cleaning run in "
            "threads instead. A custom method must be registered in the workers too: "
            "see SST_WORKER_INIT",
            exc,
        )
        self.inc("errors")
        self.inc("errors/workers")
        self._use_threads()
        self._run_pending_calls()

    def _use_threads(self) -> None:
        self._workers_given_up = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
        self._remote_pages.clear()

    def _run_pending_calls(self) -> None:
        calls, self._pending_calls = self._pending_calls or [], None
        for d, site, op, args, thread_fn in calls:
            self._call(site, op, args, thread_fn).chainDeferred(d)

    def _deferred(self, future):
        """A Deferred fired on the reactor thread with a ``concurrent.futures`` future's
        outcome (never fired for a future cancelled at close)."""
        from twisted.internet import defer

        d: defer.Deferred = defer.Deferred()

        def done(f) -> None:
            if f.cancelled():  # dropped at close: nobody waits for it any more
                return
            exc = f.exception()
            self._hand_over(d, exc, None if exc is not None else f.result())

        future.add_done_callback(done)
        return d

    def _hand_over(self, d: Any, exc: Optional[BaseException], value: Any) -> None:
        """Queue a call's outcome for the reactor thread, waking the reactor once for all
        the outcomes that arrive before it gets round to them: each wake-up is a turn of
        the event loop taken from the crawl, and answers of a worker process often come
        in bursts (a site's backlog after its model is built)."""
        from twisted.internet import reactor

        with self._inbox_lock:
            self._inbox.append((d, exc, value))
            if self._inbox_scheduled:
                return
            self._inbox_scheduled = True
        reactor.callFromThread(self._drain_inbox)

    def _drain_inbox(self) -> None:
        with self._inbox_lock:
            batch, self._inbox = self._inbox, []
            self._inbox_scheduled = False
        for d, exc, value in batch:  # in the order the calls finished
            try:
                if exc is not None:
                    d.errback(exc)
                else:
                    d.callback(value)
            except Exception:  # e.g. fired twice: never keep the rest of the batch waiting
                logger.exception("sst: handing a worker's answer to the crawl failed")

    def _call(self, site: str, op: str, args: tuple, thread_fn: Callable[[], Any], retry: bool = True):
        """Deferred of ``op`` on ``site``: in the site's worker process, or ``thread_fn()``
        in a worker thread (thread mode, or after the workers were given up)."""
        from twisted.internet.defer import Deferred

        if self._pending_calls is not None:
            d: Deferred = Deferred()
            self._pending_calls.append((d, site, op, args, thread_fn))
            return d
        if self._pool is None:
            return self.run(thread_fn)
        pool = self._pool
        i = pool.index(site)
        generation = pool.generation[i]
        future = pool.submit(i, op, site, *args)
        self._count_spawned()
        seq = next(self._seq)
        # calls of this worker not yet answered, in the order the worker runs them: when
        # it dies, the oldest is the one it was running
        inflight = self._inflight.setdefault((i, generation), {})
        inflight[seq] = future

        def answered(f) -> None:
            if f.cancelled() or not isinstance(f.exception(), BrokenProcessPool):
                inflight.pop(seq, None)

        future.add_done_callback(answered)
        if op == "refine":
            self._outstanding.add(future)
            future.add_done_callback(self._outstanding.discard)
        d = self._deferred(future)
        d.addErrback(self._worker_failed, pool, i, generation, seq, (site, op, args, thread_fn) if retry else None)
        return d

    def _worker_failed(self, failure: Any, pool: Any, i: int, generation: int, seq: int, retry: Optional[tuple]) -> Any:
        """A call failed. If its worker died: the first failure seen restarts the worker
        (the new process gets the models the dead one owned, from the local copies) or,
        past ``MAX_RESTARTS``, moves the work to threads. The call the worker was running
        when it died (the oldest unanswered one) fails; the calls queued behind it are
        sent again, to the new worker (or a thread). Each crash fails one call and
        restarts are capped, so this ends."""
        from sst_cleaner.scrapy._workers import MAX_RESTARTS

        if not failure.check(BrokenProcessPool):
            return failure  # an ordinary error of the call itself
        key = (i, generation)
        if key not in self._culprits:  # the first failure of this crash
            inflight = self._inflight.pop(key, {})
            self._culprits[key] = min(list(inflight), default=seq)
            self.inc("worker_crashes")
            if pool is self._pool and pool.generation[i] == generation:
                if pool.restarts >= MAX_RESTARTS:
                    logger.error(
                        "sst: worker process %d died (%s); %d restarts already, so "
                        "fitting and cleaning go on in threads",
                        i,
                        failure.value,
                        pool.restarts,
                    )
                    self._use_threads()
                else:
                    logger.error("sst: worker process %d died (%s); starting a new one", i, failure.value)
                    pool.restart(i)
                    self.inc("worker_restarts")
                    self._restore_models(pool, i)
        if seq == self._culprits[key] or retry is None:
            return failure
        self.inc("worker_retries")
        site, op, args, thread_fn = retry
        return self._call(site, op, args, thread_fn)

    def _restore_models(self, pool: Any, i: int) -> None:
        """Give a restarted worker the models of its sites (the local copies)."""
        for site, model in list(self._models.items()):
            if pool.index(site) == i:
                self._remote_pages[site] = model.n_pages
                self._call(site, "put", (model.to_dict(),), lambda: None, retry=False).addErrback(
                    lambda f, s=site: logger.warning(
                        "sst: could not restore the model of %s in the new worker: %s", s, f.value
                    )
                )

    # -- the three kinds of CPU work
    def build(self, site: str, pages: list[PageRecord]):
        """Fit ``site``'s model on ``pages``; a Deferred of ``(seconds, share)`` (see
        :func:`~sst_cleaner.scrapy._workers.fit_site`), fired once the model is in the store."""
        from sst_cleaner.scrapy._workers import fit_site

        cfg = self.config
        fields = [p.fields for p in pages]
        d = self._call(site, "fit", (fields,), lambda: fit_site(cfg.method, cfg.params, fields))

        def built(result: tuple):
            if isinstance(result[0], SiteCleaner):  # fitted in a thread
                cleaner, seconds, share = result
                self.put(site, cleaner)
                return seconds, share
            seconds, share, data = result  # fitted in the site's worker: a local copy

            def keep(cleaner: SiteCleaner) -> tuple:
                self.put(site, cleaner)
                self._remote_pages[site] = cleaner.n_pages
                return seconds, share

            return self.run(self.from_dict, data).addCallback(keep)

        return d.addCallback(built)

    def model_pages(self, site: str) -> int:
        """Pages the site's model has learnt from (0: no model)."""
        model = self.get(site)
        if model is None:
            return 0
        return max(model.n_pages, self._remote_pages.get(site, 0))

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
            if n_pages is not None and site in self._remote_pages:
                self._remote_pages[site] = max(self._remote_pages[site], n_pages)
            self.mark_dirty(site)
            return n_pages

        return self._call(
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
        return self._call(page.site, "clean", args, lambda: clean_page(cleaner, site_model, *args, lock=lock))

    def run(self, func: Callable[..., Any], *args: Any):
        """Run ``func(*args)`` in the store's worker threads; a Deferred fired on the
        reactor thread with its result (works with any Twisted reactor)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.config.threads, thread_name_prefix="sst-worker")
        return self._deferred(self._executor.submit(func, *args))
