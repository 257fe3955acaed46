"""What explaining a page costs against cleaning it, in step, page by page.

    python benchmarks/explain_cost.py [CORPUS_DIR] [--pages-per-site 3] [--fit-pages 20]

Each site of the corpus is fitted on its first ``--fit-pages`` pages; then, for the first
``--pages-per-site`` pages of each site, ``SiteCleaner.clean`` and ``SiteCleaner.explain``
run on the same page (the order swapped at every page), timed in process CPU time. It
prints the sum of explain's times over the pages divided by the sum of clean's: the
ratio is measured in step, so the machine's drift hits both sides alike. It also checks
that each explanation's labels are the clean's (explain reads its evidence apart from
the clean, which it does not change), and the size of the report of all those pages.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets", "sites-dev"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    ap.add_argument("--pages-per-site", type=int, default=3)
    ap.add_argument("--fit-pages", type=int, default=20)
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(HERE))
    from sst_cleaner import SiteCleaner
    from sst_cleaner.engine._explain import render_report
    from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus

    sites = load_corpus(find_manifests(args.corpus)[0]).sites
    clock = time.process_time
    clean_s = explain_s = 0.0
    explained, mismatched = [], 0
    for site, pages in sites.items():
        cleaner = SiteCleaner().fit([(p.url, p.html) for p in pages[: args.fit_pages]])
        for i, p in enumerate(pages[: args.pages_per_site]):
            for step in ("clean", "explain") if i % 2 else ("explain", "clean"):
                t = clock()
                got = getattr(cleaner, step)(p.html, p.url)
                dt = clock() - t
                if step == "clean":
                    clean_s += dt
                    result = got
                else:
                    explain_s += dt
                    why = got
            mismatched += [b.label for b in why.blocks] != [b.label for b in result.blocks]
            why.site = site
            explained.append(why)
    t = clock()
    report = render_report(explained[:500])
    render_s = clock() - t
    n = len(explained)
    print(
        f"{n} pages of {len(sites)} sites: explain {explain_s / clean_s:.2f}x clean "
        f"({explain_s * 1000 / n:.1f} ms a page against {clean_s * 1000 / n:.1f} ms); "
        f"labels differing from the clean's: {mismatched}; report of {min(n, 500)} pages: "
        f"{len(report.encode('utf-8')) / 1e6:.1f} MB with {report.count('<h2 id=')} pages shown, "
        f"rendered in {render_s:.2f} s"
    )
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
