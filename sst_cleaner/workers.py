"""Worker processes for the CPU work of the Scrapy layer (``SST_WORKERS = "process"``).

Why processes: fitting, refining (``partial_fit``) and cleaning are pure-Python CPU work.
Run in threads of the Scrapy process they hold the GIL the reactor needs, so a CPU-bound
crawl slows down by about the cleaning cost. In worker processes the reactor's process
keeps its core; it only sends page bytes and receives the few fields the pipeline writes.

Layout: ``n`` worker processes, each a one-process ``ProcessPoolExecutor`` started with
the ``spawn`` context (forking a process that runs a Twisted reactor and threads is
unsafe). Every site is pinned to one worker (``crc32(site key) % n``) and that worker owns
the site's ``SiteCleaner``: it fits, refines, cleans, loads and saves it. One worker runs
its calls one at a time, in the order they were sent, so a site's model is always built
(or loaded) before the calls that use it, and never used by two calls at once.

This module's top half runs in the workers (module globals hold the worker's models);
:class:`WorkerPool` is the Scrapy process's side: it submits calls and hands back
``concurrent.futures`` futures, which :class:`~sst_cleaner.site_models.SiteModelStore`
turns into Deferreds fired on the reactor thread.
"""
from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import time
import zlib
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, NamedTuple, Optional

logger = logging.getLogger(__name__)

#: worker crashes tolerated per crawl; past this the store goes back to threads
MAX_RESTARTS = 3


class CleanFields(NamedTuple):
    """What the pipeline writes from a page's cleaning (the part of a ``CleanResult`` that
    crosses the process boundary): text, sentences and informative blocks (None when not
    asked for), the result's status, and whether the site's model (False: the page-level
    fallback) cleaned it."""

    text: str
    sentences: Optional[list]
    blocks: Optional[list]
    status: str
    site_model: bool


def clean_fields(result: Any, sentences: bool, blocks: bool, site_model: bool) -> CleanFields:
    """The fields of a ``CleanResult`` the pipeline needs."""
    from .result import INFORMATIVE

    return CleanFields(
        result.text,
        list(result.sentences) if sentences else None,
        [b.to_dict() for b in result.blocks if b.label == INFORMATIVE] if blocks else None,
        getattr(result, "status", "ok"),
        site_model,
    )


def default_processes() -> int:
    """CPUs this process may use, minus one for the reactor (at least 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus - 1)


def import_callable(path: str) -> Callable[..., Any]:
    from importlib import import_module

    module, _, name = path.rpartition(".")
    if not module:
        raise ValueError(f"{path!r} is not an import path (module.name)")
    func = getattr(import_module(module), name)
    if not callable(func):
        raise ValueError(f"{path!r} is not callable")
    return func


# -- worker side -------------------------------------------------------------------------

_W: dict = {}  # the worker's state: method, params, models, fallback


def _init_worker(method: str, params: dict, init: Optional[str]) -> None:
    """Runs once in each new worker process."""
    import signal

    # Ctrl-C reaches the whole process group: the Scrapy process decides how the crawl
    # ends (its graceful shutdown still needs the workers), so a worker ignores it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if init:
        import_callable(init)()
    _W.clear()
    _W.update(method=method, params=params, models={}, fallback=None)


def _cleaner():
    from .cleaner import SiteCleaner

    return SiteCleaner(_W["method"], **_W["params"])


def _parse(url: str, body: bytes, encoding: Optional[str], limits: Any):
    from .dom import parse_html

    return parse_html(body, url=url, encoding=encoding, limits=limits)


def _op_start(site: str) -> int:
    """Checks that the method can be made here (custom methods must be registered by
    ``SST_WORKER_INIT``); the worker's pid."""
    _cleaner()
    return os.getpid()


def _op_fit(site: str, pages: list, share_pages: int = 5) -> tuple:
    """Fits the site's model on ``pages`` [(url, body, encoding)]: (seconds, share of
    template text on the first pages, the model as ``to_dict``)."""
    start = time.perf_counter()
    cleaner = _cleaner()
    prepared = [_parse(u, b, e, cleaner.limits) for u, b, e in pages]
    cleaner.fit(prepared)
    seconds = time.perf_counter() - start
    shares = []
    for u, b, e in pages[:share_pages]:
        try:
            shares.append(cleaner.clean(_parse(u, b, e, cleaner.limits)).template_share)
        except Exception:  # informative only; the build itself succeeded
            pass
    _W["models"][site] = cleaner
    return seconds, (sum(shares) / len(shares) if shares else 0.0), cleaner.to_dict()


def _op_refine(site: str, url: str, body: bytes, encoding: Optional[str]) -> Optional[int]:
    """``partial_fit`` of the site's model with one page: its page count (None: no model)."""
    model = _W["models"].get(site)
    if model is None:
        return None
    model.partial_fit(_parse(url, body, encoding, model.limits))
    return model.n_pages


