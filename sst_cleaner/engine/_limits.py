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
  that, cooperatively: :func:`run_with_budget` (and :class:`PageBudgets`, for each page
  of a fit) starts a deadline for the calling thread, and the engine's own loops call
  :func:`check_budget` at safe points (per page of a fit, per stage of a clean, every so
  many blocks, rows or elements: wherever work grows with the page). Past the deadline
  the check raises :class:`BudgetExceeded` there, never inside a lock, a ``finally`` or
  a cache being filled, so an overrun leaves nothing half-done behind. The exception
  derives from ``BaseException`` so a method's ``except Exception`` cannot swallow it. No
  thread is interrupted from outside and no signal handler is installed, so it works in
  any thread (Scrapy reactor or thread pool) and leaves ``SIGALRM`` to the application.

  Work done in C between two checks (lxml's parse, the compiled loops of
  :mod:`~sst_cleaner.engine._walk` and the site model's trees) cannot be cut short: the
  input caps above bound it, as they bound parsing. A process worker of the Scrapy layer
  that stops answering altogether is ended by its parent (see
  :mod:`sst_cleaner.scrapy._dispatch`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterator, Optional, TypeVar

T = TypeVar("T")

#: libxml2's own nesting limit without ``huge_tree`` (and 2048 with it)
LIBXML2_MAX_DEPTH = 256
LIBXML2_HUGE_MAX_DEPTH = 2048


def _thread_cpu_clock_works() -> bool:
    try:
        time.thread_time()
        return True
    except (AttributeError, OSError):
        return False


#: Time budgets count the CPU time of the thread doing the work where the platform has a
#: per-thread CPU clock (Linux, most Unixes, Windows): a page is cut because *it* is
#: costly, not because the machine is busy with other jobs (on an overloaded machine a
#: wall-time budget returned ordinary pages whole). Elsewhere they count wall time. The
#: working thread reads it itself, at each :func:`check_budget`.
CPU_BUDGETS = _thread_cpu_clock_works()


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
        parsing included. Past it, the method stops at its next budget check and CETD, a
        cheap page-level method, cleans the page under a budget of its own as long as
        this one; if that overruns too (or keeps nothing), the page is *returned whole*:
        all its visible text as one informative block. ``CleanResult.status ==
        "over_budget"`` either way (see :mod:`sst_cleaner.engine._fallback`). It also
        bounds each page's learning in ``SiteCleaner.fit`` (parsing included). The
        default method and ``"sentences"`` analyse a page apart from their model and
        then add it: a page whose analysis overruns is dropped (counted in
        ``skipped_pages``, ``fit_status == "partial"``) and the walk goes on with the
        next page. The other methods learn a page into their model as they read it: a
        page that overruns ends the fit, which is discarded (``fit_status ==
        "over_budget"``, the cleaner cleans page by page), never learnt again without
        that page. ``partial_fit`` bounds the analysis step the same way; other
        methods' ``partial_fit`` is not cut short (its page is added to a live model);
        the input caps bound it. ``None`` or 0 disables it.
    ``site_time_budget`` (120.0 s): CPU time for building one site model. ``fit`` stops
        reading pages once half of it is spent (the rest are counted in
        ``skipped_pages``) and stops at its next budget check past it (the half-built
        model is discarded, the cleaner stays unfitted and cleans page by page,
        ``fit_status == "over_budget"``); ``partial_fit`` stops learning once the site has
        used its budget (pages are counted in ``skipped_pages``, never cut half-way, so
        the model stays consistent). ``None`` or 0 disables it.
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
    """Raised by :func:`check_budget` when a time budget of the calling thread has run
    out (never escapes this package).

    A ``BaseException``, like ``KeyboardInterrupt``, so that method code catching
    ``Exception`` does not swallow it. ``budget`` is the budget that ran out, so that
    nested budgets each catch only their own.
    """

    def __init__(self, budget: Any = None):
        super().__init__()
        self.budget = budget


class _Budget:
    """One budget in force in a thread: its deadline on :func:`budget_clock`."""

    __slots__ = ("deadline", "spent")

    def __init__(self, seconds: float):
        self.deadline = budget_clock() + seconds
        #: a check found the deadline passed (the budget raised, or will at the next check)
        self.spent = False


class _ThreadBudgets(threading.local):
    """The budgets in force in one thread (innermost last) and their earliest deadline,
    so that a check with no budget in force costs no clock read."""

    def __init__(self) -> None:
        self.budgets: list[_Budget] = []
        self.deadline = float("inf")

    def push(self, budget: _Budget) -> None:
        self.budgets.append(budget)
        if budget.deadline < self.deadline:
            self.deadline = budget.deadline

    def remove(self, budget: _Budget) -> None:
        # by identity, anywhere in the list: a fit may leave the page walk (and its
        # page's budget) before the walk ends
        for i in range(len(self.budgets) - 1, -1, -1):
            if self.budgets[i] is budget:
                del self.budgets[i]
                break
        self.deadline = min((b.deadline for b in self.budgets), default=float("inf"))


_THREAD_BUDGETS = _ThreadBudgets()


def check_budget() -> None:
    """Raise :class:`BudgetExceeded` if a time budget of the calling thread has run out.

    The engine calls it at safe points of its own loops (per page of a fit, per stage of
    a clean, every so many blocks or rows): never inside a lock, a ``finally`` or a
    half-made cache entry. A method registered from outside the package calls it the
    same way, in loops whose work grows with the page; one that never does is still
    judged when it returns (see :func:`run_with_budget`), but cannot be cut short. With
    no budget in force it reads no clock; with one, a clock read (about a microsecond),
    which is why loops over blocks call it every few dozen iterations, not every one.
    """
    state = _THREAD_BUDGETS
    if state.budgets and budget_clock() > state.deadline:
        _expired(state)


def _expired(state: _ThreadBudgets) -> None:
    now = budget_clock()
    # the outermost budget that ran out: an enclosing budget's end ends the inner work too
    for budget in state.budgets:
        if now > budget.deadline:
            budget.spent = True
            raise BudgetExceeded(budget)


def run_with_budget(
    fn: Callable[..., T], seconds: Optional[float], *args: Any, **kwargs: Any
) -> tuple[bool, Optional[T]]:
    """Call ``fn(*args, **kwargs)`` with a time budget (the thread's CPU time where
    :data:`CPU_BUDGETS`, else wall time).

    Returns ``(True, value)`` if it finished in time, ``(False, None)`` if a
    :func:`check_budget` inside it found the budget spent, or if it returned after its
    deadline (a method without checks is not cut short, but its late answer is not
    used either). ``seconds`` None or <= 0 means no budget. Other exceptions propagate.
    Budgets nest: an enclosing budget's :class:`BudgetExceeded` goes through.
    """
    if not seconds or seconds <= 0:
        return True, fn(*args, **kwargs)
    budget = _Budget(seconds)
    state = _THREAD_BUDGETS
    state.push(budget)
    try:
        value = fn(*args, **kwargs)
    except BudgetExceeded as exc:
        if exc.budget is not budget:
            raise  # not ours: an enclosing budget ran out
        return False, None
    finally:
        state.remove(budget)
    if budget.spent or budget_clock() > budget.deadline:
        return False, None
    return True, value


class PageBudgets:
    """The pages a method's ``fit`` walks, prepared one at a time, each within its own
    time budget.

    A method's ``fit`` walks its pages with ``for page in pages``; handed this sequence
    instead of a list, each step of that walk checks the budgets in force, starts a
    budget of ``budget`` seconds for page ``i`` (replacing the previous page's; None: no
    budget), then makes the page with ``prepare(items[i])`` (parsing is part of a page's
    cost). A :func:`check_budget` in the method's own loops, or the next step of the
    walk, raises :class:`BudgetExceeded` inside the ``fit`` when the page has overrun,
    and :meth:`fired` names the page (see ``SiteCleaner.fit``: the fit ends there). Work
    a method does after the walk (scoring the model) is not a page's and runs under the
    enclosing budget only. Always call :meth:`disarm` when the ``fit`` is over, however
    it ended.

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
        self._page_budget: Optional[_Budget] = None
        self._spent: Optional[_Budget] = None
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
            check_budget()  # the page just learnt, or the site, may have overrun
            self.disarm()
            if not self._keep_reading():
                return
            self._current = i
            self.not_read -= 1
            if self._budget and self._budget > 0:
                self._page_budget = _Budget(self._budget)
                _THREAD_BUDGETS.push(self._page_budget)
            page = self._prepare(item)
            check_budget()  # parsing counts
            yield page
        check_budget()
        self.disarm()

    def disarm(self) -> None:
        """End the current page's budget (remembering whether it ran out)."""
        budget = self._page_budget
        if budget is not None:
            self._page_budget = None
            _THREAD_BUDGETS.remove(budget)
            if budget.spent:
                self._spent = budget

    def fired(self, exc: Optional[BudgetExceeded] = None) -> Optional[int]:
        """Index of the page whose budget ran out (``exc``'s, when given), or None."""
        if exc is not None:
            if exc.budget is not None and exc.budget in (self._page_budget, self._spent):
                return self._current
            return None
        if self._spent is not None or (self._page_budget is not None and self._page_budget.spent):
            return self._current
        return None
