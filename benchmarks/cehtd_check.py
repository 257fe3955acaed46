"""CEHTD-DS against CECTD-DS (``cetd``) on DEV pages rendered offline.

    python benchmarks/render_corpus.py /work/shared/datasets /work/notes/rendered   # first
    python benchmarks/cehtd_check.py /work/shared/datasets /work/notes/rendered [--corpus news-eras]

For every page of a corpus that has a render (``RENDERED/<corpus>/<id>.html``), prints
the macro precision / recall / F1 of the reference scorer for: ``cetd`` on the page as
stored, ``cetd`` on the rendered page (the same HTML CEHTD sees: Chromium's DOM), and
``cehtd`` on the rendered page, plus how many rendered pages carried no usable layout.
Pages are read with the benchmark's own ``pages.read_page``.
"""

from __future__ import annotations

import argparse
import os
import sys

BENCH = "/work/shared/bench"
sys.path.insert(0, BENCH)
sys.path.insert(1, os.getcwd())
sys.path.insert(2, os.path.dirname(os.path.abspath(__file__)))

from pages import load_manifest, read_page  # noqa: E402
from render_corpus import safe_name  # noqa: E402
from score import evaluate, find_manifests  # noqa: E402

from sst_cleaner import SiteCleaner  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("rendered")
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--per-site", action="store_true", help="also each site's P / F1, cetd (rendered) and cehtd")
    args = ap.parse_args(argv)
    cetd, cehtd = SiteCleaner(method="cetd"), SiteCleaner(method="cehtd")
    import logging

    logging.getLogger("sst_cleaner.engine.methods.cehtd").setLevel(logging.ERROR)
    for manifest in find_manifests(args.data):
        name = os.path.basename(os.path.dirname(os.path.abspath(manifest)))
        if args.corpus and name not in args.corpus:
            continue
        preds: dict = {"cetd (stored page)": {}, "cetd (rendered)": {}, "cehtd (rendered)": {}}
        no_layout = 0
        rows = load_manifest(manifest)
        for row in rows:
            path = os.path.join(args.rendered, name, safe_name(row["id"]))
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as f:
                rendered = f.read()
            url = row.get("url")
            preds["cetd (stored page)"][row["id"]] = cetd.clean(read_page(row)[0], url).text
            preds["cetd (rendered)"][row["id"]] = cetd.clean(rendered, url).text
            result = cehtd.clean(rendered, url)
            no_layout += result.status == "no_layout"
            preds["cehtd (rendered)"][row["id"]] = result.text
        n = len(preds["cehtd (rendered)"])
        if not n:
            continue
        print(f"{name}: {n} of {len(rows)} pages rendered; {no_layout} without usable layout")
        results = {}
        for label, p in preds.items():
            res = results[label] = evaluate(p, manifest, skip_missing=True)
            print(f"  {label:<20} P={res['precision']:.3f} R={res['recall']:.3f} F1={res['f1']:.3f}")
        base, hybrid = results["cetd (rendered)"], results["cehtd (rendered)"]
        diffs = [hybrid["per_page"][k][2] - base["per_page"][k][2] for k in hybrid["per_page"]]
        print(
            f"  cehtd against cetd (rendered), pages: F1 higher {sum(d > 0.005 for d in diffs)}, "
            f"lower {sum(d < -0.005 for d in diffs)}, within 0.005 {sum(abs(d) <= 0.005 for d in diffs)}"
        )
        if args.per_site:
            for site, b in base["per_site"].items():
                h = hybrid["per_site"][site]
                print(
                    f"    {site:<28} pages={b['pages']:<3} cetd P={b['precision']:.3f} F1={b['f1']:.3f}  "
                    f"cehtd P={h['precision']:.3f} F1={h['f1']:.3f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
