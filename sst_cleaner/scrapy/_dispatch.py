"""Where the store's CPU work runs: the site's worker process, or a thread.

:class:`Dispatcher` sends the site operations of :mod:`sst_cleaner.scrapy._workers`
(fit, refine, clean, put, save) by ``SST_WORKERS``:

* ``"process"`` (default): to the worker process the site is pinned to, which owns the
  site's ``SiteCleaner``. Worker 0 starts when the crawl opens; calls made before it has
  answered wait for it. If it cannot start, the work goes to threads for the whole crawl.
  A worker that dies fails the one call it was running; the calls queued behind it go to
  a new worker, given its sites' models from the store's local copies (those evicted
  to disk by their file); after
  ``MAX_RESTARTS`` crashes the work moves to threads. A worker that answers nothing for
  ``SST_WORKER_HANG_TIMEOUT`` seconds while calls wait for it (stuck in C, where the
  engine's time budgets cannot stop it: see :mod:`sst_cleaner.engine._limits`) is
  stopped, and then handled as a worker that died.
* ``"thread"``: to the store's thread pool (:meth:`Dispatcher.run`), as the ``thread_fn``
  each call brings along.

Every outcome reaches the caller as a Deferred fired on the reactor thread; the
dispatcher's bookkeeping is touched from the reactor thread only.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, Callable, Optional

from sst_cleaner.scrapy._settings import SSTConfig

if TYPE_CHECKING:
    from sst_cleaner.scrapy._local_models import LocalModels

# the store's log lines keep the logger name they were always written under (Scrapy
# prints it, and a crawl's logging settings may select it)
logger = logging.getLogger("sst_cleaner.scrapy._site_models")


class ReactorInbox:
    """Hands the outcomes of calls finished in other threads to the reactor thread."""

    def __init__(self) -> None:
        # outcomes of finished calls waiting for the reactor thread (see _hand_over)
        self._outcomes: list[tuple[Any, Optional[BaseException], Any]] = []
        self._lock = threading.Lock()
        self._scheduled = False

    def deferred(self, future: Any) -> Any:
        """A Deferred fired on the reactor thread with a ``concurrent.futures`` future's
        outcome (never fired for a future cancelled at close)."""
        from twisted.internet import defer
        from twisted.python.threadable import isInIOThread

        d: defer.Deferred = defer.Deferred()
        later = False  # done at once: fired on the next turn, as a thread's outcome is

        def done(f) -> None:
            if f.cancelled():  # dropped at close: nobody waits for it any more
                return
            exc = f.exception()
            value = None if exc is not None else f.result()
            if later and isInIOThread():  # settled by the reactor itself (a worker's answer)
                self._fire(d, exc, value)
            else:
                self._hand_over(d, exc, value)

        future.add_done_callback(done)
        later = True
        return d

    def _hand_over(self, d: Any, exc: Optional[BaseException], value: Any) -> None:
        """Queue a call's outcome for the reactor thread, waking the reactor once for all
        the outcomes that arrive before it gets round to them: each wake-up is a turn of
        the event loop taken from the crawl, and answers of a worker process often come
        in bursts (a site's backlog after its model is built)."""
        from twisted.internet import reactor

        with self._lock:
            self._outcomes.append((d, exc, value))
            if self._scheduled:
                return
            self._scheduled = True
        reactor.callFromThread(self._drain)

    def _drain(self) -> None:
        with self._lock:
            batch, self._outcomes = self._outcomes, []
            self._scheduled = False
        for d, exc, value in batch:  # in the order the calls finished
            self._fire(d, exc, value)

    @staticmethod
    def _fire(d: Any, exc: Optional[BaseException], value: Any) -> None:
        try:
            if exc is not None:
                d.errback(exc)
            else:
                d.callback(value)
        except Exception:  # e.g. fired twice: never keep the rest of a batch waiting
            logger.exception("sst: handing a worker's answer to the crawl failed")


class HangWatch:
    """Stops a worker process that has answered nothing for ``SST_WORKER_HANG_TIMEOUT``
    seconds while calls wait for it. Every call a worker runs is bounded (time budgets,
    input caps), so one that long without an answer is stuck where no budget reaches (in
    C); once stopped, its pipe ends and the crash path takes over: the call it was
    running fails, the others go to a new worker (see :meth:`Dispatcher._worker_failed`).
    """

    def __init__(self, limit: float, inc: Callable[..., None]):
        self.limit = limit
        self._inc = inc
        # per worker (index, generation): when it last answered, or was given work while idle
        self._progress: dict[tuple[int, int], float] = {}
        self._hung: set[tuple[int, int]] = set()
        self._loop: Any = None

    def start(self, pool_of: Callable[[], Any], inflight: dict) -> None:
        """Check every few seconds the pool ``pool_of()`` and its unanswered calls
        ``inflight`` ((index, generation) -> calls)."""
        from twisted.internet.task import LoopingCall

        self._loop = LoopingCall(self.check, pool_of, inflight)
        self._loop.start(min(5.0, max(0.2, self.limit / 4)), now=False)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def progress(self, key: tuple[int, int]) -> None:
        self._progress[key] = time.monotonic()

    def check(self, pool_of: Callable[[], Any], inflight: dict) -> None:
        pool = pool_of()
        if pool is None:
            return
        now = time.monotonic()
        for key, calls in list(inflight.items()):
            i, generation = key
            if not calls or key in self._hung or pool.generation[i] != generation:
                continue
            silent = now - self._progress.get(key, now)
            if silent <= self.limit or not pool.alive(i):
                continue
            self._hung.add(key)
            self._inc("worker_hangs")
            logger.error(
                "sst: worker process %d answered nothing for %.0fs with %d calls waiting "
                "(SST_WORKER_HANG_TIMEOUT); stopping it",
                i,
                silent,
                len(calls),
            )
            pool.kill(i)


class Dispatcher:
    """Runs a crawl's site operations in worker processes or threads (see the module).

    ``models`` is the store's local model copies (read only here: what a restarted
    worker is given back); ``inc(name, count=1)`` counts a ``sst/`` stat.
    """

    def __init__(self, config: SSTConfig, models: LocalModels, inc: Callable[..., None]):
        self.config = config
        self._models = models
        self._inc = inc
        self._executor: Optional[ThreadPoolExecutor] = None
        self._spill_dir: Optional[str] = None  # temporary folder of evicted worker models
        # SST_WORKERS = "process": the worker processes, calls waiting for them to
        # start, and refinements not yet run
        self._pool: Any = None
        self._pending_calls: Optional[list] = None
        self._workers_given_up = False
        #: each site's page count in its worker process (refinements happen there only)
        self.remote_pages: dict[str, int] = {}
        self._spawned_seen = 0
        self._outstanding: set = set()
        self._seq = itertools.count()
        self._inflight: dict[tuple[int, int], dict[int, Any]] = {}
        self._culprits: dict[tuple[int, int], int] = {}
        limit = config.worker_hang_timeout
        self._hangs: Optional[HangWatch] = HangWatch(limit, inc) if limit else None
        self._inbox = ReactorInbox()

    # -- lifecycle
    def start(self) -> None:
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
        from twisted.internet import reactor

        self._pool = WorkerPool(
            cfg.processes,
            cfg.method,
            cfg.params,
            cfg.worker_init,
            cfg.max_models,
            cfg.model_dir or self._spill_dir,
            reactor=reactor,
        )
        self._pending_calls = []
        self.deferred(self._pool.start_first()).addCallbacks(self._workers_started, self._workers_not_started)
        self._count_spawned()
        if self._hangs is not None:
            self._hangs.start(lambda: self._pool, self._inflight)

    def stop_work(self) -> None:
        """The crawl is closing: refinements not started are dropped, running calls
        finish, so the models saved next are never written while a thread changes them."""
        if self._pool is not None:
            self._pool.skip_refinements()
        for future in list(self._outstanding):
            future.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def shutdown(self) -> None:
        """Stop the worker processes (after the calls sent to them) and remove the
        temporary folder of evicted models."""
        if self._hangs is not None:
            self._hangs.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._spill_dir is not None:
            import shutil

            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
        self._pending_calls = None

    # -- worker processes: start, fall back to threads
    def _count_spawned(self) -> None:
        pool = self._pool
        if pool is not None and pool.spawned > self._spawned_seen:
            self._inc("worker_processes", pool.spawned - self._spawned_seen)
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
        self._inc("errors")
        self._inc("errors/workers")
        self._use_threads()
        self._run_pending_calls()

    def _use_threads(self) -> None:
        self._workers_given_up = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
        self.remote_pages.clear()

    def _run_pending_calls(self) -> None:
        calls, self._pending_calls = self._pending_calls or [], None
        for d, site, op, args, thread_fn in calls:
            self.call(site, op, args, thread_fn).chainDeferred(d)

    # -- threads, and outcomes to the reactor thread
    def run(self, func: Callable[..., Any], *args: Any):
        """Run ``func(*args)`` in the store's worker threads; a Deferred fired on the
        reactor thread with its result (works with any Twisted reactor)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.config.threads, thread_name_prefix="sst-worker")
        return self.deferred(self._executor.submit(func, *args))

    def deferred(self, future):
        """A Deferred fired on the reactor thread with a ``concurrent.futures`` future's
        outcome (never fired for a future cancelled at close)."""
        return self._inbox.deferred(future)

    # -- calls
    def call(self, site: str, op: str, args: tuple, thread_fn: Callable[[], Any], retry: bool = True):
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
        key = (i, generation)
        inflight = self._inflight.setdefault(key, {})
        hangs = self._hangs
        if not inflight and hangs is not None:  # an idle worker: its time to answer starts now
            hangs.progress(key)
        inflight[seq] = future

        def answered(f) -> None:
            if hangs is not None:
                hangs.progress(key)
            if f.cancelled() or not isinstance(f.exception(), BrokenProcessPool):
                inflight.pop(seq, None)

        future.add_done_callback(answered)
        if op == "refine":
            self._outstanding.add(future)
            future.add_done_callback(self._outstanding.discard)
        d = self.deferred(future)
        d.addErrback(self._worker_failed, pool, i, generation, seq, (site, op, args, thread_fn) if retry else None)
        return d

    def worker_generation(self, site: str) -> Optional[int]:
        """How many times the worker process of ``site`` was restarted (None in thread
        mode): a model built by an earlier generation died with it."""
        pool = self._pool
        return None if pool is None else pool.generation[pool.index(site)]

    def give_model(self, site: str, data: dict, n_pages: int, retry: bool = True):
        """Process mode: make ``data`` (a model's ``to_dict``, checked already) the
        model of ``site`` in its worker; a Deferred of that call, or None in thread mode
        (the threads use the store's copy)."""
        if self._pool is None:
            return None
        self.remote_pages[site] = n_pages
        return self.call(site, "put", (data,), lambda: None, retry=retry)

    def save_in_workers(self, sites: list[str], path_of: Callable[[str], Optional[str]]) -> set[str]:
        """Process mode: the sites' workers (which hold the refined models) save them to
        ``path_of(site)``; the sites they saved. The rest are saved from the local copies."""
        pool = self._pool
        if pool is None or self._pending_calls is not None:
            return set()
        futures = {
            site: pool.submit(pool.index(site), "save", site, path_of(site)) for site in sites if site in self._models
        }
        pool.wait(list(futures.values()), 120)
        saved = set()
        for site, future in futures.items():
            try:
                if future.result(timeout=0):
                    saved.add(site)
            except Exception as exc:  # a dead worker: the local copy is saved instead
                logger.warning(
                    "sst: the worker could not save the model of site %s (%r); saving the copy made when it was built",
                    site,
                    exc,
                )
        return saved

    # -- crash recovery
    def _worker_failed(self, failure: Any, pool: Any, i: int, generation: int, seq: int, retry: Optional[tuple]) -> Any:
        """A call failed. If its worker died: the first failure seen restarts the worker
        or moves the work to threads (:meth:`_recover`). The call the worker was running
        when it died (the oldest unanswered one) fails; the calls queued behind it are
        sent again, to the new worker (or a thread). Each crash fails one call and
        restarts are capped, so this ends."""
        if not failure.check(BrokenProcessPool):
            return failure  # an ordinary error of the call itself
        key = (i, generation)
        if key not in self._culprits:  # the first failure of this crash
            inflight = self._inflight.pop(key, {})
            self._culprits[key] = min(list(inflight), default=seq)
            self._inc("worker_crashes")
            if pool is self._pool and pool.generation[i] == generation:
                self._recover(failure, pool, i)
        if seq == self._culprits[key] or retry is None:
            return failure
        self._inc("worker_retries")
        site, op, args, thread_fn = retry
        return self.call(site, op, args, thread_fn)

    def _recover(self, failure: Any, pool: Any, i: int) -> None:
        """Worker ``i`` died: start a new one with the models the dead one owned (the
        local copies) or, past ``MAX_RESTARTS``, move the work to threads."""
        from sst_cleaner.scrapy._workers import MAX_RESTARTS

        if pool.restarts >= MAX_RESTARTS:
            logger.error(
                "sst: worker process %d died (%s); %d restarts already, so fitting and cleaning go on in threads",
                i,
                failure.value,
                pool.restarts,
            )
            self._use_threads()
            return
        logger.error("sst: worker process %d died (%s); starting a new one", i, failure.value)
        pool.restart(i)
        self._inc("worker_restarts")
        self._give_back(pool, i)

    def _give_back(self, pool: Any, i: int) -> None:
        """Give the new worker ``i`` its sites' models: the local copies."""
        given = from_files = 0
        for site, model, spilled in self._models.copies():
            if pool.index(site) != i:
                continue
            if model is not None:
                d = self.give_model(site, model.to_dict(), model.n_pages, retry=False)
            elif spilled is not None and spilled.path is not None:
                # evicted to disk: the worker reads the file itself, through the same
                # bounded loader, rather than this process reading it to send it on
                self.remote_pages[site] = spilled.n_pages
                d = self.call(site, "load", (spilled.path,), lambda: None, retry=False)
                from_files += 1
            else:
                continue  # lost: the site cleans page by page in the new worker
            given += 1
            d.addErrback(
                lambda f, s=site: logger.warning(
                    "sst: could not restore the model of %s in the new worker: %s", s, f.value
                )
            )
        logger.info("sst: worker process %d given back %d models (%d read from their files)", i, given, from_files)
