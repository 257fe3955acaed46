"""Engine benchmark: every method, every mode, on corpora in the shared manifest format.

    python -m sst_cleaner.tools.bench CORPUS_OR_MANIFEST [...] [--methods a,b]
        [--modes transductive,loo,page,sample] [--fit-pages 20]
        [--max-pages-per-site N] [--curve METHOD] [--out DIR]
        [--markdown | --json] [--no-reference]

A corpus is a ``manifest.jsonl`` (one ``{"id", "site", "url", "html", "gold"}`` per
line, paths relative to the manifest's folder), a folder holding one, or a folder of
such folders.  For each corpus and method it reports P/R/F1 in four modes:

``transductive``  fit on every page of the site, clean each of them (the setting of the
                  Site Style Tree papers: the crawl *is* the site sample);
``loo``           leave one out: fit on the site's other pages, clean the held-out one
                  (a page the model has never seen; cost is quadratic in site size);
``page``          no fit: every page cleaned cold (the page-level fallback);
``sample``        the crawl setting: fit on ``--fit-pages`` random pages of the site
                  (``random.Random(0)`` shuffle, as the shared ``site_eval.py``), clean
                  the site's other pages; sites with no page left are skipped and only
                  cleaned pages are scored.

Why it lives in the package: the numbers must be reproducible from the package alone
(no import of the shared benchmark scripts), yet identical to them.  So the two rules
that decide a score are re-implemented here and kept byte-for-byte equivalent:

* the input rule (:func:`prepare_html`): BOM, else valid UTF-8, else ``<meta>`` charset,
  else a UTF-8/windows-1252 guess; then the CleanEval ``<text id=...>`` wrapper removed;
* the metric (:func:`prf`): multiset overlap of NFKC-normalised, lower-cased ``\\w+``
  tokens, macro-averaged over pages, both-empty = 1; with ``--cjk``, every Han, kana or
  Hangul character a token instead (:func:`cjk_tokens`: the shared ``\\w+`` makes a
  Chinese or Japanese clause one token), the same figure on text without those scripts.

Predictions written with ``--out DIR`` (``CORPUS__METHOD__MODE.jsonl``, one
``{"id", "text"}`` per line) therefore score identically with the shared ``score.py``
(add ``--skip-missing`` there for ``sample`` mode and capped runs, which score a subset).

Timing columns: *fit ms/page* = total fit time / pages fitted (parsing included, as in
real use); *clean ms* = median per cleaned page (parsing included); *parse ms* = median
time lxml alone takes to parse the same pages: the floor no cleaner can go below.  If
trafilatura is installed (a benchmark extra, never a runtime dependency) it is run in
the same process as a reference row (``page`` mode, its own clean ms).
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from sst_cleaner.tools.bench._report import _HEADER as _HEADER
from sst_cleaner.tools.bench._report import _fmt_fit500 as _fmt_fit500
from sst_cleaner.tools.bench._report import render_json, render_markdown, render_text, write_predictions
from sst_cleaner.tools.bench._scoring import Corpus, Page, Score, find_manifests, load_corpus, score_pages
from sst_cleaner.tools.bench._scoring import cjk_tokens as cjk_tokens
from sst_cleaner.tools.bench._scoring import decode_page as decode_page
from sst_cleaner.tools.bench._scoring import meta_charset as meta_charset
from sst_cleaner.tools.bench._scoring import prepare_html as prepare_html
from sst_cleaner.tools.bench._scoring import prf as prf
from sst_cleaner.tools.bench._scoring import prf_tokens as prf_tokens
from sst_cleaner.tools.bench._scoring import strip_cleaneval_wrapper as strip_cleaneval_wrapper

MODES = ("transductive", "loo", "page", "sample")
CURVE_POINTS: tuple = (0, 1, 2, 4, 8, "all")
REFERENCE = "trafilatura"
FIT_500 = 500
FIT_500_RUNS = 3

#: the clock timings are read from: CPU time of this process by default, because the
#: benchmark is single-threaded and CPU time does not count the time the process waits
#: for a core on a shared machine (wall time does); ``--wall-clock`` switches.
_clock: Callable[[], float] = time.process_time

#: the metric's tokens: the shared scorer's ``\\w+`` words (False), or ``--cjk``: every
#: Han, kana or Hangul character a token (:func:`cjk_tokens`), for pages in scripts
#: written without spaces, where one ``\\w+`` token is a whole clause
_cjk = False

# --------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------


@dataclass
class Run:
    """One (corpus, method, mode): predictions, errors and timings."""

    corpus: str
    method: str
    mode: str
    predictions: dict[str, str] = field(default_factory=dict)
    scored: list[Page] = field(default_factory=list)
    errors: int = 0
    fit_ms_total: float = 0.0
    fit_pages: int = 0
    fit_calls: int = 0
    clean_ms: list[float] = field(default_factory=list)
    score: Optional[Score] = None

    @property
    def fit_ms_per_page(self) -> Optional[float]:
        return self.fit_ms_total / self.fit_pages if self.fit_pages else None

    @property
    def clean_ms_median(self) -> Optional[float]:
        return statistics.median(self.clean_ms) if self.clean_ms else None


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _pairs(pages: Sequence[Page]) -> list[tuple[Optional[str], str]]:
    return [(p.url, p.html) for p in pages]


def sample_split(n: int, k: int) -> tuple[list[int], list[int]]:
    """Indices fitted and cleaned in ``sample`` mode: the first ``k`` of a
    ``random.Random(0)`` shuffle of ``range(n)`` (exactly ``site_eval.py``'s choice)."""
    order = list(range(n))
    random.Random(0).shuffle(order)
    chosen = set(order[:k])
    return ([i for i in range(n) if i in chosen], [i for i in range(n) if i not in chosen])


def _fit(run: Run, cleaner, pages: Sequence[Page]) -> bool:
    """Fit ``cleaner`` on ``pages``, timing it; False (and errors counted by the caller)
    when the method raises."""
    t0 = _clock()
    try:
        cleaner.fit(_pairs(pages))
    except Exception as exc:  # a failing method is a result, not a crash of the bench
        _log(f"error fitting {run.method} on {len(pages)} pages of {pages[0].site_key if pages else '-'}: {exc!r}")
        return False
    run.fit_ms_total += (_clock() - t0) * 1000
    run.fit_pages += len(pages)
    run.fit_calls += 1
    return True


def _clean(run: Run, cleaner, page: Page) -> None:
    """Clean one page into ``run``; an exception is counted and scored as empty text."""
    t0 = _clock()
    try:
        text = cleaner.clean(page.html, url=page.url).text
    except Exception as exc:
        run.errors += 1
        _log(f"error on {page.id} ({run.method}, {run.mode}): {exc!r}")
        text = ""
    else:
        run.clean_ms.append((_clock() - t0) * 1000)
    run.predictions[page.id] = text or ""
    run.scored.append(page)


def _new(run: Run, factory: Callable[[], object]):
    """A fresh cleaner, or None when the method cannot even be built (its pages are then
    counted as errors: one broken method must not stop the whole benchmark)."""
    try:
        return factory()
    except Exception as exc:
        _log(f"error creating {run.method}: {exc!r}")
        return None


def _fail_all(run: Run, pages: Iterable[Page]) -> None:
    for page in pages:
        run.errors += 1
        run.predictions[page.id] = ""
        run.scored.append(page)


def run_method(
    corpus: Corpus, method: str, mode: str, fit_pages: int = 20, factory: Optional[Callable[[], object]] = None
) -> Run:
    """Run one method in one mode over every site of ``corpus`` and score it."""
    if factory is None:
        from sst_cleaner.engine._cleaner import SiteCleaner

        def factory():
            return SiteCleaner(method=method)

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    run = Run(corpus.name, method, mode)
    for pages in corpus.sites.values():
        if mode == "loo":
            for i, page in enumerate(pages):
                cleaner = _new(run, factory)
                # as site_eval.py: a one-page site is fitted on nothing
                if cleaner is None or not _fit(run, cleaner, pages[:i] + pages[i + 1 :]):
                    _fail_all(run, [page])
                    continue
                _clean(run, cleaner, page)
            continue
        if mode == "sample":
            fit_idx, clean_idx = sample_split(len(pages), fit_pages)
            fit_set, targets = [pages[i] for i in fit_idx], [pages[i] for i in clean_idx]
            if not targets:
                continue
        elif mode == "transductive":
            fit_set, targets = list(pages), list(pages)
        else:  # page
            fit_set, targets = [], list(pages)
        cleaner = _new(run, factory)
        if cleaner is None or (mode != "page" and not _fit(run, cleaner, fit_set)):
            _fail_all(run, targets)
            continue
        for page in targets:
            _clean(run, cleaner, page)
    run.score = score_pages(run.predictions, run.scored, _cjk)
    return run


class _Trafilatura:
    """trafilatura behind the cleaner interface (page mode only: it learns nothing)."""

    def __init__(self):
        import trafilatura

        self._extract = trafilatura.extract

    def clean(self, html: str, url: Optional[str] = None):
        text = self._extract(html, output_format="txt", include_comments=False)
        return _Text(text or "")


@dataclass
class _Text:
    text: str


def reference_available() -> bool:
    try:
        import trafilatura  # noqa: F401
    except Exception:  # missing, or installed without a dependency it needs
        return False
    return True


def run_reference(corpus: Corpus) -> Run:
    """trafilatura, in this process, on every page: the reference row."""
    return run_method(corpus, REFERENCE, "page", factory=_Trafilatura)


def parse_floor_ms(corpus: Corpus) -> dict[str, float]:
    """ms lxml alone takes to parse each page (UTF-8 bytes, encoding given): the floor."""
    return {page.id: _parse_ms(page) for page in corpus.pages}


def _parse_ms(page: Page) -> float:
    from lxml import etree
    from lxml import html as lxml_html

    data = page.html.encode("utf-8", "replace")
    parser = _floor_parser()
    t0 = _clock()
    try:
        lxml_html.document_fromstring(data, parser=parser)
    except (etree.ParserError, ValueError):
        pass
    return (_clock() - t0) * 1000


@functools.lru_cache(maxsize=1)
def _floor_parser():
    """One parser for every floor measurement (the benchmark is single-threaded)."""
    from lxml import html as lxml_html

    return lxml_html.HTMLParser(encoding="utf-8")


def learning_curve(corpus: Corpus, method: str, points: Sequence = CURVE_POINTS) -> list[dict]:
    """F1 against the number of pages fitted per site.

    Every point is scored on the *same* pages, so the curve shows the effect of fitting
    more pages and nothing else: in each site with more than ``kmax`` (8) pages, the
    pages after the first ``kmax`` of the ``random.Random(0)`` shuffle.  Point ``k``
    fits the first ``k`` pages of that shuffle (nested sets; ``k = 8`` is ``sample``
    mode with ``--fit-pages 8``), ``0`` fits nothing (page mode), ``"all"`` fits every
    page of the site, the held-out ones included (transductive).
    """
    from sst_cleaner.engine._cleaner import SiteCleaner

    kmax = max(k for k in points if k != "all")
    sites = {key: pages for key, pages in corpus.sites.items() if len(pages) > kmax}
    out = []
    for k in points:
        run = Run(corpus.name, method, f"curve-k{k}")
        for pages in sites.values():
            order = list(range(len(pages)))
            random.Random(0).shuffle(order)
            test = [pages[i] for i in order[kmax:]]
            fit = list(pages) if k == "all" else [pages[i] for i in sorted(order[:k])]
            cleaner = _new(run, lambda: SiteCleaner(method=method))
            if cleaner is None or (fit and not _fit(run, cleaner, fit)):
                _fail_all(run, test)
                continue
            for page in test:
                _clean(run, cleaner, page)
        run.score = score_pages(run.predictions, run.scored, _cjk)
        out.append({"k": k, "run": run})
    return out


def fit_jobs(method: str) -> int:
    """Processes ``fit(n_jobs=...)`` can use for ``method`` here: every CPU, when the
    method's model can be learnt in shards (1 otherwise)."""
    from sst_cleaner.engine._parallel_fit import usable_cpus
    from sst_cleaner.engine._registry import learns_in_shards

    return usable_cpus() if learns_in_shards(method) else 1


def fit_500(corpus: Corpus, method: str, runs: Sequence[Run]) -> dict:
    """Time to fit 500 pages, measured whenever the corpus has 500 pages:

    * on its largest site when that has >= 500 pages;
    * else on the corpus's first 500 pages (its sites in manifest order) fitted as one
      model (``"mixed"``): several sites' templates in one model repeat fewer blocks
      than one site's would, so this is no easier than fitting one big site;
    * else fit ms/page (transductive, else sample, else loo) x 500, flagged as an
      estimate.

    A measurement is the median of ``FIT_500_RUNS`` fits (the figure a goal is judged
    on should not hang on one run on a shared machine). Each fit is followed by lxml
    parsing the same pages (the floor, as in ``parse ms``): their ratio, fit / floor,
    says how many times a bare parse the fit costs, a figure that moves far less with
    the machine's speed than seconds do (this project's shared machine ran the same
    code 2x slower or faster from hour to hour).

    When the machine has several CPUs and the method's model can be learnt in shards,
    each run also fits the same pages with ``n_jobs`` = every CPU (``"parallel"``),
    timed with the wall clock: the work is spread over processes whose CPU time this
    process's clock does not see (their total CPU time is reported beside it).
    """
    biggest = max(corpus.sites.values(), key=len) if corpus.sites else []
    pages = corpus.pages
    if len(biggest) >= FIT_500 or len(pages) >= FIT_500:
        mixed = len(biggest) < FIT_500
        chosen = (pages if mixed else biggest)[:FIT_500]
        info = _measure_fit_500(corpus.name, method, chosen)
        if info.get("error"):
            return info
        if mixed:
            info.update(mixed=True, sites=len({p.site_key for p in chosen}))
        else:
            info["site"] = biggest[0].site_key
        return info
    return _estimate_fit_500(method, runs, len(biggest))


def _measure_fit_500(corpus_name: str, method: str, chosen: Sequence[Page]) -> dict:
    """The median of ``FIT_500_RUNS`` fits of ``chosen``, each beside lxml's parse floor
    and, for a method learnt in shards, a fit on every CPU."""
    from sst_cleaner.engine._cleaner import SiteCleaner

    times, floors, par_wall, par_cpu = [], [], [], []
    jobs = fit_jobs(method)
    for _ in range(FIT_500_RUNS):
        probe = Run(corpus_name, method, "fit500")
        cleaner = _new(probe, lambda: SiteCleaner(method=method))
        if cleaner is None or not _fit(probe, cleaner, chosen):
            return {"ms": None, "estimate": False, "error": True}
        times.append(probe.fit_ms_total)
        floors.append(sum(_parse_ms(p) for p in chosen))
        if jobs > 1:
            cleaner = SiteCleaner(method=method)
            t0 = time.perf_counter()
            cleaner.fit(_pairs(chosen), n_jobs=jobs)
            par_wall.append((time.perf_counter() - t0) * 1000)
            par_cpu.append(cleaner.build_seconds * 1000)
    info = {
        "ms": statistics.median(times),
        "runs_ms": times,
        "estimate": False,
        "floor_ms": statistics.median(floors),
        "floors_ms": floors,
        "x_floor": statistics.median(t / f for t, f in zip(times, floors) if f > 0) if any(floors) else None,
    }
    if par_wall:
        info["parallel"] = {
            "processes": jobs,
            "wall_ms": statistics.median(par_wall),
            "runs_wall_ms": par_wall,
            "cpu_ms": statistics.median(par_cpu),
        }
    return info


def _estimate_fit_500(method: str, runs: Sequence[Run], largest_site_pages: int) -> dict:
    """fit ms/page of the first of transductive, sample, loo that fitted x ``FIT_500``."""
    by_mode = {r.mode: r for r in runs if r.method == method}
    for mode in ("transductive", "sample", "loo"):
        r = by_mode.get(mode)
        if r is not None and r.fit_ms_per_page is not None:
            return {
                "ms": r.fit_ms_per_page * FIT_500,
                "estimate": True,
                "from_mode": mode,
                "largest_site_pages": largest_site_pages,
            }
    return {"ms": None, "estimate": True}


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m sst_cleaner.tools.bench",
        description="Benchmark every sst_cleaner method on manifest corpora "
        "(P/R/F1, fit and clean time, lxml parse floor).",
    )
    ap.add_argument("data", nargs="+", help="manifest.jsonl, a corpus folder, or a folder of corpora")
    ap.add_argument(
        "--methods", type=_csv, default=None, help="comma-separated methods (default: all of available_methods())"
    )
    ap.add_argument(
        "--modes", type=_csv, default=list(MODES), help=f"comma-separated, from {','.join(MODES)} (default: all)"
    )
    ap.add_argument("--fit-pages", type=int, default=20, help="pages fitted per site in sample mode")
    ap.add_argument(
        "--max-pages-per-site",
        type=int,
        default=None,
        help="sample (seed 0) at most N pages of each site, for every mode (loo costs pages^2 per site)",
    )
    ap.add_argument(
        "--curve", metavar="METHOD", default=None, help="also print F1 vs pages fitted (0,1,2,4,8,all) for METHOD"
    )
    ap.add_argument("--out", metavar="DIR", default=None, help="write predictions, one CORPUS__METHOD__MODE.jsonl each")
    ap.add_argument("--no-reference", action="store_true", help="do not run trafilatura")
    ap.add_argument(
        "--cjk",
        action="store_true",
        help="score with every Han, kana or Hangul character a token (other text as \\w+ words)",
    )
    ap.add_argument("--wall-clock", action="store_true", help="time with the wall clock (default: process CPU time)")
    ap.add_argument(
        "--save-json", metavar="PATH", default=None, help="also write the --json output to PATH (whatever is printed)"
    )
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown table")
    fmt.add_argument("--json", action="store_true", help="print JSON")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    methods = _checked_methods(ap, args)
    use_reference = not args.no_reference and reference_available()
    global _clock, _cjk
    _clock = time.perf_counter if args.wall_clock else time.process_time
    _cjk = args.cjk

    manifests = [m for d in args.data for m in find_manifests(d)]
    results = [_bench_corpus(manifest, methods, args, use_reference) for manifest in manifests]
    if args.save_json:
        with open(args.save_json, "w", encoding="utf-8") as f:
            f.write(render_json(results))
    if args.json:
        sys.stdout.write(render_json(results))
    elif args.markdown:
        sys.stdout.write(render_markdown(results))
    else:
        sys.stdout.write(render_text(results))
    return 0


