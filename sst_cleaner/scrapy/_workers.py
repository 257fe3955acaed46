"""Worker processes for the CPU work of the Scrapy layer (``SST_WORKERS = "process"``).

Why processes: fitting, refining (``partial_fit``) and cleaning are pure-Python CPU work.
Run in threads of the Scrapy process they hold the GIL the reactor needs, so a CPU-bound
crawl slows down by about the cleaning cost. In worker processes the reactor's process
keeps its core; it only sends page bytes and receives the few fields the pipeline writes.

Layout: ``n`` worker processes started with the ``spawn`` context (forking a process that
runs a Twisted reactor and threads is unsafe), each fed by its own queue (see
:class:`_Worker` for why not ``ProcessPoolExecutor``). Every site is pinned to one worker
(``crc32(site key) % n``) and that worker owns the site's ``SiteCleaner``: it fits,
refines, cleans, loads and saves it. One worker runs its calls one at a time, in the
order they were sent, so a site's model is always built (or loaded) before the calls
that use it, and never used by two calls at once.

This module's top half runs in the workers (module globals hold the worker's models);
:class:`WorkerPool` is the Scrapy process's side: it submits calls and hands back
``concurrent.futures`` futures, which :class:`~sst_cleaner.scrapy._dispatch.Dispatcher` (the
model store's) turns into Deferreds fired on the reactor thread.
"""

# One module for both ends of the pipe: the worker side and the Scrapy side of one
# protocol are read and changed together, so the two cannot drift apart.

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import time
import zlib
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, NamedTuple, Optional

logger = logging.getLogger(__name__)

#: worker crashes tolerated per crawl; past this the store goes back to threads
MAX_RESTARTS = 3


class CleanFields(NamedTuple):
    """What the pipeline writes from a page's cleaning (the part of a ``CleanResult`` that
    crosses the process boundary): text, sentences and informative blocks (None when not
    asked for), the result's status, and whether the site's model (False: the page-level
    fallback) cleaned it; the Markdown, HTML and metadata when asked for (see
    :func:`sst_cleaner.scrapy._settings.outputs_of`), and the metadata values dropped
    (``CleanResult.metadata_dropped``)."""

    text: str
    sentences: Optional[list]
    blocks: Optional[list]
    status: str
    site_model: bool
    markdown: Optional[str] = None
    html: Optional[str] = None
    metadata: Optional[dict] = None
    metadata_dropped: int = 0


def clean_fields(result: Any, sentences: bool, blocks: bool, site_model: bool, outputs: tuple = ()) -> CleanFields:
    """The fields of a ``CleanResult`` the pipeline needs."""
    from sst_cleaner.engine._result import INFORMATIVE

    links = "links" in outputs
    return CleanFields(
        result.text,
        list(result.sentences) if sentences else None,
        [b.to_dict() for b in result.blocks if b.label == INFORMATIVE] if blocks else None,
        getattr(result, "status", "ok"),
        site_model,
        result.as_markdown(links) if "markdown" in outputs else None,
        result.as_html(links) if "html" in outputs else None,
        dict(result.metadata) if "metadata" in outputs else None,
        result.metadata_dropped if "metadata" in outputs else 0,
    )


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


def _init_worker(
    method: str, params: dict, init: Optional[str], max_models: int = 0, spill_dir: Optional[str] = None
) -> None:
    """Runs once in each new worker process."""
    import signal

    # Ctrl-C reaches the whole process group: the Scrapy process decides how the crawl
    # ends (its graceful shutdown still needs the workers), so a worker ignores it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if init:
        import_callable(init)()
    _W.clear()
    from sst_cleaner.engine._cleaner import SiteCleaner
    from sst_cleaner.scrapy._model_cache import ModelCache

    models = ModelCache(max_models, spill_dir, lambda path: SiteCleaner.load(path, params=params))
    _W.update(method=method, params=params, models=models, fallback=None)


def _cleaner():
    from sst_cleaner.engine._cleaner import SiteCleaner

    return SiteCleaner(_W["method"], **_W["params"])


def _parse(url: str, body: bytes, encoding: Optional[str], limits: Any):
    from sst_cleaner.engine._dom import parse_html

    return parse_html(body, url=url, encoding=encoding, limits=limits)


def _op_start(site: str) -> int:
    """Checks that the method can be made here (custom methods must be registered by
    ``SST_WORKER_INIT``); the worker's pid."""
    _cleaner()
    return os.getpid()


# -- the site operations, shared by the worker processes and the threads ----------------
# (the Scrapy process's model store runs them in threads, with a site's lock, in
# SST_WORKERS = "thread" mode or after the workers were given up)


