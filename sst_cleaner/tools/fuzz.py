"""Fuzz the whole pipeline with hostile pages: ``python -m sst_cleaner.tools.fuzz``.

Every case is generated from ``(seed, index)`` alone, so any failure can be replayed with
``--seed S --case I``. A case goes through :func:`~sst_cleaner.engine._dom.parse_html`, then, for
each registered method, a fitted ``SiteCleaner`` (fitted once on synthetic pages of one
site) cleans it, an unfitted one cleans it (the page-level path), and every
``--fit-every``-th case a fresh cleaner is fitted on ``[normal, case, normal]`` and cleans
it. A *crash* is any exception, or a broken invariant (wrong result type, unknown status,
a cap not honoured, a local file's content leaking through an external entity). A *slow*
case is one operation over ``--max-seconds`` of CPU time, or a case whose operations for
one method (``parse_html`` plus that method's cleans and fit) sum to more than that. Both write a reproducer (the
input bytes and a note) to ``--out``.

Case kinds: random bytes; garbled real-looking HTML (truncated, bytes flipped, ranges cut
and repeated, unclosed comments/scripts); deep nesting (up to 100,000); huge attribute
lists and values; floods of tiny elements (up to millions); lying and mixed charsets;
NUL bytes and lone surrogates; RTL, CJK, emoji and combining-mark text; XML/XHTML with
entity declarations (billion laughs, external file and network entities); text made to
make tokenisers and sentence splitters backtrack; hidden-element floods; hostile
metadata (:mod:`~sst_cleaner.tools._fuzz_meta`: dates, URLs, JSON-LD, floods and huge
``<meta>``). Every clean's metadata is read and checked too (fields, types, caps).

Prints crashes, slow cases, the slowest case (CPU and wall seconds) and peak memory (peak
RSS of the process, from ``resource.getrusage``). Exit status 0 only with no crash and
no slow case. ``kill PID`` (SIGTERM) or Ctrl-C stops a run after its current case and
prints the report of the cases run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.engine._dom import BLOCK_TAGS, PreparedPage, parse_html
from sst_cleaner.engine._limits import DEFAULT_LIMITS
from sst_cleaner.engine._model_io import ModelFormatError
from sst_cleaner.engine._registry import available_methods
from sst_cleaner.engine._result import CleanResult
from sst_cleaner.engine._tree_caps import text_runs, tiny_blocks
from sst_cleaner.tools._fuzz_cases import _PASSWD_MARK, Data, case_kind, normal_page
from sst_cleaner.tools._fuzz_cases import GENERATORS as GENERATORS
from sst_cleaner.tools._fuzz_cases import make_case as make_case
from sst_cleaner.tools._fuzz_cli import GENERATOR as _CLI_KIND
from sst_cleaner.tools._fuzz_cli import run_cli_case
from sst_cleaner.tools._fuzz_meta import GENERATOR as _METADATA_KIND
from sst_cleaner.tools._fuzz_meta import with_metadata
from sst_cleaner.tools._fuzz_warc import clean_warc

# once, though this module may be imported twice (as __main__ by `python -m`, and by
# name): a second append would change which kind each case number draws
for _kind in (_METADATA_KIND, _CLI_KIND):
    if _kind not in GENERATORS:
        GENERATORS.append(_kind)

STATUSES = frozenset({"ok", "truncated", "over_budget", "site_empty", "no_layout", "empty_fallback"})


# -- invariants -------------------------------------------------------------------------
class InvariantError(AssertionError):
    pass


def check_page(page: PreparedPage) -> None:
    if not isinstance(page, PreparedPage) or page.root.tag != "body":
        raise InvariantError("parse_html did not return a page rooted at BODY")
    n = 0
    depth = 0
    max_depth = 0
    from lxml import etree

    for event, _el in etree.iterwalk(page.tree.getroot(), events=("start", "end")):
        if event == "start":
            n += 1
            depth += 1
            max_depth = max(max_depth, depth)
        else:
            depth -= 1
    if n > DEFAULT_LIMITS.max_elements + 1:  # + the BODY added when a page has none
        raise InvariantError(f"{n} elements kept, over the cap {DEFAULT_LIMITS.max_elements}")
    if max_depth > DEFAULT_LIMITS.max_depth:
        raise InvariantError(f"depth {max_depth} kept, over the cap {DEFAULT_LIMITS.max_depth}")
    root = page.tree.getroot()
    tiny = len(tiny_blocks(root, BLOCK_TAGS))
    if tiny > DEFAULT_LIMITS.max_tiny_blocks and tiny > text_runs(root):
        raise InvariantError(f"{tiny} near-empty blocks kept, over the cap {DEFAULT_LIMITS.max_tiny_blocks}")


def check_result(result: CleanResult, source: object = None) -> None:
    """``source``: the page as given, when known: a page that itself holds the text of
    the local file probed for (property-based generators reuse the module's literals)
    cannot show a leak."""
    if not isinstance(result, CleanResult) or not isinstance(result.text, str):
        raise InvariantError(f"clean returned {type(result).__name__}, not a CleanResult")
    if result.status not in STATUSES:
        raise InvariantError(f"unknown status {result.status!r}")
    if _PASSWD_MARK in result.text and not (isinstance(source, str) and _PASSWD_MARK in source):
        raise InvariantError("a local file's content leaked through an external entity")


# -- runner -----------------------------------------------------------------------------
@dataclass
class Failure:
    seed: int
    index: int
    kind: str
    what: str  # "crash" or "slow"
    step: str
    detail: str


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux


def _timed(fn: Callable, *args):
    c0, w0 = time.process_time(), time.perf_counter()
    value = fn(*args)
    return value, time.process_time() - c0, time.perf_counter() - w0


@dataclass
class _Tally:
    """What a run has found so far, for the report."""

    methods: list[str]
    failures: list[Failure] = field(default_factory=list)
    slowest: tuple[float, float, Optional[tuple[int, str, str]]] = (0.0, 0.0, None)  # cpu, wall, (index, kind, step)
    # per method: (cpu, (index, kind))
    slowest_case: dict[str, tuple[float, Optional[tuple[int, str]]]] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    rss_jump: tuple[float, Optional[tuple[int, str]]] = (0.0, None)
    last_index: int = -1
    slowest_run: tuple[float, Optional[tuple[int, str]]] = (0.0, None)  # a whole command-line run
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self.slowest_case = {m: (0.0, None) for m in self.methods}


@dataclass
class _Models:
    """The cleaners every case goes through, per method."""

    site: list[str]
    fitted: dict[str, SiteCleaner]
    growing: dict[str, SiteCleaner]  # partial_fit: learns every case (a fresh one every 200 cases)
    model_bytes: dict[str, bytes]
    unfitted: dict[str, SiteCleaner]
    model_dir: str


def run(
    cases: int,
    seed: int,
    methods: list[str],
    out: str,
    max_seconds: float = 2.0,
    scale: float = 1.0,
    fit_every: int = 5,
    only: Optional[int] = None,
    quiet: bool = False,
    kinds: Optional[set] = None,
    per_kind: Optional[int] = None,
) -> dict:
    """Run the cases ``0..cases-1`` (only those of ``kinds`` if given), or with
    ``per_kind``, as many case numbers as it takes for ``per_kind`` cases of each of
    ``kinds``; see the module docstring."""
    rng = random.Random(seed)
    site = [normal_page(rng, i) for i in range(6)]
    fitted = {m: SiteCleaner(method=m).fit(site) for m in methods}
    models = _Models(
        site=site,
        fitted=fitted,
        growing={m: SiteCleaner(method=m).fit(site) for m in methods},
        model_bytes={m: json.dumps(fitted[m].to_dict()).encode("utf-8") for m in methods},
        unfitted={m: SiteCleaner(method=m) for m in methods},
        model_dir=os.path.join(out, ".models"),
    )
    tally = _Tally(methods)
    start = time.perf_counter()
    indices: Iterable[int] = [only] if only is not None else itertools.count() if per_kind else range(cases)
    # SIGTERM (kill PID) stops the run after its current case, with its report: Ctrl-C
    # cannot reach a run started in the background by a script (SIGINT is ignored there)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: tally.stop.set()) if main_thread else None
    try:
        args = (indices, only, seed, out, max_seconds, scale, fit_every, kinds, per_kind, quiet)
        _run_cases(tally, models, methods, *args)
    except KeyboardInterrupt:  # Ctrl-C: stop, and report the cases run so far
        print(f"  stopped at case number {tally.last_index}", flush=True)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    if tally.stop.is_set():
        print(f"  stopped (SIGTERM) after case number {tally.last_index}", flush=True)
    return _report(tally, seed, methods, scale, start)


def _run_cases(
    tally: _Tally,
    models: _Models,
    methods: list[str],
    indices: Iterable[int],
    only: Optional[int],
    seed: int,
    out: str,
    max_seconds: float,
    scale: float,
    fit_every: int,
    kinds: Optional[set],
    per_kind: Optional[int],
    quiet: bool,
) -> None:
    start = time.perf_counter()
    for index in indices:
        if tally.stop.is_set():
            break
        tally.last_index = index
        kind = case_kind(seed, index)
        if kinds and kind not in kinds:
            continue  # the same case numbers as a full run, only these kinds
        if per_kind and only is None:
            wanted = kinds or {g[0] for g in GENERATORS}
            if all(tally.by_kind.get(k, 0) >= per_kind for k in wanted):
                break
            if tally.by_kind.get(kind, 0) >= per_kind:
                continue
        kind, data, encoding = make_case(seed, index, scale)
        tally.by_kind[kind] = tally.by_kind.get(kind, 0) + 1
        rss_before = _maxrss_mb()
        n_failed = len(tally.failures)
        steps = _case_steps(models, methods, seed, index, data, encoding, fit_every)
        if kind == "warc":  # an archive goes through the command line's WARC path instead
            steps = [(None, "cli site (warc)", cli_ops, (clean_warc, data))]
        elif kind == "cli":  # a hostile command line, folder and standard input, run in-process
            steps = [(None, "cli (in-process)", cli_ops, (run_cli_case, data))]
        case_cpu = _run_steps(tally, steps, out, seed, index, kind, data, encoding, max_seconds)
        for m in methods:
            if case_cpu[m] > tally.slowest_case[m][0]:
                tally.slowest_case[m] = (case_cpu[m], (index, kind))
        worst = max(methods, key=lambda name: case_cpu[name])
        if case_cpu[worst] > max_seconds and not any(f.index == index for f in tally.failures[n_failed:]):
            step, detail = f"parse_html+{worst}.*", f"{case_cpu[worst]:.2f} s CPU for the whole case"
            tally.failures.append(_record(out, seed, index, kind, "slow", step, detail, data, encoding))
        jump = _maxrss_mb() - rss_before
        if jump > tally.rss_jump[0]:
            tally.rss_jump = (jump, (index, kind))
        n_run = sum(tally.by_kind.values())
        if not quiet and n_run % 500 == 0:
            print(
                f"  {n_run} cases (to case number {index}), {len(tally.failures)} failures, "
                f"slowest operation {tally.slowest[0]:.2f} s CPU {tally.slowest[2]}, "
                f"peak RSS {_maxrss_mb():.0f} MB, {time.perf_counter() - start:.0f} s, by kind {tally.by_kind}",
                flush=True,
            )


def _case_steps(
    models: _Models, methods: list[str], seed: int, index: int, data: Data, encoding: Optional[str], fit_every: int
) -> list[tuple[Optional[str], str, Callable, tuple]]:
    """The operations one case goes through: (method or None, step name, fn, args)."""
    steps: list[tuple[Optional[str], str, Callable, tuple]] = [
        (None, "parse_html", lambda: check_page(parse_html(data, encoding=encoding)), ())
    ]
    for m in methods:
        steps.append((m, f"{m}.clean(fitted)", with_metadata(models.fitted[m].clean), (data,)))
        steps.append((m, f"{m}.clean(unfitted)", with_metadata(models.unfitted[m].clean), (data,)))
        if fit_every and index % fit_every == 0:
            steps.append((m, f"{m}.fit+clean", _fit_and_clean, (m, models.site[0], data, models.site[1])))
        if fit_every:  # the learning steps (fit_every=0: cleaning only)
            if index % 200 == 0:
                models.growing[m] = SiteCleaner(method=m).fit(models.site)
            steps.append((m, f"{m}.partial_fit", _partial_fit, (models.growing[m], data, encoding)))
            steps.append(
                (
                    m,
                    f"{m}.load(model file)",
                    _load_hostile_model,
                    (models.model_bytes[m], random.Random(f"{seed}:{index}:{m}"), models.model_dir),
                )
            )
    return steps


def _run_steps(
    tally: _Tally,
    steps: list[tuple[Optional[str], str, Callable, tuple]],
    out: str,
    seed: int,
    index: int,
    kind: str,
    data: Data,
    encoding: Optional[str],
    max_seconds: float,
) -> dict[str, float]:
    """Run a case's steps, recording crashes and slow steps; returns the case's CPU
    seconds per method (parse_html plus that method's operations)."""
    case_cpu = {m: 0.0 for m in tally.methods}
    for step_method, step, fn, args in steps:
        try:
            value, cpu, wall = _timed(fn, *args)
            if isinstance(value, CleanResult):
                check_result(value)
                tally.statuses[value.status] = tally.statuses.get(value.status, 0) + 1
        except Exception:  # every exception is a finding
            tally.failures.append(
                _record(out, seed, index, kind, "crash", step, traceback.format_exc(), data, encoding)
            )
            continue
        ops = [(step, cpu, wall)]
        if isinstance(value, CliOps):  # a command-line run: its engine calls and the rest
            ops = [(f"{step}: {name}", op_cpu, float("nan")) for name, op_cpu in value.ops]
            if cpu > tally.slowest_run[0]:
                tally.slowest_run = (cpu, (index, kind))
        for op, op_cpu, op_wall in ops:
            for name in [step_method] if step_method else tally.methods:
                case_cpu[name] = max(case_cpu[name], op_cpu) if len(ops) > 1 else case_cpu[name] + op_cpu
            if op_cpu > tally.slowest[0]:
                tally.slowest = (op_cpu, op_wall, (index, kind, op))
            if op_cpu > max_seconds:
                detail = f"{op_cpu:.2f} s CPU ({op_wall:.2f} s wall)"
                tally.failures.append(_record(out, seed, index, kind, "slow", op, detail, data, encoding))
    return case_cpu


@dataclass
class CliOps:
    """What one command-line run cost, as operations: each page cleaned, each site
    fitted (per page learnt: a site of many pages costs that many pages), each page
    rendered in its output format, and the run's own work around them (reading,
    decoding, writing). CPU seconds, this process's and its children's (a fit on
    several processes)."""

    ops: list[tuple[str, float]]


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def cli_ops(fn: Callable, *args) -> CliOps:
    """Run ``fn(*args)`` (a command-line run) timing every ``SiteCleaner.clean`` and
    ``SiteCleaner.fit`` it makes."""
    calls: list[tuple[str, float]] = []
    spent = [0.0]  # in the engine calls
    clean, fit = SiteCleaner.clean, SiteCleaner.fit

    def timed_clean(self, *a, **kw):
        c0 = _cpu()
        try:
            return clean(self, *a, **kw)
        finally:
            calls.append(("SiteCleaner.clean", _cpu() - c0))
            spent[0] += calls[-1][1]

    def timed_fit(self, pages, *a, **kw):
        pages = list(pages)
        c0 = _cpu()
        try:
            return fit(self, pages, *a, **kw)
        finally:
            cpu = _cpu() - c0
            spent[0] += cpu
            calls.append((f"SiteCleaner.fit ({len(pages)} pages), per page", cpu / max(1, len(pages))))

    from sst_cleaner.cli import _main

    render = _main._render

    def timed_render(*a, **kw):
        c0 = _cpu()
        try:
            return render(*a, **kw)
        finally:
            calls.append(("render a page (its format)", _cpu() - c0))
            spent[0] += calls[-1][1]

    SiteCleaner.clean, SiteCleaner.fit = timed_clean, timed_fit  # type: ignore[method-assign]
    _main._render = timed_render
    c0 = _cpu()
    try:
        value = fn(*args)
    finally:
        SiteCleaner.clean, SiteCleaner.fit = clean, fit  # type: ignore[method-assign]
        _main._render = render
    # a run that checks its output after it says how long the command itself took
    total = value[1] if isinstance(value, tuple) else _cpu() - c0
    return CliOps(calls + [("the run's own work (reading, decoding, writing)", max(0.0, total - spent[0]))])


def _report(tally: _Tally, seed: int, methods: list[str], scale: float, start: float) -> dict:
    failures, slowest = tally.failures, tally.slowest
    return {
        "cases": sum(tally.by_kind.values()),
        "seed": seed,
        "methods": methods,
        "scale": scale,
        "crashes": sum(1 for f in failures if f.what == "crash"),
        "slow": sum(1 for f in failures if f.what == "slow"),
        "slowest_step": {"cpu_s": round(slowest[0], 3), "wall_s": round(slowest[1], 3), "case": slowest[2]},
        "slowest_case": {m: {"cpu_s": round(c, 3), "case": where} for m, (c, where) in tally.slowest_case.items()},
        "slowest_cli_run": {"cpu_s": round(tally.slowest_run[0], 3), "case": tally.slowest_run[1]},
        "peak_rss_mb": round(_maxrss_mb(), 1),
        "largest_rss_growth_mb": round(tally.rss_jump[0], 1),
        "largest_rss_growth_case": tally.rss_jump[1],
        "statuses": tally.statuses,
        "kinds": tally.by_kind,
        "elapsed_s": round(time.perf_counter() - start, 1),
        "failures": [f.__dict__ for f in failures[:50]],
    }


def _fit_and_clean(method: str, a: str, case: Data, b: str) -> CleanResult:
    cleaner = SiteCleaner(method=method).fit([a, case, b])
    json.dumps(cleaner.to_dict(), allow_nan=False)  # the model must stay saveable
    return cleaner.clean(case)


def _partial_fit(cleaner: SiteCleaner, case: Data, encoding: Optional[str]) -> None:
    cleaner.partial_fit(("http://fuzz.example/p", case, encoding) if isinstance(case, bytes) else case)
    json.dumps(cleaner.to_dict(), allow_nan=False)  # the model must stay saveable


def hostile_model(rng: random.Random, good: bytes) -> bytes:
    """A model file an attacker or a disk could hand the loader: the good model cut,
    bit-flipped, spliced with junk keys, deep nesting, non-finite or out-of-range
    numbers, paths in its parameters."""
    choice = rng.randrange(9)
    if choice == 0:
        return good[: rng.randrange(len(good) + 1)]
    if choice == 1:
        raw = bytearray(good)
        for _ in range(rng.randint(1, 20)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    data = json.loads(good)
    if choice == 2:
        data[rng.choice(["junk", "model2", "__class__"])] = {f"k{i}": {} for i in range(rng.randint(1, 5000))}
    elif choice == 3:
        data["params"] = {
            rng.choice(["threshold", "scorer", "max_tags", "alpha", "__init__"]): rng.choice(
                ["nan", "inf", "-1", "/dev/zero", "../../etc/passwd", 1e308, -5, "os.system", True, None, [1], {"a": 1}]
            )
        }
    elif choice == 4:  # written by hand: json.dumps itself cannot nest this deep
        n = rng.randint(10, 5000)
        data["model"] = {"site_stats": "DEEP"}
        return json.dumps(data).encode("utf-8").replace(b'"DEEP"', b"[" * n + b"1" + b"]" * n)
    elif choice == 5:
        stats = data.get("model", {}).get("site_stats")
        if isinstance(stats, dict) and stats:
            key = rng.choice(sorted(stats))
            stats[key] = rng.choice([-1, 10**30, "x", None, [], {"h": -3}, {"h": 10**9}, {"k": {"f": [1e308, -1]}}])
    elif choice == 6:
        data["model"] = {rng.choice(["site_stats", "tree", "entropy"]): "x" * rng.randint(1, 100_000)}
    elif choice == 7:
        data["format_version"] = rng.choice([0, 2, "1", None, 1.0])
    else:
        data["method"] = rng.choice(["default", "cetd", "sst", "nope", "", "../x"])
    return json.dumps(data).encode("utf-8")


def _load_hostile_model(good: bytes, rng: random.Random, folder: str) -> None:
    """Load a hostile model file: a ``ModelFormatError`` or a working model are the only
    acceptable outcomes (anything else is a crash)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.json")
    with open(path, "wb") as fh:
        fh.write(hostile_model(rng, good))
    try:
        model = SiteCleaner.load(path)
    except ModelFormatError:
        return
    check_result(model.clean(normal_page(rng, 99)))


def _record(
    out: str, seed: int, index: int, kind: str, what: str, step: str, detail: str, data: Data, encoding: Optional[str]
) -> Failure:
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, f"{what}-{seed}-{index}")
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    with open(stem + ".bin", "wb") as fh:
        fh.write(raw)
    with open(stem + ".txt", "w", encoding="utf-8") as fh:
        fh.write(
            f"kind: {kind}\nstep: {step}\ninput type: {type(data).__name__}\n"
            f"encoding argument: {encoding!r}\n"
            f"replay: python -m sst_cleaner.tools.fuzz --seed {seed} --case {index}\n\n{detail}\n"
        )
    print(f"{what.upper()} case {index} ({kind}) in {step}: {detail.strip().splitlines()[-1]}", flush=True)
    return Failure(seed, index, kind, what, step, detail)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sst_cleaner.tools.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="number of cases (default 10,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case", type=int, default=None, help="replay only this case index")
    ap.add_argument("--methods", default=None, help="comma-separated (default: every registered method)")
    ap.add_argument("--out", default="fuzz-failures", help="folder for reproducers (default ./fuzz-failures)")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=2.0,
        help="CPU seconds allowed per operation and per case and method (default 2)",
    )
    ap.add_argument("--scale", type=float, default=1.0, help="size factor of the heavy cases")
    ap.add_argument("--fit-every", type=int, default=5, help="fit a fresh cleaner on every k-th case")
    ap.add_argument(
        "--kinds",
        default=None,
        help="comma-separated case kinds: run only the cases of these kinds (same case numbers)",
    )
    ap.add_argument(
        "--per-kind",
        type=int,
        default=None,
        help="instead of --cases: run case numbers until this many cases of each kind (of --kinds) have run",
    )
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    methods = args.methods.split(",") if args.methods else available_methods()
    report = run(
        args.cases,
        args.seed,
        methods,
        args.out,
        args.max_seconds,
        args.scale,
        args.fit_every,
        args.case,
        args.quiet,
        set(args.kinds.split(",")) if args.kinds else None,
        args.per_kind,
    )
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"cases {report['cases']} (seed {args.seed}, methods {', '.join(methods)}) in {report['elapsed_s']} s")
        print(f"crashes {report['crashes']}, slow (> {args.max_seconds} s CPU) {report['slow']}")
        s = report["slowest_step"]
        print(f"slowest operation: {s['cpu_s']} s CPU / {s['wall_s']} s wall, case {s['case']}")
        for m, sc in report["slowest_case"].items():
            print(f"slowest case for {m} (parse_html + its operations): {sc['cpu_s']} s CPU, case {sc['case']}")
        if report["slowest_cli_run"]["case"]:
            r = report["slowest_cli_run"]
            print(f"slowest whole command-line run: {r['cpu_s']} s CPU, case {r['case']}")
        print(
            f"peak memory: {report['peak_rss_mb']} MB RSS (largest growth {report['largest_rss_growth_mb']} MB, "
            f"case {report['largest_rss_growth_case']})"
        )
        print(f"result statuses: {report['statuses']}")
    return 0 if report["crashes"] == 0 and report["slow"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
