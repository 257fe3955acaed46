#!/usr/bin/env python3
"""Per-site tables for api-dev (benchmarks/build_api_corpora.py): sst-cleaner vs baselines.

    python3 benchmarks/api_dev_report.py DATA EVAL BASELINES

DATA       the corpus (/work/data/api-dev)
EVAL       a folder with page/api-dev.jsonl and sample/api-dev.jsonl, written by
           shared/bench/site_eval.py DATA/manifest.jsonl --mode page|sample --preds EVAL/page|sample
BASELINES  the --out folder of shared/bench/baselines.py DATA (BASELINES/api-dev/E.jsonl)

Scores with shared/bench/score.py (found beside site_eval.py: SCORE env or
/work/shared/bench/score.py); the baselines are also scored on the pages that sample
mode cleaned only (their predictions filtered to those ids, then --skip-missing).
Prints two Markdown tables (P / R / F1, macro over pages).
"""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

EXTRACTORS = ["trafilatura", "readability", "resiliparse", "html_text"]
LABEL = {
    "trafilatura": "trafilatura",
    "readability": "readability",
    "resiliparse": "Resiliparse",
    "html_text": "whole page (html_text)",
}


def main():
    data, ev, base = map(Path, sys.argv[1:4])
    score_py = os.environ.get("SCORE", "/work/shared/bench/score.py")
    manifest = data / "manifest.jsonl"
    rows = [json.loads(line) for line in open(manifest)]
    site_of = {r["id"]: r["site"] for r in rows}
    sites = list(dict.fromkeys(r["site"] for r in rows))
    gen = {s["site"]: s["generator"] for s in json.load(open(data / "stats.json"))}
    sample_ids = {json.loads(line)["id"] for line in open(ev / "sample" / "api-dev.jsonl")}
    filt = ev / "sample-baselines"
    filt.mkdir(exist_ok=True)
    for e in EXTRACTORS:
        with open(filt / f"{e}.jsonl", "w") as f:
            for line in open(base / "api-dev" / f"{e}.jsonl"):
                if json.loads(line)["id"] in sample_ids:
                    f.write(line)

    def score(pred, skip):
        cmd = [sys.executable, score_py, str(manifest), str(pred), "--json"]
        cmd += ["--skip-missing"] if skip else []
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return json.loads(out)["corpora"][0]

    res = {
        ("sst page", "all"): score(ev / "page" / "api-dev.jsonl", False),
        ("sst sample", "sample"): score(ev / "sample" / "api-dev.jsonl", True),
    }
    for e in EXTRACTORS:
        res[(e, "all")] = score(base / "api-dev" / f"{e}.jsonl", False)
        res[(e, "sample")] = score(filt / f"{e}.jsonl", True)

    def cell(key, site, ids=None):
        c = res[key]
        if ids is not None:  # mean of per-page scores over ids
            sel = [i for i in ids if site is None or site_of[i] == site]
            return tuple(statistics.fmean(c["per_page"][i][k] for i in sel) for k in range(3))
        if site is None:
            return c["precision"], c["recall"], c["f1"]
        s = c["per_site"][site]
        return s["precision"], s["recall"], s["f1"]

    def fmt(x):
        return f"{x[0]:.3f} / {x[1]:.3f} / {x[2]:.3f}"

    def npages(key, site):
        c = res[key]
        return c["pages"] if site is None else c["per_site"][site]["pages"]

    print("All pages (P / R / F1, macro over pages):\n")
    print("| site | generator | pages | sst-cleaner `page` | " + " | ".join(LABEL[e] for e in EXTRACTORS) + " |")
    print("|---|---|---:|" + "---:|" * (1 + len(EXTRACTORS)))
    for s in sites + [None]:
        cells = [fmt(cell(("sst page", "all"), s))]
        cells += [fmt(cell((e, "all"), s)) for e in EXTRACTORS]
        print(f"| {s or '**all**'} | {gen.get(s, '')} | {npages(('sst page', 'all'), s)} | " + " | ".join(cells) + " |")
    print(
        "\nThe pages that `sample` mode cleaned (fit on 20 pages of the site, seed 0, "
        "the others scored; every extractor on the same pages):\n"
    )
    print(
        "| site | pages | sst-cleaner `sample(20)` | sst-cleaner `page` | "
        + " | ".join(LABEL[e] for e in EXTRACTORS)
        + " |"
    )
    print("|---|---:|" + "---:|" * (2 + len(EXTRACTORS)))
    for s in sites + [None]:
        cells = [fmt(cell(("sst sample", "sample"), s)), fmt(cell(("sst page", "all"), s, ids=sample_ids))]
        cells += [fmt(cell((e, "sample"), s)) for e in EXTRACTORS]
        print(f"| {s or '**all**'} | {npages(('sst sample', 'sample'), s)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
