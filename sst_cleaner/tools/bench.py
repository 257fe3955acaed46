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
  tokens, macro-averaged over pages, both-empty = 1.

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
import codecs
import functools
import json
import os
import random
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from sst_cleaner.engine._text import words as tokens

MODES = ("transductive", "loo", "page", "sample")
CURVE_POINTS: tuple = (0, 1, 2, 4, 8, "all")
REFERENCE = "trafilatura"
FIT_500 = 500
FIT_500_RUNS = 3

#: the clock timings are read from: CPU time of this process by default, because the
#: benchmark is single-threaded and CPU time does not count the time the process waits
#: for a core on a shared machine (wall time does); ``--wall-clock`` switches.
_clock: Callable[[], float] = time.process_time

# --------------------------------------------------------------------------------------
# Input rule: the benchmark's prepare_html, re-implemented
# --------------------------------------------------------------------------------------

_CHARSET_ALIASES = {
    "windows-874": "cp874",
    "x-sjis": "shift_jis",
    "iso-1252": "cp1252",
    "unicode": "utf-8",
    "utf8": "utf-8",
}
_ASCII_WS = frozenset(b" \t\n\r\f\v")  # what \s matches in a bytes regex
_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:.-")
_QUOTES = frozenset(b"\"'")


def _charset_value(data: bytes, i: int, end: int) -> Optional[bytes]:
    """``\\s*=\\s*["']?\\s*([A-Za-z0-9_:.-]+)`` matched at ``data[i:end]`` (None if not)."""
    while i < end and data[i] in _ASCII_WS:
        i += 1
    if i >= end or data[i] != 0x3D:  # "="
        return None
    i += 1
    while i < end and data[i] in _ASCII_WS:
        i += 1
    if i < end and data[i] in _QUOTES:
        i += 1
    while i < end and data[i] in _ASCII_WS:
        i += 1
    j = i
    while j < end and data[j] in _NAME_CHARS:
        j += 1
    return data[i:j] if j > i else None


def _find_meta_charset(data: bytes) -> Optional[bytes]:
    """First match of ``<meta[^>]+charset\\s*=\\s*["']?\\s*([A-Za-z0-9_:.-]+)`` (case-
    insensitive), as the shared ``pages.meta_charset`` searches it, but in linear time.

    Why a scan and not that regex: ``[^>]+`` before ``charset`` makes the regex retry
    every ``<meta`` against the rest of an unclosed tag (quadratic on hostile input).
    Equivalence: the regex's greedy ``[^>]+`` stays inside one tag and tries the *last*
    ``charset`` of the tag first (at least one byte after ``<meta``); a ``<meta``
    that starts inside a tag with no match sees a subset of it, so it cannot match
    either and the scan resumes after the tag's ``>``.
    """
    low = data.lower()  # ASCII-only folding, as re.I does on bytes
    n = len(data)
    pos = low.find(b"<meta")
    while pos != -1:
        start = pos + 5
        end = low.find(b">", start)
        if end == -1:
            end = n
        k = low.rfind(b"charset", start + 1, end)
        while k != -1:
            value = _charset_value(data, k + 7, end)
            if value:
                return value
            k = low.rfind(b"charset", start + 1, k + 6)  # an earlier occurrence
        pos = low.find(b"<meta", end)
    return None


def meta_charset(data: bytes) -> Optional[str]:
    """The charset a ``<meta>`` declares (first 8 KiB searched first), as a codec name."""
    raw = _find_meta_charset(data[:8192]) or _find_meta_charset(data)
    if not raw:
        return None
    name = raw.decode("ascii", "replace").lower()
    name = _CHARSET_ALIASES.get(name, name)
    try:
        name = codecs.lookup(name).name
    except LookupError:
        return None
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"  # a UTF-16 declaration inside an 8-bit file is always wrong
    return name


def decode_page(data: bytes) -> tuple[str, str]:
    """Page bytes -> (text, encoding used), by the benchmark's rule.

    1. a BOM decides; 2. bytes that are valid UTF-8 are UTF-8 whatever a ``<meta>``
    says (corpora re-saved as UTF-8 often kept ``charset=ISO-8859-1``); 3. else the
    ``<meta>`` charset; 4. else UTF-8 with replacement when valid multi-byte characters
    outnumber invalid bytes, otherwise windows-1252 (the HTML default).
    """
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace"), "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace"), "utf-16"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    cs = meta_charset(data)
    if cs:
        try:
            return data.decode(cs, "replace"), cs
        except LookupError:
            pass
    text = data.decode("utf-8", "surrogateescape")
    invalid = sum(1 for ch in text if "\udc80" <= ch <= "\udcff")
    valid_non_ascii = sum(1 for ch in text if ord(ch) > 127) - invalid
    if valid_non_ascii > invalid:
        return data.decode("utf-8", "replace"), "utf-8-replace"
    return data.decode("cp1252", "replace"), "cp1252-default"