def _op_clean(site: str, url: str, body: bytes, encoding: Optional[str],
              sentences: bool, blocks: bool) -> CleanFields:
    model = _W["models"].get(site) if site else None
    site_model = model is not None and getattr(model, "fit_status", "ok") != "over_budget"
    if model is None:
        model = _W["fallback"]
        if model is None:
            model = _W["fallback"] = _cleaner()
    result = model.clean(_parse(url, body, encoding, model.limits))
    return clean_fields(result, sentences, blocks, site_model)


def _op_put(site: str, data: dict) -> None:
    from .cleaner import SiteCleaner

    _W["models"][site] = SiteCleaner.from_dict(data)


def _op_load(site: str, path: str) -> int:
    from .cleaner import SiteCleaner

    model = _W["models"][site] = SiteCleaner.load(path)
    return model.n_pages


def _op_save(site: str, path: str) -> bool:
    model = _W["models"].get(site)
    if model is None:
        return False
    model.save(path)
    return True


def _op_crash(site: str) -> None:  # for tests: a worker that dies mid-call
    os._exit(70)


_OPS = {"start": _op_start, "fit": _op_fit, "refine": _op_refine, "clean": _op_clean,
        "put": _op_put, "load": _op_load, "save": _op_save, "crash": _op_crash}


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__qualname__}: {exc}")


def run_op(op: str, site: str, *args: Any) -> Any:
    """Entry point of every call in a worker."""
    try:
        return _OPS[op](site, *args)
    except Exception as exc:
        err = _picklable(exc)
        if err is exc:
            raise
        raise err from None


# -- the Scrapy process's side -------------------------------------------------------------

@contextlib.contextmanager
def _main_not_imported():
    """While a worker is spawned: keep ``spawn`` from re-importing ``__main__`` in it.

    A spawned child normally re-runs the parent's main script as ``__mp_main__``; a
    script that starts its crawl without an ``if __name__ == "__main__":`` guard would
    then start a second crawl inside the worker. The workers only run sst_cleaner code,
    so they never need the main module: its ``__spec__`` and ``__file__`` (what
    ``multiprocessing.spawn.get_preparation_data`` reads) are hidden while the process
    starts.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    missing = object()
    saved = {k: main.__dict__.get(k, missing) for k in ("__spec__", "__file__")}
    try:
        main.__spec__ = None
        main.__dict__.pop("__file__", None)
        yield
    finally:
        for key, value in saved.items():
            if value is missing:
                main.__dict__.pop(key, None)
            else:
                main.__dict__[key] = value


class WorkerPool:
    """``n`` single-process executors; each site is pinned to one of them."""

    def __init__(self, n: int, method: str, params: dict, init: Optional[str] = None):
        import multiprocessing

        self.n = max(1, int(n))
        self._ctx = multiprocessing.get_context("spawn")
        self._initargs = (method, dict(params), init)
        self._execs: list[Optional[ProcessPoolExecutor]] = [None] * self.n
        self.generation = [0] * self.n  # bumped at each restart of a worker
        self.restarts = 0

    def index(self, site: str) -> int:
        """The worker a site is pinned to (stable across runs and processes)."""
        return zlib.crc32(site.encode("utf-8", "surrogatepass")) % self.n

    def _executor(self, i: int) -> ProcessPoolExecutor:
        ex = self._execs[i]
        if ex is None:
            ex = self._execs[i] = ProcessPoolExecutor(
                max_workers=1, mp_context=self._ctx, initializer=_init_worker, initargs=self._initargs)
        return ex

    def submit(self, i: int, op: str, site: str, *args: Any) -> Future:
        """Send ``op`` to worker ``i``; a future of its result. A call on a worker that is
        already broken fails with ``BrokenProcessPool`` (in the future, not here)."""
        try:
            ex = self._executor(i)
            if getattr(ex, "_processes", None):  # started: no process is spawned here
                return ex.submit(run_op, op, site, *args)
            with _main_not_imported():
                return ex.submit(run_op, op, site, *args)
        except (BrokenProcessPool, RuntimeError) as exc:
            future: Future = Future()
            future.set_exception(exc if isinstance(exc, BrokenProcessPool) else BrokenProcessPool(str(exc)))
            return future

    def start_all(self) -> list[Future]:
        """Starts every worker (the processes spawn in the background); futures of their pids."""
        return [self.submit(i, "start", "") for i in range(self.n)]

    def restart(self, i: int) -> None:
        """Replace worker ``i`` (after it died): a fresh process, no models."""
        old = self._execs[i]
        self._execs[i] = None
        self.generation[i] += 1
        self.restarts += 1
        if old is not None:
            try:
                old.shutdown(wait=False, cancel_futures=True)
            except Exception:
                pass

    def alive(self, i: int) -> bool:
        ex = self._execs[i]
        return ex is not None and not getattr(ex, "_broken", False)

    def shutdown(self, wait: bool = True) -> None:
        for i, ex in enumerate(self._execs):
            if ex is not None:
                try:
                    ex.shutdown(wait=wait, cancel_futures=True)
                except Exception:
                    logger.debug("sst: shutting down worker %d failed", i, exc_info=True)
            self._execs[i] = None