def fit_site(method: str, params: dict, pages: list, share_pages: int = 5) -> tuple:
    """Fit a site model on ``pages`` [(url, body, encoding)].

    Returns the cleaner, the seconds it took, and the mean share of text the model
    judged template on up to ``share_pages`` of the sample (for the log line a user
    reads to decide whether the model makes sense).
    """
    from sst_cleaner.engine._cleaner import SiteCleaner

    start = time.perf_counter()
    cleaner = SiteCleaner(method, **params)
    # parsed as fit reaches them, within the cleaner's limits (SST_PARAMS may set them)
    cleaner.fit(pages)
    seconds = time.perf_counter() - start
    shares = []
    for u, b, e in pages[:share_pages]:
        try:
            shares.append(cleaner.clean(_parse(u, b, e, cleaner.limits)).template_share)
        except Exception:  # informative only; the build itself succeeded
            pass
    return cleaner, seconds, (sum(shares) / len(shares) if shares else 0.0)


#: what :func:`refine_site` returns for a refinement its worker's budget skipped
REFINE_SKIPPED = -1
#: what :func:`refine_site` returns when the model learnt nothing from the page: learnt
#: already (a re-crawl), or skipped by the site's time budget or the model's entry cap
REFINE_NOT_ADDED = -2


def refine_site(
    model: Any, url: str, body: bytes, encoding: Optional[str], lock: Any = contextlib.nullcontext(), budget: Any = None
) -> Optional[int]:
    """``partial_fit`` of ``model`` with one page: its page count (None: no model;
    ``REFINE_SKIPPED``: the worker's :class:`~sst_cleaner.engine._refine_budget.RefineBudget`
    is spent; ``REFINE_NOT_ADDED``: nothing learnt from the page)."""
    if model is None:
        return None
    from sst_cleaner.engine._learnt import page_key

    key = page_key((url, body, encoding))  # from the raw page: parsing drops the canonical link
    if key in model.learnt:  # learnt already (a re-crawl): not parsed for nothing
        with lock:
            model.partial_fit(None, key=key)
        return REFINE_NOT_ADDED
    if budget is not None and not budget.allow():
        return REFINE_SKIPPED
    start = time.thread_time()
    try:
        # parsed inside partial_fit, so the page's time budget covers parsing too
        with lock:
            model.partial_fit((url, body, encoding), key=key)
            return model.n_pages if key in model.learnt else REFINE_NOT_ADDED
    finally:
        if budget is not None:
            budget.spend(time.thread_time() - start)


def choose_cleaner(model: Any, fallback: Callable[[], Any]) -> tuple:
    """The cleaner for a page whose site has ``model`` (None: none yet), and whether it
    is the site's model. A fit that overran its budget left the model unfitted: it
    cleans page by page, so it counts as the fallback."""
    if model is None:
        return fallback(), False
    return model, getattr(model, "fit_status", "ok") != "over_budget"


def clean_page(
    cleaner: Any,
    site_model: bool,
    url: str,
    body: bytes,
    encoding: Optional[str],
    sentences: bool,
    blocks: bool,
    outputs: tuple = (),
    lock: Any = contextlib.nullcontext(),
) -> CleanFields:
    """Clean one page, parsed within the cleaner's limits: the fields the pipeline writes."""
    prepared = _parse(url, body, encoding, cleaner.limits)
    with lock:
        result = cleaner.clean(prepared)
    result.source = (url, body, encoding)  # the metadata is read from the raw page
    return clean_fields(result, sentences, blocks, site_model, outputs)


def _fallback():
    if _W["fallback"] is None:
        _W["fallback"] = _cleaner()
    return _W["fallback"]


def _op_fit(site: str, pages: list) -> tuple:
    """Fits the site's model (see :func:`fit_site`): (seconds, share, the model as
    ``to_dict``, pages not learnt because the model was full)."""
    cleaner, seconds, share = fit_site(_W["method"], _W["params"], pages)
    _W["models"].put(site, cleaner)
    return seconds, share, cleaner.to_dict(), cleaner.model_full_pages


def _op_refine(site: str, url: str, body: bytes, encoding: Optional[str]) -> Optional[int]:
    from sst_cleaner.engine._refine_budget import RefineBudget

    budget = _W.get("refine_budget")
    if budget is None:
        budget = _W["refine_budget"] = RefineBudget()
    return refine_site(_W["models"].get(site), url, body, encoding, budget=budget)


def _op_clean(
    site: str, url: str, body: bytes, encoding: Optional[str], sentences: bool, blocks: bool, outputs: tuple = ()
) -> CleanFields:
    cleaner, site_model = choose_cleaner(_W["models"].get(site) if site else None, _fallback)
    return clean_page(cleaner, site_model, url, body, encoding, sentences, blocks, outputs)