# anchored, no nested quantifiers: linear
_CLEANEVAL_OPEN = re.compile(r"\A\s*<text\s+id=[^>]*>[ \t]*\r?\n?")
_CLEANEVAL_CLOSE = re.compile(r"</text>\s*\Z")


def strip_cleaneval_wrapper(text: str) -> str:
    """Remove CleanEval's ``<text id="URL" ...>`` ... ``</text>`` packing: it is not part
    of the web page (and makes some extractors return nothing)."""
    m = _CLEANEVAL_OPEN.match(text)
    if not m:
        return text
    return _CLEANEVAL_CLOSE.sub("", text[m.end() :])


def prepare_html(data: bytes) -> tuple[str, str]:
    """What every extractor gets: :func:`decode_page` minus a CleanEval wrapper."""
    text, encoding = decode_page(data)
    return strip_cleaneval_wrapper(text), encoding


# --------------------------------------------------------------------------------------
# Metric: the benchmark's bag-of-tokens P/R/F1
# --------------------------------------------------------------------------------------


def prf_tokens(pred: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(P, R, F1) of multisets of tokens; both empty = perfect, one empty = 0."""
    if not pred and not gold:
        return 1.0, 1.0, 1.0
    if not pred or not gold:
        return 0.0, 0.0, 0.0
    overlap = sum((Counter(pred) & Counter(gold)).values())
    p = overlap / len(pred)
    r = overlap / len(gold)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def prf(pred: Optional[str], gold: Optional[str]) -> tuple[float, float, float]:
    """(P, R, F1) of one page: NFKC, lower-cased ``\\w+`` tokens, multiset overlap."""
    return prf_tokens(tokens(pred) if pred else [], tokens(gold) if gold else [])


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


@dataclass
class Score:
    """Macro averages over pages, plus the site macro (mean of per-site means)."""

    pages: int
    precision: float
    recall: float
    f1: float
    site_f1: float
    sites: int


def score_pages(predictions: dict[str, str], pages: Sequence["Page"]) -> Score:
    """Score ``predictions`` on ``pages`` (a page without prediction scores as empty)."""
    per_page = []
    by_site: dict[str, list[float]] = defaultdict(list)
    for page in pages:
        s = prf(predictions.get(page.id) or "", page.gold)
        per_page.append(s)
        by_site[page.site_key].append(s[2])
    return Score(
        len(per_page),
        _mean(s[0] for s in per_page),
        _mean(s[1] for s in per_page),
        _mean(s[2] for s in per_page),
        _mean(_mean(v) for v in by_site.values()),
        len(by_site),
    )


# --------------------------------------------------------------------------------------
# Corpora
# --------------------------------------------------------------------------------------


@dataclass
class Page:
    id: str
    site: Optional[str]
    url: Optional[str]
    html: str
    gold: str

    @property
    def site_key(self) -> str:
        # a page of unknown site is a site of its own (as score.py and site_eval.py do)
        return self.site or f"_unknown/{self.id}"


@dataclass
class Corpus:
    name: str
    manifest: str
    sites: dict[str, list[Page]]
    capped: bool = False  # True when --max-pages-per-site left pages out

    @property
    def pages(self) -> list[Page]:
        return [p for ps in self.sites.values() for p in ps]


def find_manifests(path: str) -> list[str]:
    """A manifest file, a corpus folder holding one, or a folder of corpus folders."""
    if os.path.isfile(path):
        return [path]
    direct = os.path.join(path, "manifest.jsonl")
    if os.path.isfile(direct):
        return [direct]
    if not os.path.isdir(path):
        raise SystemExit(f"no such manifest or folder: {path}")
    found = sorted(
        os.path.join(path, d, "manifest.jsonl")
        for d in os.listdir(path)
        if os.path.isfile(os.path.join(path, d, "manifest.jsonl"))
    )
    if not found:
        raise SystemExit(f"no manifest.jsonl in {path}")
    return found


def load_corpus(manifest: str, max_pages_per_site: Optional[int] = None) -> Corpus:
    """Read a manifest and its pages (decoded by :func:`prepare_html`) grouped by site.

    With ``max_pages_per_site``, a larger site keeps a ``random.Random(0)`` sample of
    that many pages, in manifest order (the same pages for every method and mode).
    """
    root = os.path.dirname(os.path.abspath(manifest))
    rows = []
    with open(manifest, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    by_site: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_site[row.get("site") or row["id"]].append(row)
    sites: dict[str, list[Page]] = {}
    capped = False
    for key, site_rows in by_site.items():
        if max_pages_per_site is not None and len(site_rows) > max_pages_per_site:
            keep = sorted(random.Random(0).sample(range(len(site_rows)), max_pages_per_site))
            site_rows = [site_rows[i] for i in keep]
            capped = True
        pages = []
        for row in site_rows:
            with open(os.path.join(root, row["html"]), "rb") as fh:
                html, _enc = prepare_html(fh.read())
            with open(os.path.join(root, row["gold"]), encoding="utf-8") as fh:
                gold = fh.read()
            pages.append(Page(row["id"], row.get("site"), row.get("url"), html, gold))
        sites[key] = pages
    name = os.path.basename(root)
    return Corpus(name, manifest, sites, capped)


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
    run.score = score_pages(run.predictions, run.scored)
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
        run.score = score_pages(run.predictions, run.scored)
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
        from sst_cleaner.engine._cleaner import SiteCleaner

        mixed = len(biggest) < FIT_500
        chosen = (pages if mixed else biggest)[:FIT_500]
        times, floors, par_wall, par_cpu = [], [], [], []
        jobs = fit_jobs(method)
        for _ in range(FIT_500_RUNS):
            probe = Run(corpus.name, method, "fit500")
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
        if mixed:
            info.update(mixed=True, sites=len({p.site_key for p in chosen}))
        else:
            info["site"] = biggest[0].site_key
        return info
    by_mode = {r.mode: r for r in runs if r.method == method}
    for mode in ("transductive", "sample", "loo"):
        r = by_mode.get(mode)
        if r is not None and r.fit_ms_per_page is not None:
            return {
                "ms": r.fit_ms_per_page * FIT_500,
                "estimate": True,
                "from_mode": mode,
                "largest_site_pages": len(biggest),
            }
    return {"ms": None, "estimate": True}


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------

_HEADER = ("corpus", "method", "mode", "pages", "err", "P", "R", "F1", "siteF1", "fit ms/page", "clean ms", "parse ms")


def _row_cells(run: Run, floor: dict[str, float]) -> list[str]:
    s = run.score
    parse = [floor[p.id] for p in run.scored if p.id in floor]

    def ms(v):
        if v is None:
            return "-"
        return f"{v:.0f}" if v >= 100 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"

    if not s or not s.pages:
        nums = ["-"] * 4
    else:
        nums = [f"{s.precision:.4f}", f"{s.recall:.4f}", f"{s.f1:.4f}", f"{s.site_f1:.4f}"]
    return [
        run.corpus,
        run.method,
        run.mode,
        str(s.pages if s else 0),
        str(run.errors),
        *nums,
        ms(run.fit_ms_per_page),
        ms(run.clean_ms_median),
        ms(statistics.median(parse) if parse else None),
    ]


def _fmt_fit500(name: str, method: str, info: dict) -> str:
    if info.get("ms") is None:
        return f"{name} {method}: fit {FIT_500} pages: n/a"
    if info["estimate"]:
        return (
            f"{name} {method}: fit {FIT_500} pages ~ {info['ms'] / 1000:.2f} s  ESTIMATE "
            f"(fit ms/page of {info['from_mode']} x {FIT_500}; largest site has "
            f"{info['largest_site_pages']} pages)"
        )
    runs = ", ".join(f"{ms / 1000:.2f}" for ms in info.get("runs_ms", []))
    where = f"{info['sites']} sites' first pages fitted as one model" if info.get("mixed") else f"site {info['site']}"
    floor = ""
    if info.get("x_floor"):
        floor = f"; {info['x_floor']:.1f}x lxml parsing the same pages ({info['floor_ms'] / 1000:.2f} s in this run)"
    par = info.get("parallel")
    if par:
        pruns = ", ".join(f"{ms / 1000:.2f}" for ms in par["runs_wall_ms"])
        floor += (
            f"; on {par['processes']} processes (n_jobs): {par['wall_ms'] / 1000:.2f} s wall-clock "
            f"(median of {pruns} s; {par['cpu_ms'] / 1000:.2f} s CPU in all)"
        )
    return (
        f"{name} {method}: fit {FIT_500} pages = {info['ms'] / 1000:.2f} s  measured on {where} "
        f"(median of {runs} s){floor}"
    )


def render_text(results: list[dict]) -> str:
    rows = [list(_HEADER)]
    for res in results:
        for run in res["runs"]:
            rows.append(_row_cells(run, res["floor"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    left = {0, 1, 2}
    lines = ["  ".join(c.ljust(widths[i]) if i in left else c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = ["\n".join(lines), ""]
    for res in results:
        for method, info in res["fit500"].items():
            out.append(_fmt_fit500(res["corpus"].name, method, info))
    for res in results:
        if res.get("curve") is not None:
            out.append("")
            out.append(_curve_text(res))
    notes = _notes(results)
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out).rstrip() + "\n"


def _curve_text(res: dict) -> str:
    curve = res["curve"]
    name = res["corpus"].name
    if not curve or not curve[0]["run"].scored:
        return f"learning curve {name}: no site with more than 8 pages"
    head = curve[0]["run"]
    lines = [
        f"learning curve {name} {head.method}: F1 vs pages fitted per site "
        f"({head.score.sites} sites with > 8 pages, {head.score.pages} held-out pages)"
    ]
    for pt in curve:
        s = pt["run"].score
        lines.append(
            f"  k={str(pt['k']):<4} P={s.precision:.4f} R={s.recall:.4f} F1={s.f1:.4f} errors={pt['run'].errors}"
        )
    return "\n".join(lines)


def _notes(results: list[dict]) -> list[str]:
    notes = []
    if any(res["corpus"].capped for res in results):
        notes.append(
            "capped: sites larger than --max-pages-per-site were sampled (seed 0); "
            "rescore --out files with score.py --skip-missing"
        )
    clock = "wall-clock" if _clock is time.perf_counter else "CPU"
    notes.append(
        f"times are {clock} ms; fit ms/page = total fit time / pages fitted; clean ms, "
        "parse ms = medians per page (parse ms = lxml alone, the floor); "
        "F1 = macro over pages"
    )
    return notes


def render_markdown(results: list[dict]) -> str:
    out = ["| " + " | ".join(_HEADER) + " |", "|" + "|".join(["---"] * 3 + ["---:"] * (len(_HEADER) - 3)) + "|"]
    for res in results:
        for run in res["runs"]:
            out.append("| " + " | ".join(_row_cells(run, res["floor"])) + " |")
    out.append("")
    for res in results:
        for method, info in res["fit500"].items():
            out.append(f"* {_fmt_fit500(res['corpus'].name, method, info)}")
    for res in results:
        curve = res.get("curve")
        if curve is None:
            continue
        out.append("")
        if not curve[0]["run"].scored:
            out.append(f"Learning curve, {res['corpus'].name}: no site with more than 8 pages.")
            continue
        head = curve[0]["run"]
        out.append(
            f"Learning curve, {res['corpus'].name}, `{head.method}` "
            f"({head.score.sites} sites with > 8 pages, {head.score.pages} held-out pages):"
        )
        out.append("")
        out.append("| pages fitted | P | R | F1 |")
        out.append("|---|---:|---:|---:|")
        for pt in curve:
            s = pt["run"].score
            out.append(f"| {pt['k']} | {s.precision:.4f} | {s.recall:.4f} | {s.f1:.4f} |")
    notes = _notes(results)
    out.append("")
    out.extend(f"_{n}_" for n in notes)
    return "\n".join(out) + "\n"


def _run_json(run: Run, floor: dict[str, float]) -> dict:
    s = run.score
    parse = [floor[p.id] for p in run.scored if p.id in floor]
    return {
        "method": run.method,
        "mode": run.mode,
        "pages": s.pages if s else 0,
        "errors": run.errors,
        "precision": s.precision if s else None,
        "recall": s.recall if s else None,
        "f1": s.f1 if s else None,
        "site_f1": s.site_f1 if s else None,
        "sites": s.sites if s else 0,
        "fit_ms_per_page": run.fit_ms_per_page,
        "fit_calls": run.fit_calls,
        "pages_fitted": run.fit_pages,
        "clean_ms_median": run.clean_ms_median,
        "parse_ms_median": statistics.median(parse) if parse else None,
    }


def render_json(results: list[dict]) -> str:
    out = {}
    for res in results:
        c = res["corpus"]
        entry = {
            "manifest": c.manifest,
            "pages": len(c.pages),
            "sites": len(c.sites),
            "capped": c.capped,
            "runs": [_run_json(r, res["floor"]) for r in res["runs"]],
            "fit500": res["fit500"],
        }
        if res.get("curve") is not None:
            entry["curve"] = [{"k": pt["k"], **_run_json(pt["run"], res["floor"])} for pt in res["curve"]]
        out[c.name] = entry
    return json.dumps(out, indent=1) + "\n"


def write_predictions(out_dir: str, run: Run) -> str:
    """``OUT/CORPUS__METHOD__MODE.jsonl``: one ``{"id", "text"}`` per scored page."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{run.corpus}__{run.method}__{run.mode}.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for page in run.scored:
            f.write(json.dumps({"id": page.id, "text": run.predictions[page.id]}, ensure_ascii=False) + "\n")
    return path


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
    use_reference = not args.no_reference and reference_available()
    global _clock
    _clock = time.perf_counter if args.wall_clock else time.process_time

    manifests = [m for d in args.data for m in find_manifests(d)]
    results = []
    for manifest in manifests:
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
        results.append(res)
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


if __name__ == "__main__":
    sys.exit(main())
