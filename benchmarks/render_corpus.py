"""Render DEV corpora pages offline in headless Chromium, for CEHTD (layout in the HTML).

    nice python benchmarks/render_corpus.py /work/shared/datasets OUT_DIR \
        [--corpus news-eras] [--limit N]

Writes ``OUT_DIR/<corpus>/<id>.html`` (the page with the layout attributes of
:mod:`sst_cleaner.render`; keep OUT_DIR outside the repository: the pages belong to their
publishers) and prints pages/s per corpus, with the time ``cehtd`` takes to clean the
rendered pages in the same run (parse included) as the baseline of the ratio. One
browser, one page at a time; scripts of the pages do not run; nothing is fetched. A
page the browser fails on is listed and counted, not written. The corpora are read as
every benchmark reads them (:func:`sst_cleaner.tools.bench._scoring.load_corpus`: the
pages site by site, each decoded by the benchmark's input rule).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.getcwd())

from sst_cleaner import SiteCleaner  # noqa: E402
from sst_cleaner.render import Renderer, RenderError  # noqa: E402
from sst_cleaner.tools.bench._scoring import find_manifests, load_corpus  # noqa: E402


def safe_name(page_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", page_id)[:200] + ".html"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--limit", type=int, default=0, help="render the first N pages of each corpus (site by site)")
    args = ap.parse_args(argv)
    with Renderer() as r:
        for manifest in find_manifests(args.data):
            name = os.path.basename(os.path.dirname(os.path.abspath(manifest)))
            if args.corpus and name not in args.corpus:
                continue
            rows = load_corpus(manifest).pages
            if args.limit:
                rows = rows[: args.limit]
            folder = os.path.join(args.out, name)
            os.makedirs(folder, exist_ok=True)
            failed = 0
            n_bytes = 0
            render_s = clean_s = 0.0
            cleaner = SiteCleaner(method="cehtd")
            for row in rows:
                html = row.html
                t0 = time.perf_counter()
                try:
                    out = r.render(html, row.url)
                except RenderError as exc:
                    failed += 1
                    print(f"  {row.id}: {exc}", file=sys.stderr)
                    continue
                t1 = time.perf_counter()
                cleaner.clean(out, row.url)
                clean_s += time.perf_counter() - t1
                render_s += t1 - t0
                n_bytes += len(html)
                with open(os.path.join(folder, safe_name(row.id)), "w", encoding="utf-8") as f:
                    f.write(out)
            done = len(rows) - failed
            print(
                f"{name:<13} pages={len(rows)} rendered={done} failed={failed} render_s={render_s:.1f} "
                f"render pages/s={done / render_s:.2f} MB/s={n_bytes / render_s / 1e6:.2f} "
                f"cehtd clean pages/s={done / clean_s:.1f} render/clean time={render_s / clean_s:.1f}x",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
