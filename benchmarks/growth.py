"""How a clean's cost grows with the page: CPU per KB at about 1 MB against about 100 KB.

    python benchmarks/growth.py [--small-kb 100] [--large-kb 1000] [--rounds 5] [--method default]

Builds generated reference pages (big_page.py's documentation page: sections of headings,
paragraphs, code, tables and definition lists in a site template) of about each size,
plain and with lists and tables of short lines; fits a model on three short pages of the
same site, then cleans each page ``--rounds`` times, the sizes interleaved and each clean
beside lxml's parse of the same bytes, in CPU time. Prints, per size, milliseconds per KB
of the clean and of lxml's parse, the clean as a multiple of the parse, and the growth:
the large page's cost per KB over the small one's (1.0 is linear; the speed issue asks for
at most 1.2). The median round is reported, so a burst of load moves it little. Each
timing starts after a full collection, so that the collector's work a clean defers (it
pauses the collector) is not charged to the parse that follows it. A clean that ends
over its time budget did less than the whole page: no growth is given then. (lxml's
parse of the smaller page, timed between cleans of the larger, varies by up to 4x
between runs: the growth is read from the clean's own cost per KB.)
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from big_page import reference_page  # noqa: E402


def page_of_size(kb: int, short_lines: bool, seed: int = 0) -> str:
    """A reference page of about ``kb`` KB (UTF-8), sized by its element count."""
    probe = reference_page(4000, seed=seed, short_lines=short_lines)
    per_element = len(probe.encode("utf-8")) / 4000
    return reference_page(int(kb * 1000 / per_element), seed=seed, short_lines=short_lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small-kb", type=int, default=100)
    ap.add_argument("--large-kb", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--method", default="default")
    args = ap.parse_args()
    for short_lines in (False, True):
        print("reference page" + (", short lines" if short_lines else ""))
        measure(args, {kb: page_of_size(kb, short_lines) for kb in (args.small_kb, args.large_kb)})


def measure(args: argparse.Namespace, pages: dict) -> None:
    from lxml import html as lxml_html

    from sst_cleaner import SiteCleaner

    raw = {kb: html.encode("utf-8") for kb, html in pages.items()}
    cleaner = SiteCleaner(method=args.method).fit([reference_page(400, seed=s) for s in (1, 2, 3)])
    clean_t: dict = {kb: [] for kb in pages}
    parse_t: dict = {kb: [] for kb in pages}
    status = {}
    clock = time.process_time
    for r in range(args.rounds):
        order = list(pages) if r % 2 == 0 else list(reversed(list(pages)))
        for kb in order:
            # the collector's work deferred by a clean (it pauses the collector) would
            # otherwise land on whatever runs next: each timing starts from a collection
            gc.collect()
            t = clock()
            lxml_html.document_fromstring(raw[kb])
            parse_t[kb].append(clock() - t)
            gc.collect()
            t = clock()
            result = cleaner.clean(pages[kb])
            clean_t[kb].append(clock() - t)
            status[kb] = result.status
    per_kb = {}
    for kb in pages:
        size_kb = len(raw[kb]) / 1000
        c, p = statistics.median(clean_t[kb]), statistics.median(parse_t[kb])
        per_kb[kb] = c * 1000 / size_kb
        print(
            f"{size_kb:8.0f} KB: clean {per_kb[kb]:.3f} ms/KB, lxml parse {p * 1000 / size_kb:.3f} ms/KB, "
            f"{c / p:.1f}x lxml (status {status[kb]})"
        )
    growth = per_kb[args.large_kb] / per_kb[args.small_kb]
    if status[args.large_kb] != "ok" or status[args.small_kb] != "ok":
        # a clean cut by its time budget did less work: its cost says nothing of growth
        print(f"growth: not measured (a clean ended {status[args.large_kb]}, not ok)")
    else:
        print(f"growth: cost per KB at {args.large_kb} KB / at {args.small_kb} KB = {growth:.2f}")


if __name__ == "__main__":
    main()