def _checked_methods(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The methods to run; an unknown method or mode, or a bad cap, is a usage error."""
    from sst_cleaner.engine._registry import available_methods

    known = available_methods()
    methods = args.methods if args.methods is not None else known
    unknown = [m for m in methods + ([args.curve] if args.curve else []) if m not in known]
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}; available: {', '.join(known) or 'none'}")
    bad_modes = [m for m in args.modes if m not in MODES]
    if bad_modes:
        ap.error(f"unknown mode(s) {', '.join(bad_modes)}; choose from {', '.join(MODES)}")
    if not methods and not args.curve:
        ap.error("no method to run (available_methods() is empty)")
    if args.max_pages_per_site is not None and args.max_pages_per_site < 1:
        ap.error("--max-pages-per-site must be >= 1")
    return methods


def _bench_corpus(manifest: str, methods: list[str], args: argparse.Namespace, use_reference: bool) -> dict[str, Any]:
    """Every run of one corpus (methods x modes, the reference, fit 500, the curve),
    with its predictions written when ``--out`` asks."""
    corpus = load_corpus(manifest, args.max_pages_per_site)
    _log(f"[{corpus.name}] {len(corpus.pages)} pages, {len(corpus.sites)} sites")
    floor = parse_floor_ms(corpus)
    runs: list[Run] = []
    for method in methods:
        for mode in args.modes:
            t0 = time.perf_counter()
            run = run_method(corpus, method, mode, args.fit_pages)
            assert run.score is not None  # run_method() always scores its run
            _log(
                f"[{corpus.name}] {method} {mode}: pages={run.score.pages} "
                f"F1={run.score.f1:.4f} errors={run.errors} ({time.perf_counter() - t0:.1f} s)"
            )
            runs.append(run)
    if use_reference:
        run = run_reference(corpus)
        assert run.score is not None  # a run_method() run: always scored
        _log(f"[{corpus.name}] {REFERENCE}: F1={run.score.f1:.4f} errors={run.errors}")
        runs.append(run)
    res: dict[str, Any] = {
        "corpus": corpus,
        "floor": floor,
        "runs": runs,
        "fit500": {m: fit_500(corpus, m, runs) for m in methods},
    }
    if args.curve:
        res["curve"] = learning_curve(corpus, args.curve)
    if args.out:
        for run in runs:
            write_predictions(args.out, run)
        for pt in res.get("curve") or []:
            if pt["run"].scored:
                write_predictions(args.out, pt["run"])
    return res
