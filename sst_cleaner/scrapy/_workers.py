"""Worker processes for the CPU work of the Scrapy layer (``SST_WORKERS = "process"``).

Why processes: fitting, refining (``partial_fit``) and cleaning are pure-Python CPU work.
Run in threads of the Scrapy process they hold the GIL the reactor needs, so a CPU-bound
crawl slows down by about the cleaning cost. In worker processes the reactor's process
keeps its core; it only sends page bytes and receives the few fields the pipeline writes.

Layout: ``n`` worker processes started with the ``spawn`` context (forking a process that
runs a Twisted reactor and threads is unsafe), each with its own pair of pipes (see
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

import collections
import contextlib
import itertools
import logging
import os
import pickle
import struct
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
    import traceback

    try:
        _init_worker(method, params, init, max_models, spill_dir)
    except BaseException as exc:  # the Scrapy process falls back to threads
        answers.send((-1, False, (_picklable(exc), traceback.format_exc())))
        return
    while True:
        try:
            msg = requests.recv()
        except (EOFError, OSError):  # the Scrapy process is gone (or stopped this worker)
            break
        if msg is None:
            break
        seq, op, site, args = msg
        if op == "refine" and seq <= skip.value:
            answer: tuple = (seq, True, None)
        else:
            try:
                answer = (seq, True, _OPS[op](site, *args))
            except Exception as exc:
                answer = (seq, False, (_picklable(exc), traceback.format_exc()))
        try:
            answers.send(answer)
        except OSError:  # the Scrapy process is gone
            break
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
    """One worker process and the two pipes to it, written and read without threads.

    Why not ``ProcessPoolExecutor`` (or a ``multiprocessing.Queue``): they hand every call
    and every answer through a thread of their own, and in a busy Scrapy process each
    hand-off waits for the GIL the reactor thread holds, then wakes the reactor once more,
    CPU taken from the crawl on every page. Here the calling
    thread writes a call's bytes straight into the pipe (non-blocking; what does not fit
    waits in ``_out`` until the pipe drains), and answers are read where they are wanted:
    by the reactor when it watches the answers pipe (:meth:`watch`), otherwise by whoever
    waits for them (:func:`_drive`). So calls queue without limit (the worker always has
    its backlog at hand; the Scrapy process's backpressure bounds it), and one thread, the
    reactor's, does all the I/O. The frames are ``multiprocessing.Connection``'s, so the
    worker reads and writes its ends with ``recv``/``send``.
    """

    def __init__(self, index: int, ctx: Any, initargs: tuple):
        self.index = index
        self.skip = ctx.Value("q", -1, lock=False)
        requests_r, self._requests = ctx.Pipe(duplex=False)
        self._answers, answers_w = ctx.Pipe(duplex=False)
        self.process = ctx.Process(
            target=_worker_main,
            name=f"sst-worker-{index}",
            daemon=True,
            args=(requests_r, answers_w, self.skip) + initargs,
        )
        with _main_not_imported():
            self.process.start()
        # the worker holds the other ends alone: its death reads as the end of the answers
        requests_r.close()
        answers_w.close()
        for conn in (self._requests, self._answers):
            os.set_blocking(conn.fileno(), False)
            _widen(conn.fileno())
        self._out: collections.deque = collections.deque()  # frames not yet in the pipe
        self._in = bytearray()  # answer bytes not yet a whole frame
        self._ready: collections.deque = collections.deque()  # answers read, not yet settled
        self._stopping = False
        self._flush_due = False
        self._pending: dict[int, Future] = {}
        self.broken: Optional[str] = None
        self.closed = False
        self._reactor: Any = None
        self._ends: tuple = ()

    # -- the reactor side
    def watch(self, reactor: Any) -> None:
        """Let ``reactor`` read the answers as they come (and write what waits)."""
        self._reactor = reactor
        self._ends = (_PipeEnd(self._answers.fileno(), self.read), _PipeEnd(self._requests.fileno(), self.flush))
        reactor.addReader(self._ends[0])
        self._want_write()

    def _want_write(self) -> None:
        if self._reactor is None or self.closed:
            return
        if self._out:
            self._reactor.addWriter(self._ends[1])
        else:
            self._reactor.removeWriter(self._ends[1])

    # -- calls out
    def submit(self, seq: int, op: str, site: str, args: tuple) -> Future:
        future: Future = Future()
        if self.broken is not None or self.closed:
            future.set_exception(BrokenProcessPool(self.broken or f"worker process {self.index} was stopped"))
            return future
        self._pending[seq] = future
        self._send((seq, op, site, args))
        return future

    def _send(self, msg: Any) -> None:
        from multiprocessing.reduction import ForkingPickler

        data = ForkingPickler.dumps(msg)
        n = len(data)
        # Connection's framing: a 4-byte length, or -1 and an 8-byte one past 2 GiB
        header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!iQ", -1, n)
        was_empty = not self._out
        self._out.append(memoryview(header))
        self._out.append(memoryview(data))  # the pickle's own buffer: a page is not copied again
        if not was_empty:
            return  # written after those before it
        if self._reactor is None:
            self.flush()
        elif not self._flush_due:
            # the calls of one turn of the reactor go out in one write: each write wakes
            # an idle worker, and a woken worker can take the reactor's core from it
            self._flush_due = True
            self._reactor.callLater(0, self.flush)

    def flush(self) -> None:
        """Write what waits for the requests pipe, as far as it takes it now."""
        self._flush_due = False
        fd = self._requests.fileno() if not self._requests.closed else -1
        while self._out and fd >= 0:
            try:
                written = _writev(fd, list(itertools.islice(self._out, 64)))
            except BlockingIOError:
                break
            except OSError:  # the worker is gone: its answers pipe says so to the reader
                self._out.clear()
                break
            if not written:
                break
            while written:
                head = self._out[0]
                if written < len(head):
                    self._out[0] = head[written:]
                    break
                written -= len(head)
                self._out.popleft()
        self._want_write()

    # -- answers in
    def read(self) -> None:
        """Read the answers waiting in the pipe and settle their futures."""
        while not self.closed:
            try:
                chunk = os.read(self._answers.fileno(), 1 << 20)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:  # the worker has exited, its last answers read
                self._ended(None)
                return
            self._in += chunk
            try:
                self._ready.extend(self._frames())
            except Exception as exc:  # an answer that cannot be unpickled...
                logger.exception("sst: reading the answers of worker %d failed", self.index)
                self._ended(f"worker process {self.index}: reading its answers failed: {exc!r}")
                return
            # settled one by one from the worker's queue: a callback may stop this worker,
            # or read it again, and the answers still settle in the order they came
            while self._ready and not self.closed:
                self._answer(self._ready.popleft())

    def _frames(self) -> list:
        """The whole frames received so far, unpickled (the rest stays in ``_in``)."""
        buf, pos, frames = self._in, 0, []
        while len(buf) - pos >= 4:
            (n,) = struct.unpack_from("!i", buf, pos)
            head = 4
            if n == -1:
                if len(buf) - pos < 12:
                    break
                (n,) = struct.unpack_from("!Q", buf, pos + 4)
                head = 12
            if len(buf) - pos - head < n:
                break
            frames.append(bytes(buf[pos + head : pos + head + n]))
            pos += head + n
        del buf[:pos]
        return [pickle.loads(frame) for frame in frames]

    def _answer(self, msg: tuple) -> None:
        seq, ok, value = msg
        if seq == -1:  # the worker could not start
            exc, tb = value
            self.broken = f"worker process {self.index} could not start: {exc!r}"
            return
        future = self._pending.pop(seq, None)
        if future is None or not future.set_running_or_notify_cancel():
            return  # cancelled at close: nobody waits for it
        if ok:
            future.set_result(value)
        else:
            exc, tb = value
            exc.__cause__ = RemoteTraceback(tb)
            future.set_exception(exc)

    def _ended(self, reason: Optional[str] = None) -> None:
        """The answers pipe ended (the worker exited, or its answers cannot be read)."""
        if reason is None:
            self.process.join(0.5)  # it closed its pipe to exit: let its exit code arrive
            code = self.process.exitcode
            reason = self.broken or f"worker process {self.index} (pid {self.process.pid}) ended with exit code {code}"
        self._shut(reason)

    def _shut(self, reason: str) -> None:
        """No more answers will come: every call still waiting fails."""
        self.broken = reason
        self._close()
        pending, self._pending = self._pending, {}
        for seq in sorted(pending):  # in the order they were sent
            future = pending[seq]
            if future.set_running_or_notify_cancel():
                future.set_exception(BrokenProcessPool(reason))

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._reactor is not None:
            self._reactor.removeReader(self._ends[0])
            self._reactor.removeWriter(self._ends[1])
        self._out.clear()
        self._requests.close()
        self._answers.close()

    # -- lifecycle
    def alive(self) -> bool:
        return self.broken is None and not self.closed and self.process.is_alive()

    def ask_to_stop(self) -> None:
        """The worker ends after the calls already sent."""
        if not self._stopping and not self.closed and self.broken is None:
            self._stopping = True
            self._send(None)

    def stop(self, wait: bool = True, timeout: float = 60.0) -> None:
        """Stop the worker after the calls already sent (``wait``: their answers are
        read meanwhile), or at once."""
        if self.process.is_alive():
            self.ask_to_stop()
            if wait:
                _drive([self], lambda: not self.process.is_alive(), timeout)
        if self.process.is_alive():
            if wait or self.broken is not None:
                self.process.terminate()
                self.process.join(5)
        if not self.closed and wait:
            _drive([self], lambda: self.closed, 5)  # the answers it sent before it exited
        if not self.closed:
            self._shut(self.broken or f"worker process {self.index} (pid {self.process.pid}) was stopped")


def _writev(fd: int, buffers: list) -> int:
    if hasattr(os, "writev"):
        return os.writev(fd, buffers)
    return os.write(fd, buffers[0])


#: bytes a worker's pipe holds where the system lets it grow (Linux): the worker's
#: backlog of pages must not wait for the reactor's next turn to be written
PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or over the system's pipe-max-size
        pass


class _PipeEnd:
    """One end of a worker's pipes as a Twisted reactor watches it (``addReader`` /
    ``addWriter``): ``ready`` runs when the pipe can be read or written."""

    def __init__(self, fd: int, ready: Callable[[], None]):
        self._fd = fd
        self.doRead = self.doWrite = ready

    def fileno(self) -> int:
        return self._fd

    def connectionLost(self, reason: Any) -> None:
        """The reactor gave the pipe up (the worker's end closed): its reader says why."""

    def logPrefix(self) -> str:
        return "sst-worker"


def _drive(workers: list, done: Callable[[], bool], timeout: float) -> None:
    """Read the workers' answers and write their calls until ``done()`` or ``timeout``:
    waiting for answers where no reactor reads them (or in the reactor thread itself, at
    the crawl's close, while the reactor does not run)."""
    import selectors

    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        watched: dict[int, Any] = {}  # fd -> what to run when it is ready
        while not done():
            wanted = {}
            for worker in workers:
                if not worker.closed:
                    wanted[worker._answers.fileno()] = (selectors.EVENT_READ, worker.read)
                    if worker._out:
                        wanted[worker._requests.fileno()] = (selectors.EVENT_WRITE, worker.flush)
            for fd in [fd for fd in watched if watched[fd] != wanted.get(fd)]:
                selector.unregister(fd)
                del watched[fd]
            for fd, (events, ready) in wanted.items():
                if fd not in watched:
                    selector.register(fd, events, ready)
                    watched[fd] = (events, ready)
            left = deadline - time.monotonic()
            if left <= 0 or not watched:
                return
            for key, _ in selector.select(min(left, 1.0)):
                key.data()


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
        reactor: Any = None,
    ):
        """``reactor``: a running Twisted reactor, called from its thread only, that reads
        the answers as they come; without one, answers are read by :meth:`wait`."""
        import multiprocessing

        self.n = max(1, int(n))
        self._reactor = reactor
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
            if self._reactor is not None:
                worker.watch(self._reactor)
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

    def wait(self, futures: list, timeout: float) -> None:
        """Read answers until every future in ``futures`` is done or ``timeout`` passed
        (then ``result()`` tells which); in the reactor thread, the reactor stands still
        meanwhile."""
        workers = [w for w in self._workers if w is not None]
        waiting = collections.deque(futures)

        def all_done() -> bool:
            while waiting and waiting[0].done():  # they mostly finish in the order sent
                waiting.popleft()
            return not waiting

        _drive(workers, all_done, timeout)

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

    def kill(self, i: int) -> None:
        """Kill worker ``i``'s process (it hangs): its pipe ends, and its calls fail as
        at a crash."""
        worker = self._workers[i]
        if worker is not None and worker.process.is_alive():
            worker.process.kill()

    def shutdown(self, wait: bool = True) -> None:
        workers = [w for w in self._workers if w is not None]
        self._workers = [None] * self.n
        if wait:  # all finish their calls at once, their answers read meanwhile
            for worker in workers:
                if worker.process.is_alive():
                    worker.ask_to_stop()
            _drive(workers, lambda: not any(w.process.is_alive() for w in workers), 60)
        for worker in workers:
            try:
                worker.stop(wait=wait)
            except Exception:
                logger.debug("sst: stopping worker %d failed", worker.index, exc_info=True)
