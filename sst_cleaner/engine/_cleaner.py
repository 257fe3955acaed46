"""``SiteCleaner``: the public API over every method.

    cleaner = SiteCleaner()                 # default method
    cleaner.fit(pages)                      # html or (url, html) of ONE site
    cleaner.partial_fit(page)
    result = cleaner.clean(html, url=None)  # works before fit (page-level fallback)
    cleaner.save(path); SiteCleaner.load(path)
    why = cleaner.explain(html, url=None)   # each block's verdict and its evidence

A *method* is a class registered with :func:`register_method`. It receives prepared pages
(:class:`~sst_cleaner.engine._dom.PreparedPage`) and must implement::

    fit(pages: Sequence[PreparedPage]) -> None   # walk it once: each page is parsed
                                            # as it is reached (indexing parses again)
    partial_fit(page: PreparedPage) -> None
    clean(page: PreparedPage) -> CleanResult
    to_dict() -> dict                       # JSON-serialisable model state
    from_dict(state: dict, **params) (classmethod)
    n_pages: int                            # pages the model has seen

A method that also has ``prepare_page(page)`` (an analysis touching no model state) and
``apply_page(analysis) -> bool`` (adding it; False: the model is full) is fitted through
them, page by page, so that a page over its time budget is dropped before the model sees
it. Time budgets are kept by :func:`~sst_cleaner.engine._limits.check_budget`: a method
calls it in its loops whose work grows with the page (see :mod:`~sst_cleaner.engine._limits`).

Models are saved as JSON (see :mod:`sst_cleaner.engine._model_io`), never pickled.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Iterable, NamedTuple, Optional, Union

from sst_cleaner.engine._dom import HtmlInput, PreparedPage, as_page
from sst_cleaner.engine._fallback import fallback_budget, over_budget_result, rescue_empty
from sst_cleaner.engine._formats import rewrite_text
from sst_cleaner.engine._gcpause import gc_paused
from sst_cleaner.engine._learnt import LearntPages, page_key
from sst_cleaner.engine._limits import (
    BudgetExceeded,
    Limits,
    PageBudgets,
    budget_clock,
    check_budget,
    run_with_budget,
)
from sst_cleaner.engine._parallel_fit import check_n_jobs, input_size, map_shards, plan_shards
from sst_cleaner.engine._registry import DEFAULT_METHOD, find_method, learns_in_shards, method_class
from sst_cleaner.engine._result import STATUS_NO_LAYOUT, STATUS_SITE_EMPTY, CleanResult

PageInput = Union[HtmlInput, tuple]

#: statuses of a result whose empty text is rescued when the page holds prose
_RESCUED_STATUSES = ("ok", "truncated", STATUS_NO_LAYOUT)

#: cleaned once with a freshly loaded model, so that bad state fails at load time
_PROBE_PAGE = (
    "<html><head><title>Probe</title></head><body><div><h1>Model check</h1>"
    "<p>A loaded model must clean this short page. It has two sentences.</p>"
    "<ul><li><a href='/a'>Home</a></li><li><a href='/b'>About</a></li></ul></div></body></html>"
)
#: the probe for a method that reads a rendered page's layout (``needs_layout``: "cehtd"),
#: so that its check runs its own path, not its fallback for pages without layout
_LAYOUT_PROBE_PAGE = _PROBE_PAGE.replace(
    "<body>", "<body data-sst-layout='1' data-sst-vw='800' data-sst-x='0' data-sst-w='800' data-sst-vis='1'>"
)


class FitOutcome(NamedTuple):
    """One shard's learning: the fitted method (or, from a worker process, its
    ``shard_state()``), pages skipped, whether it finished within the budget, the
    seconds (budget clock) it took, and of the skipped pages those not learnt because
    the model was full."""

    model: Any
    skipped: int
    ok: bool
    seconds: float
    full: int = 0


class _Walk:
    """How far a fit got through its pages, read however the fit ended."""

    def __init__(self, n: int):
        #: pages not handed to the model (the walk stopped or ended before them)
        self.not_read = n
        #: pages whose own learning overran the page budget (dropped)
        self.dropped = 0
        #: the page the full model refused, and the pages after it
        self.full = 0


def _learn_in_two_steps(impl: Any, inputs: list, limits: Limits, keep_reading: Any, walk: _Walk) -> None:
    """The fit of a method that learns a page in two steps (``prepare_page``, which
    touches no model state, then ``apply_page``, small by construction): each page's
    preparation, parsing included, runs under the page budget, and a page that overruns
    it is dropped before the model sees it, so the walk goes on with the next page."""
    impl.fit([])  # a fresh, empty model
    for i, item in enumerate(inputs):
        check_budget()  # the site's budget, between pages
        if not keep_reading():
            return
        walk.not_read -= 1
        ok, analysis = run_with_budget(_prepare_page, limits.page_time_budget, impl, item, limits)
        if not ok:
            walk.dropped += 1
            continue
        if impl.apply_page(analysis) is False:  # full: the pages left are not read
            walk.full = len(inputs) - i
            walk.not_read = len(inputs) - i - 1
            return


def _prepare_page(impl: Any, item: Any, limits: Limits) -> Any:
    return impl.prepare_page(as_page(item, limits=limits))


def _fit_pages(method: str, params: dict, limits: Limits, inputs: list) -> FitOutcome:
    """Learn a fresh ``method`` model from ``inputs`` under ``limits`` (see ``SiteCleaner.fit``).

    One walk over the pages, however it ends: a page over its budget is dropped (two-step
    methods) or ends the fit (the others); it is never learnt again without that page."""
    start = budget_clock()
    budget = limits.site_time_budget
    inputs = list(inputs)

    def keep_reading() -> bool:
        return not budget or budget_clock() - start <= budget / 2

    impl = method_class(method)(**params)
    walk = _Walk(len(inputs))
    if hasattr(impl, "prepare_page") and hasattr(impl, "apply_page"):
        ok, _ = run_with_budget(_learn_in_two_steps, budget, impl, inputs, limits, keep_reading, walk)
    else:
        seq = PageBudgets(
            inputs, limits.page_time_budget, prepare=lambda p: as_page(p, limits=limits), keep_reading=keep_reading
        )
        try:
            ok, _ = run_with_budget(impl.fit, budget, seq)
        except BudgetExceeded as exc:
            if seq.fired(exc) is None:
                raise  # an enclosing budget: not ours
            ok = False  # the method was cut inside a page: its model holds half of it
        finally:
            seq.disarm()
        walk.not_read = seq.not_read
        if ok and getattr(impl, "full", False):  # it refused the page it stopped at
            walk.full = seq.not_read + 1
    skipped = walk.dropped + walk.not_read + (1 if walk.full and ok else 0)
    return FitOutcome(impl, skipped, ok, budget_clock() - start, walk.full if ok else 0)


def _fit_shard_for_merge(method: str, params: dict, limits: Limits, inputs: list) -> FitOutcome:
    """What a worker process runs: :func:`_fit_pages`, sending back the shard's state
    rather than the whole method object (which also holds its scorer)."""
    with gc_paused():
        out = _fit_pages(method, params, limits, inputs)
        return out._replace(model=out.model.shard_state())


class SiteCleaner:
    """Learns one site's template from its pages and cleans pages of that site."""

    def __init__(self, method: str = DEFAULT_METHOD, *, limits: Optional[Limits] = None, **params: Any):
        """``limits`` (a :class:`~sst_cleaner.engine._limits.Limits`) or its fields as keywords
        (``max_page_bytes=``, ``page_time_budget=``...) bound every page; the other
        keywords go to the method (and into the saved model)."""
        cls = method_class(method)
        self.method = method
        limits, params = Limits.split_params(params, limits)
        self.params = dict(params)
        self._impl = cls(**params)
        #: keys of the pages learnt (see :mod:`~sst_cleaner.engine._learnt`), saved with the model
        self.learnt = LearntPages()
        self._reset_build_state(limits)

    def _reset_build_state(self, limits: Limits) -> None:
        #: the limits in force (not saved with the model: they are the caller's policy)
        self.limits = limits
        #: seconds (CPU where the platform allows, see limits.CPU_BUDGETS) spent learning this
        #: site (compared with limits.site_time_budget)
        self.build_seconds = 0.0
        #: pages not learnt from because the site's build budget, or the page's own
        #: time budget, was spent
        self.skipped_pages = 0
        #: "ok", "partial" (some pages skipped), "full" (the site model reached its entry
        #: cap, see _learn_caps: the pages after it were not learnt) or "over_budget"
        #: (fit interrupted: unfitted)
        self.fit_status = "ok"
        #: of ``skipped_pages``, those not learnt because the site model was full
        self.model_full_pages = 0
        #: pages not learnt because the model had learnt them already
        self.duplicate_pages = 0

    # -- learning -------------------------------------------------------------------
    def fit(self, pages: Iterable[PageInput], *, n_jobs: int = 1) -> "SiteCleaner":
        """Learn the site from ``pages`` (html str/bytes, (url, html) pairs, or (url, html
        bytes, encoding) triples), replacing anything learnt before.

        Within ``limits.site_time_budget``: pages stop being read when half of it is
        spent (the rest are counted in ``skipped_pages``), and a method ``fit`` that
        overruns it stops at its next budget check and is discarded (``fit_status ==
        "over_budget"``: the cleaner is left unfitted and cleans page by page). Each
        page's own learning (parsing included) is bounded by ``limits.page_time_budget``:
        with the default method and ``"sentences"`` (which analyse a page before adding
        it) a page that overruns it is dropped (counted in ``skipped_pages``) and the
        walk goes on; with the other methods it ends the fit as an overrun of the site's
        budget does (``fit_status == "over_budget"``). The pages are walked once: a fit
        is never started again without a page.

        Pages are parsed as the method reaches them and let go once learnt: fitting
        holds one parsed page at a time, not all of them (500 pages: ~110 MB peak
        instead of ~280 MB). The cyclic garbage collector is paused meanwhile (:mod:`~sst_cleaner.engine._gcpause`):
        learning makes no reference cycles, and collections cost 12-15% of a fit.

        ``n_jobs`` > 1 (-1: every CPU) learns the pages on that many processes at once
        when the method's model can be merged (the default method's and
        ``"sentences"``'s can) and there are enough pages to be worth a process (see
        :mod:`~sst_cleaner.engine._parallel_fit`, which also says why a script using it needs
        the ``if __name__ == "__main__":`` guard). The model is the one a one-process
        fit learns (up to float rounding in its sums); each process gets its share of the site's time budget, and
        ``build_seconds`` adds up the CPU time of all of them.

        A page given twice (the same canonical URL, URL or content, see
        :mod:`~sst_cleaner.engine._learnt`) is learnt once (the others are counted in
        ``duplicate_pages``).

        A site model that reaches its entry cap (:mod:`~sst_cleaner.engine._learn_caps`)
        learns no more: the page that did not fit and the pages after it are not read
        (counted in ``skipped_pages`` and ``model_full_pages``, ``fit_status == "full"``).
        """
        jobs = check_n_jobs(n_jobs)
        with gc_paused():
            return self._fit(pages, jobs)

    def _fit(self, pages: Iterable[PageInput], jobs: int) -> "SiteCleaner":
        inputs, learnt, duplicates = [], LearntPages(), 0
        for p in pages:  # the caller's objects: pages are parsed as they are learnt
            key = page_key(p)
            if key in learnt:
                duplicates += 1
            else:
                learnt.add(key)
                inputs.append(p)
        args = [(self.method, self.params, self.limits, inputs)]
        # a parsed page cannot cross processes
        if jobs > 1 and learns_in_shards(self.method) and not any(isinstance(p, PreparedPage) for p in inputs):
            sizes = [input_size(p) for p in inputs]
            shards = plan_shards(sizes, jobs)
            budget = self.limits.site_time_budget
            if len(shards) > 1:
                # each shard's share of the site budget goes with its share of the HTML
                total = sum(sizes)
                args = [
                    (
                        self.method,
                        self.params,
                        replace(self.limits, site_time_budget=budget * sum(sizes[r.start : r.stop]) / total)
                        if budget
                        else self.limits,
                        inputs[r.start : r.stop],
                    )
                    for r in shards
                ]
        outcomes = map_shards(_fit_shard_for_merge, args, local=_fit_pages)
        ok = all(o.ok for o in outcomes)
        impl = outcomes[0].model if ok else method_class(self.method)(**self.params)
        if ok:
            for o in outcomes[1:]:
                impl.merge_shard(o.model)
        self._impl = impl
        self.learnt = learnt if ok else LearntPages()
        self.duplicate_pages = duplicates
        self.build_seconds = sum(o.seconds for o in outcomes)
        self.skipped_pages = sum(o.skipped for o in outcomes)
        self.model_full_pages = sum(o.full for o in outcomes) if ok else 0
        if self.model_full_pages:
            impl.full = True  # a shard's model was: partial_fit learns no more either
        self.fit_status = (
            "over_budget"
            if not ok
            else ("full" if self.model_full_pages else "partial" if self.skipped_pages else "ok")
        )
        return self

    def has_learnt(self, page: PageInput, url: Optional[str] = None) -> bool:
        """Whether the model has learnt ``page`` already (see :mod:`~sst_cleaner.engine._learnt`)."""
        return page_key(page, url) in self.learnt

    def partial_fit(self, page: PageInput, url: Optional[str] = None, *, key: Optional[str] = None) -> "SiteCleaner":
        """Add one more page of the site to the model.

        A page the model has learnt already is skipped (counted in ``duplicate_pages``):
        learning it again would make its own text look like the site's template. ``key``
        is the page's :func:`~sst_cleaner.engine._learnt.page_key` when the caller has it (a
        parsed page has lost its ``<link rel=canonical>``).

        Once the site has used ``limits.site_time_budget``, pages are no longer learnt
        from (counted in ``skipped_pages``). For methods that learn in two steps
        (``prepare_page`` then ``apply_page``: the default method and ``"sentences"``) the
        page's preparation, parsing included, runs under ``limits.page_time_budget`` like
        a page of ``fit`` (a page that overruns it is not learnt) and the update itself is
        bounded by the caps of :mod:`~sst_cleaner.engine._learn_caps`; the model is never left
        holding half a page. Other methods' ``partial_fit`` is not interrupted; the page
        caps bound its cost. Once the model is full (its entry cap), pages are not even
        parsed (counted in ``skipped_pages`` and ``model_full_pages``, ``fit_status``
        "full").
        """
        key = key or page_key(page, url)
        if key in self.learnt:
            self.duplicate_pages += 1
            return self
        budget = self.limits.site_time_budget
        if budget and self.build_seconds >= budget:
            self._skipped_one()
            return self
        if getattr(self._impl, "full", False):  # not even parsed
            self._skipped_one(full=True)
            return self
        start = budget_clock()
        try:
            prepare = getattr(self._impl, "prepare_page", None)
            if prepare is None:
                self._impl.partial_fit(as_page(page, url, self.limits))
                learnt = True
            else:
                ok, update = run_with_budget(
                    lambda: prepare(as_page(page, url, self.limits)), self.limits.page_time_budget
                )
                learnt = ok and self._impl.apply_page(update) is not False
            if learnt:
                self.learnt.add(key)
        finally:
            self.build_seconds += budget_clock() - start
        if not learnt:
            self._skipped_one(full=getattr(self._impl, "full", False))
        return self

    def _skipped_one(self, full: bool = False) -> None:
        self.skipped_pages += 1
        if full:
            self.model_full_pages += 1
            if self.fit_status in ("ok", "partial"):
                self.fit_status = "full"
        elif self.fit_status == "ok":
            self.fit_status = "partial"

    def tune(self, labeled_pages: Iterable[tuple]) -> Any:
        """Tune the method's thresholds on ``(page, gold_text)`` pairs of this site, for
        methods that learn from labels (``method="sentences"``: T per SST node)."""
        if not hasattr(self._impl, "tune"):
            raise TypeError(f"method {self.method!r} has nothing to tune")
        return self._impl.tune(list(labeled_pages))

    @property
    def n_pages(self) -> int:
        """Number of pages the model has learnt from."""
        return int(getattr(self._impl, "n_pages", 0))

    # -- cleaning -------------------------------------------------------------------
    def clean(self, html: PageInput, url: Optional[str] = None) -> CleanResult:
        """Informative content of one page of the site (page-level fallback before fit).

        Bounded by ``limits``: a page over a size cap is cut and cleaned
        (``status == "truncated"``); a page whose cleaning overruns
        ``limits.page_time_budget`` (parsing included) is cleaned by CETD under a budget
        of its own, or returned whole when that overruns too (``status ==
        "over_budget"``); a page holding prose of which the method kept no text gets a
        page-level fallback's text (``status == "empty_fallback"``, see
        :mod:`~sst_cleaner.engine._fallback`).

        The cyclic garbage collector is paused meanwhile unless a pause is on already
        (:mod:`~sst_cleaner.engine._gcpause`): cleaning makes no reference cycles, and
        its collections walk the page's blocks and rows again and again.
        """
        with gc_paused(join=False):
            return self._clean(html, url)

    def _clean(self, html: PageInput, url: Optional[str]) -> CleanResult:
        start = budget_clock()
        page = as_page(html, url, self.limits)
        budget = self.limits.page_time_budget
        remaining = budget - (budget_clock() - start) if budget else None
        if remaining is not None and remaining <= 0:
            ok, result = False, None
        else:
            ok, result = run_with_budget(self._impl.clean, remaining, page)
        if not ok or result is None:
            result = over_budget_result(page, self.method, fallback_budget(budget))
        else:
            if getattr(page, "truncated", False) and result.status in (
                "ok",
                STATUS_SITE_EMPTY,
            ):  # a cut page says so first
                result.status = "truncated"
            result.text = rewrite_text(result.text, result.blocks, page)
            # a site model's empty verdict (site_empty) is its own answer, said by its status
            if result.status in _RESCUED_STATUSES and not result.text.strip():
                rescued = rescue_empty(page, result, self.method, fallback_budget(budget))
                if rescued is not None:
                    result = rescued
        result.page = page
        if budget:
            result.time_left = budget - (budget_clock() - start)
        page.forget_steps()  # before the collector resumes (see PreparedPage.forget_steps)
        if not isinstance(html, PreparedPage):
            result.source = html
        return result

    def explain(self, html: PageInput, url: Optional[str] = None, *, name: Optional[str] = None) -> Any:
        """Clean ``html`` as :meth:`clean` does and say why: a
        :class:`~sst_cleaner.engine._explain.PageExplanation` with each block's verdict, score
        and evidence, the site model's template nodes on the page and the step that decided
        it (see :mod:`~sst_cleaner.engine._explain`; ``render_report`` there writes it as HTML).
        Slower than :meth:`clean` (the evidence is read apart from it); the model is not
        changed."""
        from sst_cleaner.engine._explain import explain_page

        return explain_page(self, html, url, name)

    # -- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        from sst_cleaner.engine._model_file import saved_params
        from sst_cleaner.engine._model_io import wrap_model

        data = wrap_model(self.method, saved_params(self.params), self._impl.to_dict())
        data["learnt_pages"] = self.learnt.to_list()
        return data

    @classmethod
    def from_dict(cls, data: dict, limits: Optional[Limits] = None, params: Optional[dict] = None) -> "SiteCleaner":
        """Rebuild a cleaner from :meth:`to_dict` data. The data is untrusted: any
        failure of the method's ``from_dict``, or of a first clean of a tiny page with the
        loaded state, becomes ``ModelFormatError``.

        ``params`` (the keywords a ``SiteCleaner`` of the caller would get, limits
        included) replace the parameters stored in the model: a crawl's models run with
        its configuration, whichever run saved them."""
        from sst_cleaner.engine._model_io import ModelFormatError, unwrap_model

        method, file_params, state = unwrap_model(data)
        impl_cls = find_method(method)
        if impl_cls is None:
            raise ModelFormatError(f"model was made by unknown method {method!r}")
        if params is not None:
            limits, file_params = Limits.split_params(params, limits)
        obj = cls.__new__(cls)
        obj.method = method
        obj.params = file_params
        obj._reset_build_state(limits if limits is not None else Limits())
        try:
            obj.learnt = LearntPages.from_list(data.get("learnt_pages"))
        except ValueError as exc:
            raise ModelFormatError(f"invalid model file: {exc}") from exc
        try:
            obj._impl = impl_cls.from_dict(state, **file_params)
            obj._impl.clean(as_page(_LAYOUT_PROBE_PAGE if getattr(impl_cls, "needs_layout", False) else _PROBE_PAGE))
        except ModelFormatError:
            raise
        except Exception as exc:  # untrusted state: every failure is a format error
            raise ModelFormatError(f"invalid {method!r} model state: {type(exc).__name__}: {exc}"[:500]) from exc
        return obj

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the model as JSON (atomically: a crash never leaves half a file)."""
        from sst_cleaner.engine._model_io import write_json_atomic

        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(
        cls, path: Union[str, os.PathLike], limits: Optional[Limits] = None, params: Optional[dict] = None
    ) -> "SiteCleaner":
        """Read a model written by :meth:`save`; raises ``ModelFormatError`` on anything else
        (see :mod:`~sst_cleaner.engine._model_file` for what a model file may hold). ``params``:
        as in :meth:`from_dict`."""
        from sst_cleaner.engine._model_io import read_json_model

        return cls.from_dict(read_json_model(path), limits=limits, params=params)

    def __repr__(self) -> str:
        return f"SiteCleaner(method={self.method!r}, pages={self.n_pages})"
