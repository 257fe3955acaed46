"""``sst-cleaner explain PAGES... -o report.html``: why each block was kept or removed.

The pages are read as by the other commands (HTML files, WARC archives, folders, ``-``),
with the same caps. Each site of the pages is learnt as ``site`` learns it (or the
``--model`` given is used, as by ``clean``), then the first ``--max-pages`` pages are
explained (see :mod:`sst_cleaner.engine._explain`) into one self-contained HTML report.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sst_cleaner.engine._explain import DEFAULT_REPORT_PAGES, MAX_REPORT_PAGES


def add_parser(sub: Any, parents: list) -> None:
    """The ``explain`` command, under the command line's subparsers ``sub``."""
    p = sub.add_parser(
        "explain",
        parents=parents,
        help="write an HTML report of why each block was kept or removed",
        description="Learn each site of the pages (as `site` does; or use --model), clean the "
        "first pages and write one self-contained HTML report: each page's blocks kept and "
        "removed, their scores and evidence, the site model's template nodes and the step "
        "that decided the page.",
    )
    p.add_argument("-o", "--output", required=True, help="the HTML report to write")
    p.add_argument("--model", help="model file written by `fit` (none: learn each site of the pages)")
    p.add_argument(
        "--max-pages",
        type=_max_pages,
        default=DEFAULT_REPORT_PAGES,
        help=f"pages to explain, the first ones read (default {DEFAULT_REPORT_PAGES}, at most {MAX_REPORT_PAGES})",
    )


def _max_pages(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 1 <= n <= MAX_REPORT_PAGES:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_REPORT_PAGES}")
    return n


def run(args: Any, stdin: Any = None) -> int:
    from sst_cleaner.cli._main import (
        EXIT_MODEL,
        EXIT_OK,
        EXIT_PAGE_ERRORS,
        SiteCleaner,
        UsageError,
        _fit_sites,
        _sample_sites,
        printable_name,
        read_pages,
    )
    from sst_cleaner.engine._explain import render_report, write_report
    from sst_cleaner.engine._model_io import ModelFormatError

    errors: list = []
    # standard input is spooled by the caller, so it is read twice like a file
    first = read_pages(args.pages, errors, stdin=stdin)
    pages = lambda: read_pages(args.pages, [], report=False, stdin=stdin)  # noqa: E731
    samples, total = _sample_sites(first)
    if not total:
        raise UsageError("no HTML page found in " + " ".join(printable_name(p) for p in args.pages))
    if args.model:
        try:
            model = SiteCleaner.load(args.model)
        except ModelFormatError as exc:
            print(f"sst-cleaner: {exc}", file=sys.stderr)
            return EXIT_MODEL
        cleaners = dict.fromkeys(samples, model)
    else:
        cleaners = _fit_sites(samples, args.method, args.jobs)
    del samples
    explained: list = []
    failed: list = []
    for page in pages():
        if len(explained) >= args.max_pages:
            break
        name = printable_name(page.name)
        try:
            why = cleaners[page.site].explain((page.url, page.body, page.encoding), name=name)
            why.site = page.site  # a WARC's host; other pages are one site, unnamed
            explained.append(why)
        except Exception as exc:  # one broken page never stops the report
            failed.append(f"{name}: {exc!r}")
            print(f"sst-cleaner: {name}: {exc!r}", file=sys.stderr)
    report = render_report(
        explained,
        title="sst-cleaner explain: why each block was kept or removed",
        not_shown=max(0, total - len(explained) - len(failed)),
        skipped=[*errors, *failed],
    )
    try:
        write_report(args.output, report)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc}") from exc
    print(f"explained {len(explained)} of {total} pages -> {args.output}", file=sys.stderr)
    return EXIT_PAGE_ERRORS if errors or failed else EXIT_OK
