"""Compare CETD variants on the DEV corpora in one process (page mode, no fit).

    cd /work/main && python benchmarks/cetd_check.py /work/shared/datasets \
        --variant '{}' --variant '{"density": "td"}' [--corpus portal] [--worst 10]

Each variant is a JSON dict of ``CETDMethod`` parameters. Prints macro P/R/F1 per corpus
(the reference scorer's metric) and the median clean time (parse + CETD + blocks), so
variants can be compared without re-running ``site_eval.py`` for each. Pages are read
with the benchmark's own ``pages.read_page``; nothing is copied anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

BENCH = "/work/shared/bench"
sys.path.insert(0, BENCH)
sys.path.insert(1, os.getcwd())

from pages import load_manifest, read_page  # noqa: E402
from score import evaluate, find_manifests, prf  # noqa: E402

from sst_cleaner.engine._dom import parse_html  # noqa: E402
from sst_cleaner.engine.methods.cetd import CETDMethod  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--worst", type=int, default=0, help="list the N worst pages of each corpus")
    args = ap.parse_args(argv)
    variants = [json.loads(v) for v in (args.variant or ["{}"])]
    for manifest in find_manifests(args.data):
        name = os.path.basename(os.path.dirname(os.path.abspath(manifest)))
        if args.corpus and name not in args.corpus:
            continue
        rows = load_manifest(manifest)
        htmls = [(r, read_page(r)[0]) for r in rows]
        for params in variants:
            method = CETDMethod(**params)
            preds, ms = {}, []
            for row, html in htmls:
                t0 = time.perf_counter()
                preds[row["id"]] = method.clean(parse_html(html, url=row.get("url"))).text
                ms.append((time.perf_counter() - t0) * 1000)
            res = evaluate(preds, manifest)
            print(
                f"{name:<11} {json.dumps(params):<50} P={res['precision']:.3f} R={res['recall']:.3f} "
                f"F1={res['f1']:.3f} clean_ms={statistics.median(ms):.1f} "
                f"p95={sorted(ms)[int(0.95 * (len(ms) - 1))]:.1f}"
            )
            if args.worst:
                from pages import read_gold

                per = []
                for row, _ in htmls:
                    p, r, f = prf(preds[row["id"]], read_gold(row))
                    per.append((f, p, r, row["id"]))
                for f, p, r, pid in sorted(per)[: args.worst]:
                    print(f"    {pid:<40} F1={f:.3f} P={p:.3f} R={r:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
