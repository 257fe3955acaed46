"""Hard limits: what one page or one site may cost, and what happens past each limit.

A crawler meets every kind of page: 50 MB bodies, binary data served as text/html, DOMs
nested 100,000 levels deep, millions of tiny elements, markup built to hang parsers. One
bad page must never stop a crawl or stall the reactor, so every cost of cleaning has a
ceiling here, and every ceiling has a defined outcome (see :class:`Limits`).

Two kinds of bound work together:

* **Input caps** (bytes, tags, elements, near-empty blocks, depth) are applied by
  :func:`sst_cleaner.engine._dom.parse_html` before any method sees the page. They make the
  work of every method bounded, because every method is (near) linear in the elements it
  is given. Parsing itself happens in C and cannot be interrupted, so only input caps
  bound it.
* **Time budgets** guard the Python-level work of a method (``clean``, ``fit``) on top of
  that: :func:`run_with_budget` arms a watchdog thread that raises :class:`BudgetExceeded`
  inside the working thread when its deadline passes (CPython's
  ``PyThreadState_SetAsyncExc``, delivered at the next bytecode). The exception derives
  from ``BaseException`` so a method's ``except Exception`` cannot swallow it. No signal
  handler is installed, so it works in any thread (Scrapy reactor or thread pool) and
  leaves ``SIGALRM`` to the application.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import threading
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterator, Optional, TypeVar

T = TypeVar("T")

#: libxml2's own nesting limit without ``huge_tree`` (and 2048 with it)
LIBXML2_MAX_DEPTH = 256
LIBXML2_HUGE_MAX_DEPTH = 2048


def _thread_cpu_clocks_work() -> bool:
    try:
        clk = time.pthread_getcpuclockid(threading.get_ident())
        time.clock_gettime(clk)
        return True
    except (AttributeError, OSError):
        return False


#: Time budgets count the CPU time of the thread doing the work where the platform can
#: read another thread's CPU clock (Linux, most Unixes): a page is cut because *it* is
#: costly, not because the machine is busy with other jobs (on an overloaded machine a
#: wall-time budget returned ordinary pages whole). Elsewhere they count wall time.
CPU_BUDGETS = _thread_cpu_clocks_work()


def budget_clock() -> float:
    """The clock budgets are counted in, read from the working thread itself."""
    return time.thread_time() if CPU_BUDGETS else time.monotonic()


@dataclass(frozen=True)
class Limits:
    """Every hard limit of the package, with its default and what happens past it.

    ``max_page_bytes`` (5,000,000): bytes of a page considered (characters for ``str``
        input). A longer page is cut at the last ``<`` before the limit, so no tag is
        split, and then cleaned; the page is flagged ``truncated``. The largest page of
        the evaluation corpora is 0.63 MB.
    ``max_tags`` (100,000): ``<`` characters considered before parsing (start and end
        tags: a real page has about two per element, so this lets 40,000-element pages
        through; the dev corpora's largest page has 13,401, real reference manuals
        reach 33,000). A page with more is cut (at a tag boundary, at the
        proportional position) before parsing, so a flood of tiny elements cannot make
        the C parser build millions of nodes; flagged ``truncated``. Parsing cost is
        bounded by this, not by bytes.
    ``max_attributes`` (1,000): attributes kept per start tag (real elements have a few
        dozen at most). Later ones are dropped before parsing, because libxml2 compares
        each attribute name with all earlier ones of the tag (quadratic: 100,000
        attributes cost 55 s). Not flagged: no text is lost.
    ``max_elements`` (40,000): elements kept after parsing (counted after invisible
        elements are dropped; the dev corpora's largest page has 6,000, long reference
        pages such as Python's ``library/os.html`` 16,000-20,000; a method spends 20-40 us
        per element, so a 40,000-element page cleans within ``page_time_budget``,
        ``benchmarks/big_page.py``). Elements past the
        cap in document order are dropped, counted in ``PreparedPage.dropped_elements``;
        flagged ``truncated``.
    ``max_tiny_blocks`` (5,000): near-empty blocks kept: block-level elements without
        child elements whose text is one or two characters (``<li>x``), counted after
        invisible elements are dropped; a page with more runs of text of three
        characters or more is allowed as many near-empty blocks (a long table of short
        cells beside its descriptions).
        Every method spends as much on a block as on a paragraph, so a flood of 40,000
        (which ``max_elements`` lets through) cost several seconds per clean while
        carrying no words; real pages hold a few (the dev corpora's most is 181). The
        page is cut after the last one allowed (document order), the elements removed
        counted in ``PreparedPage.dropped_elements``; flagged ``truncated``.
    ``max_depth`` (256): nesting depth kept (``html`` is depth 1). Deeper elements are
        flattened into their ancestor at the limit: their text is kept, their tags are
        not. libxml2 aborts a parse at depth 256 and drops *everything after* the deep
        spot; ``parse_html`` then re-parses with libxml2's 2048 limit so the rest of the
        page survives. Content after a nesting deeper than 2048 is lost (flagged
        ``truncated``).
    ``page_time_budget`` (1.5 s): CPU time (see :data:`CPU_BUDGETS`) for ``SiteCleaner.clean`` on one page,
        parsing included. Past it, the method is interrupted and CETD, a cheap page-level
        method, cleans the page under a budget of its own as long as this one; if that
        overruns too (or keeps nothing), the page is *returned whole*: all its visible text
        as one informative block. ``CleanResult.status == "over_budget"`` either way (see
        :mod:`sst_cleaner.engine._fallback`). It also bounds
        each page's learning in ``SiteCleaner.fit`` (parsing included): a page that
        overruns it is dropped (counted in ``skipped_pages``, ``fit_status ==
        "partial"``) and the model is learnt again from the other pages, so it never
        holds half a page. ``partial_fit`` is not interrupted (its page is added to a
        live model); the input caps bound it. ``None`` or 0 disables it.
    ``site_time_budget`` (120.0 s): CPU time for building one site model. ``fit`` stops
        reading pages once half of it is spent (the rest are counted in
        ``skipped_pages``) and is interrupted past it (the half-built model is
        discarded, the cleaner stays unfitted and cleans page by page, ``fit_status ==
        "over_budget"``); ``partial_fit`` stops learning once the site has used its budget
        (pages are counted in ``skipped_pages``, never interrupted half-way, so the model
        stays consistent). ``None`` or 0 disables it.
    """

    max_page_bytes: int = 5_000_000
    max_tags: int = 100_000
    max_attributes: int = 1_000
    max_elements: int = 40_000
    max_tiny_blocks: int = 5_000
    max_depth: int = LIBXML2_MAX_DEPTH
    page_time_budget: Optional[float] = 1.5
    site_time_budget: Optional[float] = 120.0

    def __post_init__(self) -> None:
        for name in ("max_page_bytes", "max_tags", "max_attributes", "max_elements", "max_tiny_blocks", "max_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive int, not {value!r}")
        if self.max_elements < 16:
            raise ValueError("Limits.max_elements must be at least 16 (html, body and some content)")
        if self.max_depth < 4:
            raise ValueError("Limits.max_depth must be at least 4 (html > body > block > inline)")
        if self.max_depth > LIBXML2_HUGE_MAX_DEPTH:
            raise ValueError(f"Limits.max_depth cannot exceed libxml2's {LIBXML2_HUGE_MAX_DEPTH}")
        for name in ("page_time_budget", "site_time_budget"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not value >= 0
                or value == float("inf")
            ):
                raise ValueError(f"Limits.{name} must be a finite number of seconds >= 0 or None")

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in fields(cls))

    @classmethod
    def split_params(cls, params: dict[str, Any], base: Optional["Limits"] = None) -> tuple["Limits", dict]:
        """Separate limit keywords (``max_page_bytes=`` ...) from a method's parameters.

        Returns the limits (``base`` or the defaults, updated with the keywords found) and
        the remaining parameters, which belong to the method and its saved model.
        """
        names = cls.field_names()
        own = {k: v for k, v in params.items() if k in names}
        rest = {k: v for k, v in params.items() if k not in names}
        limits = base if base is not None else DEFAULT_LIMITS
        if own:
            limits = replace(limits, **own)
        return limits, rest


DEFAULT_LIMITS = Limits()


class BudgetExceeded(BaseException):
    """Raised inside a thread whose time budget ran out (never escapes this package).

    A ``BaseException``, like ``KeyboardInterrupt``, so that method code catching
    ``Exception`` does not swallow it.
    """


def _set_async_exc(thread_id: int, exc: Optional[type]) -> int:
    # exc=None clears a pending asynchronous exception of the thread
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class _Watchdog:
    """One daemon thread that interrupts the threads whose deadline has passed.

    Entries are armed and disarmed under one lock, and an entry fires at most once, under
    that lock; disarming clears a fired-but-not-yet-delivered exception, so an interrupt
    can never land after its guarded region has ended.
    """

    def __init__(self) -> None:
        # The working threads take the raw C lock (``with self._lock``), never the
        # Condition's Python-level __enter__/__exit__: an interrupt delivered inside a
        # Python frame of Condition.__exit__ would leave the lock held (seen: a thread
        # spinning in Condition.__exit__ and the watchdog blocked). A C lock's with-block
        # always releases, whatever is raised inside it.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[tuple[float, int]] = []
        self._entries: dict[int, list] = {}  # token -> [deadline, thread_id, fired]
        self._tokens = itertools.count()
        self._thread: Optional[threading.Thread] = None

    def arm(self, seconds: float) -> tuple[int, list]:
        """Start a deadline for the calling thread; returns (token, entry), where
        ``entry[2]`` tells whether it fired.

        With :data:`CPU_BUDGETS` the deadline is first set ``seconds`` of wall time away;
        when it comes, the thread's CPU clock says how much of the budget it really used,
        and the deadline moves on by what is left (a thread that waited for the CPU is
        not cut for it)."""
        deadline = time.monotonic() + seconds
        ident = threading.get_ident()
        clock = cpu0 = None
        if CPU_BUDGETS:
            clock = time.pthread_getcpuclockid(ident)
            cpu0 = time.clock_gettime(clock)
        with self._lock:
            token = next(self._tokens)
            entry = [deadline, ident, False, clock, cpu0, seconds]
            self._entries[token] = entry
            heapq.heappush(self._heap, (deadline, token))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="sst-cleaner-watchdog", daemon=True)
                self._thread.start()
            elif self._heap[0][1] == token:
                # woken only for a deadline sooner than the one it waits for (a disarmed
                # entry's, usually, popped when it comes): a wake-up per clean made the
                # watchdog take the GIL from the working thread every time
                self._cond.notify()
        return token, entry

    def disarm(self, token: int) -> None:
        """Forget ``token``; if it fired, clear its exception in case it is still pending.

        The interrupt may be delivered inside this very call (before the clear): it then
        propagates to ``run_with_budget``, which disarms again; the lock is released
        either way."""
        with self._lock:
            entry = self._entries.pop(token, None)
            if entry is not None and entry[2]:
                _set_async_exc(entry[1], None)

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][1] not in self._entries:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, token = self._heap[0]
                now = time.monotonic()
                if now < deadline:
                    self._cond.wait(deadline - now)
                    continue
                heapq.heappop(self._heap)
                entry = self._entries[token]
                if entry[3] is not None:
                    try:
                        left = entry[5] - (time.clock_gettime(entry[3]) - entry[4])
                    except OSError:  # the thread is gone: nothing to interrupt
                        left = 0.0
                    if left > 0.001:
                        entry[0] = now + left
                        heapq.heappush(self._heap, (entry[0], token))
                        continue
                entry[2] = True
                _set_async_exc(entry[1], BudgetExceeded)


_WATCHDOG = _Watchdog()


def run_with_budget(
    fn: Callable[..., T], seconds: Optional[float], *args: Any, **kwargs: Any
) -> tuple[bool, Optional[T]]:
    """Call ``fn(*args, **kwargs)`` with a time budget (the thread's CPU time where
    :data:`CPU_BUDGETS`, else wall time).

    Returns ``(True, value)`` if it finished in time, ``(False, None)`` if it was
    interrupted. ``seconds`` None or <= 0 means no budget. Other exceptions propagate.
    Budgets nest: an inner call interrupted by an enclosing budget re-raises.
    """
    if not seconds or seconds <= 0:
        return True, fn(*args, **kwargs)
    token, entry = _WATCHDOG.arm(seconds)
    try:
        try:
            value = fn(*args, **kwargs)
        finally:
            _WATCHDOG.disarm(token)
    except BudgetExceeded:
        _WATCHDOG.disarm(token)  # the delivery may have interrupted the first disarm
        if entry[2]:
            return False, None
        raise  # not ours: an enclosing budget ran out
    return True, value


class PageBudgets:
    """The pages a method's ``fit`` walks, prepared one at a time, each within its own
    deadline.

    A method's ``fit`` walks its pages with ``for page in pages``; handed this sequence
    instead of a list, each step of that walk arms a deadline of ``budget`` seconds for
    page ``i`` (replacing the previous page's; None: no deadline), then makes the page
    with ``prepare(items[i])`` (parsing is part of a page's cost), and the end of the
    walk disarms it. When a page overruns, :class:`BudgetExceeded` is raised inside the
    ``fit`` and :meth:`fired` names the page, so the caller can drop it and fit again on
    the others (see ``SiteCleaner.fit``). Work a method does after the walk (scoring the
    model) is not a page's and runs under the enclosing budget only. Always call
    :meth:`disarm` when the ``fit`` is over, however it ended.

    Pages are made as the walk reaches them and not kept: a method that walks its pages
    once holds one parsed page at a time, however many it learns from (500 parsed pages
    held ~280 MB). Indexing (``pages[i]``) prepares the page again. ``keep_reading()``,
    asked before each page, ends the walk early when it says False; the pages not
    reached, then or because the method left the walk (a full model), are counted in
    :attr:`not_read`.
    """

    def __init__(
        self,
        items: list,
        budget: Optional[float] = None,
        prepare: Callable[[Any], Any] = lambda item: item,
        keep_reading: Callable[[], bool] = lambda: True,
    ):
        self._items = items
        self._budget = budget
        self._prepare = prepare
        self._keep_reading = keep_reading
        self._token: Optional[int] = None
        self._entry: Optional[list] = None
        self._current: Optional[int] = None
        #: pages the last walk did not hand out (``keep_reading()`` said False, or the
        #: method stopped walking)
        self.not_read = 0

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> Any:
        return self._prepare(self._items[i])

    def __iter__(self) -> Iterator[Any]:
        self.not_read = len(self._items)
        for i, item in enumerate(self._items):
            self.disarm()
            if not self._keep_reading():
                return
            self._current = i
            self.not_read -= 1
            if self._budget:
                self._token, self._entry = _WATCHDOG.arm(self._budget)
            yield self._prepare(item)
        self.disarm()

    def disarm(self) -> None:
        if self._token is not None:
            _WATCHDOG.disarm(self._token)
            self._token = None  # after: an interrupt inside disarm leaves it to retry

    def fired(self) -> Optional[int]:
        """Index of the page whose deadline passed, or None."""
        if self._entry is not None and self._entry[2]:
            return self._current
        return None