def _op_put(site: str, data: dict) -> None:
    from sst_cleaner.engine._cleaner import SiteCleaner

    # the crawl's parameters and limits (SST_PARAMS), not the ones the model was saved with
    _W["models"].put(site, SiteCleaner.from_dict(data, params=_W["params"]))


def _op_load(site: str, path: str) -> int:
    from sst_cleaner.engine._cleaner import SiteCleaner

    model = SiteCleaner.load(path, params=_W["params"])
    _W["models"].put(site, model)
    return model.n_pages


def _op_save(site: str, path: str) -> bool:
    return _W["models"].save(site, path)


# every op takes the site name, then its own arguments
_OPS: dict[str, Callable[..., Any]] = {
    "start": _op_start,
    "fit": _op_fit,
    "refine": _op_refine,
    "clean": _op_clean,
    "put": _op_put,
    "load": _op_load,
    "save": _op_save,
}


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__qualname__}: {exc}")


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (its ``__cause__`` in the Scrapy
    process), so logged errors show where in the worker they happened."""

    def __init__(self, tb: str):
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def _worker_main(
    requests: Any,
    answers: Any,
    skip: Any,
    method: str,
    params: dict,
    init: Optional[str],
    max_models: int = 0,
    spill_dir: Optional[str] = None,
) -> None:
    """A worker process: runs the calls of ``requests`` in order, answers on ``answers``.

    A request is ``(seq, op, site, args)``; the answer ``(seq, ok, value)``, value being
    the result or ``(exception, traceback text)``. ``None`` asks the worker to stop.
    Refinements with ``seq <= skip.value`` are skipped (the crawl is closing).
    """
    import multiprocessing
    import queue
    import traceback

    try:
        _init_worker(method, params, init, max_models, spill_dir)
    except BaseException as exc:  # the Scrapy process falls back to threads
        answers.send((-1, False, (_picklable(exc), traceback.format_exc())))
        return
    parent = multiprocessing.parent_process()
    while True:
        try:
            msg = requests.get(timeout=5.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():  # killed: do not linger
                break
            continue
        if msg is None:
            break
        seq, op, site, args = msg
        if op == "refine" and seq <= skip.value:
            answers.send((seq, True, None))
            continue
        try:
            answer = (seq, True, _OPS[op](site, *args))
        except Exception as exc:
            answer = (seq, False, (_picklable(exc), traceback.format_exc()))
        answers.send(answer)
    answers.close()


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


class _Worker:
    """One worker process, the queue of its calls and the thread that reads its answers.

    Why not ``ProcessPoolExecutor``: it hands a worker at most two calls at a time, and
    its manager thread needs the GIL to hand over the next one. In a busy Scrapy process
    the reactor thread holds the GIL most of the time, so the worker would often sit
    idle between calls. Here calls are queued without limit (a ``multiprocessing.Queue``,
    whose feeder thread writes them to the pipe ahead of time), so the worker always has
    its backlog at hand; the Scrapy process's backpressure (Scrapy's limit on items in
    progress, the held-item caps, ``SST_MAX_MODEL_PAGES``) bounds that backlog.
    """

    def __init__(self, index: int, ctx: Any, initargs: tuple):
        import threading

        self.index = index
        self.requests = ctx.Queue()
        self.skip = ctx.Value("q", -1, lock=False)
        self._answers, answers_w = ctx.Pipe(duplex=False)
        self.process = ctx.Process(
            target=_worker_main,
            name=f"sst-worker-{index}",
            daemon=True,
            args=(self.requests, answers_w, self.skip) + initargs,
        )
        with _main_not_imported():
            self.process.start()
        answers_w.close()
        self._lock = threading.Lock()
        self._pending: dict[int, Future] = {}
        self.broken: Optional[str] = None
        self._reader = threading.Thread(target=self._read, name=f"sst-worker-{index}-answers", daemon=True)
        self._reader.start()

    def submit(self, seq: int, op: str, site: str, args: tuple) -> Future:
        future: Future = Future()
        with self._lock:
            if self.broken is not None:
                future.set_exception(BrokenProcessPool(self.broken))
                return future
            self._pending[seq] = future
        self.requests.put((seq, op, site, args))
        return future

    def _read(self) -> None:
        from multiprocessing.connection import wait

        conn, sentinel = self._answers, self.process.sentinel
        reason = None
        while reason is None:
            try:
                ready = wait([conn, sentinel])
                if conn in ready:
                    self._answer(conn.recv())
                    continue
                while conn.poll():  # the worker has exited: its last answers first
                    self._answer(conn.recv())
            except (EOFError, OSError):
                pass
            except Exception as exc:  # an answer that cannot be unpickled...
                logger.exception("sst: reading the answers of worker %d failed", self.index)
                reason = f"worker process {self.index}: reading its answers failed: {exc!r}"
                break
            code = self.process.exitcode if not self.process.is_alive() else None
            reason = self.broken or f"worker process {self.index} (pid {self.process.pid}) ended with exit code {code}"
        self._fail_all(reason)

    def _answer(self, msg: tuple) -> None:
        seq, ok, value = msg
        if seq == -1:  # the worker could not start
            exc, tb = value
            self.broken = f"worker process {self.index} could not start: {exc!r}"
            return
        with self._lock:
            future = self._pending.pop(seq, None)
        if future is None or not future.set_running_or_notify_cancel():
            return  # cancelled at close: nobody waits for it
        if ok:
            future.set_result(value)
        else:
            exc, tb = value
            exc.__cause__ = RemoteTraceback(tb)
            future.set_exception(exc)

    def _fail_all(self, reason: str) -> None:
        with self._lock:
            self.broken = reason
            pending, self._pending = self._pending, {}
        for seq in sorted(pending):  # in the order they were sent
            future = pending[seq]
            if future.set_running_or_notify_cancel():
                future.set_exception(BrokenProcessPool(reason))

    def alive(self) -> bool:
        return self.broken is None and self.process.is_alive()

    def stop(self, wait: bool = True, timeout: float = 60.0) -> None:
        """Stop the worker after the calls already sent (``wait``), or at once."""
        if self.process.is_alive() and self.broken is None:
            try:
                self.requests.put(None)
            except Exception:
                pass
            if wait:
                self.process.join(timeout)
        if self.process.is_alive():
            if wait or self.broken is not None:
                self.process.terminate()
                self.process.join(5)
        self.requests.cancel_join_thread()  # never block the exit on a dead reader
        self.requests.close()
        if wait:
            self._reader.join(5)


class WorkerPool:
    """``n`` worker processes; each site is pinned to one of them."""

    def __init__(
        self,
        n: int,
        method: str,
        params: dict,
        init: Optional[str] = None,
        max_models: int = 0,
        spill_dir: Optional[str] = None,
    ):
        import itertools
        import multiprocessing

        self.n = max(1, int(n))
        self._ctx = multiprocessing.get_context("spawn")
        self._initargs = (method, dict(params), init, max_models, spill_dir)
        self._workers: list[Optional[_Worker]] = [None] * self.n
        self._seq = itertools.count()
        self.last_seq = -1
        self.generation = [0] * self.n  # bumped at each restart of a worker
        self.restarts = 0
        self._spawned = 0

    def index(self, site: str) -> int:
        """The worker a site is pinned to (stable across runs and processes)."""
        return zlib.crc32(site.encode("utf-8", "surrogatepass")) % self.n

    def _worker(self, i: int) -> _Worker:
        worker = self._workers[i]
        if worker is None:
            worker = self._workers[i] = _Worker(i, self._ctx, self._initargs)
            self._spawned += 1
        return worker

    def submit(self, i: int, op: str, site: str, *args: Any) -> Future:
        """Send ``op`` to worker ``i``; a future of its result. Calls to one worker run in
        the order they are sent. A call on a dead worker fails with ``BrokenProcessPool``
        (in the future, never here)."""
        seq = self.last_seq = next(self._seq)
        try:
            return self._worker(i).submit(seq, op, site, args)
        except Exception as exc:  # the process could not even be started
            future: Future = Future()
            future.set_exception(BrokenProcessPool(f"worker process {i}: {exc!r}"))
            return future

    def start_first(self) -> Future:
        """Starts worker 0 (the process spawns in the background): a future of its pid,
        failing if the worker cannot run the method. The other workers start when their
        first site needs them (a crawl of one site never starts more than one)."""
        return self.submit(0, "start", "")

    @property
    def spawned(self) -> int:
        """Worker processes started so far (restarts included)."""
        return self._spawned

    def skip_refinements(self) -> None:
        """Refinements sent so far and not yet run are skipped (the crawl is closing)."""
        for worker in self._workers:
            if worker is not None:
                worker.skip.value = self.last_seq

    def restart(self, i: int) -> None:
        """Replace worker ``i`` (after it died): the next call starts a fresh process,
        with no models."""
        old = self._workers[i]
        self._workers[i] = None
        self.generation[i] += 1
        self.restarts += 1
        if old is not None:
            old.stop(wait=False)

    def alive(self, i: int) -> bool:
        worker = self._workers[i]
        return worker is not None and worker.alive()

    def shutdown(self, wait: bool = True) -> None:
        for i, worker in enumerate(self._workers):
            if worker is not None:
                try:
                    worker.stop(wait=wait)
                except Exception:
                    logger.debug("sst: stopping worker %d failed", i, exc_info=True)
            self._workers[i] = None
