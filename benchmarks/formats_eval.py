"""Does structure cost content? The Markdown output's token F1 beside the text output's
on the dev corpora, the share of the main content's ``pre`` blocks whose lines come out
intact, and metadata accuracy beside trafilatura's.

    python benchmarks/formats_eval.py [DATASETS] [--corpora portal,sites-dev,docs-dev,single-dev]

Each page is cleaned once, in the shared ``site_eval.py`` modes (portal and sites-dev
transductive, docs-dev ``sample`` with 20 fitted pages, single-dev page-level), and both
its ``result.text`` and ``result.markdown`` are scored against the gold with the shared
``score.py`` token F1 (macro over pages). A ``pre`` block of a page counts when its words
are in the page's gold text (it is main content); it survives intact when its lines, with
their indentation and in order, are a part of ``result.text``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import defaultdict

sys.path.insert(0, "/work/shared/bench")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODES = {"portal": "transductive", "sites-dev": "transductive", "docs-dev": "sample", "single-dev": "page"}


def _norm(text: str) -> str:
    return " ".join(text.split())


def pre_blocks(page, gold: str) -> list[str]:
    """The verbatim text of the page's ``pre`` blocks that are main content."""
    from sst_cleaner.engine._formats import verbatim

    gold_flat = _norm(gold)
    out = []
    for pre in page.root.iter("pre"):
        if any(a.tag == "pre" for a in pre.iterancestors()):
            continue
        code = verbatim(pre)
        if "\n" in code and _norm(code) and _norm(code) in gold_flat:
            out.append(code)
    return out


def run_corpus(datasets: str, corpus: str):
    from pages import load_manifest, read_gold, read_page
    from score import evaluate

    from sst_cleaner import SiteCleaner
    from sst_cleaner.engine._dom import parse_html

    manifest = os.path.join(datasets, corpus, "manifest.jsonl")
    mode = MODES[corpus]
    by_site = defaultdict(list)
    for row in load_manifest(manifest):
        by_site[row["site"] or row["id"]].append(row)
    text, md = {}, {}
    pres = kept = 0
    for rows in by_site.values():
        pages = [(r.get("url"), read_page(r)[0]) for r in rows]
        targets = list(range(len(rows)))
        cleaner = SiteCleaner()
        if mode == "transductive":
            cleaner.fit(pages)
        elif mode == "sample":
            order = list(range(len(pages)))
            random.Random(0).shuffle(order)
            chosen = set(order[:20])
            cleaner.fit([p for i, p in enumerate(pages) if i in chosen])
            targets = [i for i in targets if i not in chosen]
        for i in targets:
            url, html = pages[i]
            result = cleaner.clean(html, url=url)
            text[rows[i]["id"]], md[rows[i]["id"]] = result.text, result.markdown
            if corpus == "docs-dev":
                blocks = pre_blocks(parse_html(html, url=url), read_gold(rows[i]))
                pres += len(blocks)
                kept += sum(1 for b in blocks if b in result.text)
    skip = mode == "sample"
    return (evaluate(text, manifest, skip_missing=skip), evaluate(md, manifest, skip_missing=skip), pres, kept)


def _f1(res) -> float:
    for key in ("f1", "F1", "macro_f1"):
        if key in res:
            return res[key]
    return res["macro"]["f1"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="?", default="/work/shared/datasets")
    ap.add_argument("--corpora", default="portal,sites-dev,docs-dev,single-dev")
    ap.add_argument("--metadata-corpora", default="news-eras,single-chaos")
    args = ap.parse_args()
    print("| corpus (mode) | pages | text F1 | markdown F1 | difference |")
    print("|---|---|---|---|---|")
    pre_line = None
    for corpus in args.corpora.split(","):
        t0 = time.perf_counter()
        res_text, res_md, pres, kept = run_corpus(args.datasets, corpus)
        a, b = _f1(res_text), _f1(res_md)
        print(
            f"| {corpus} ({MODES[corpus]}) | {res_text.get('pages', res_text.get('n', '?'))} | {a:.4f} | "
            f"{b:.4f} | {b - a:+.4f} |  ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        if corpus == "docs-dev":
            pre_line = (
                f"docs-dev: {kept} of {pres} main-content pre blocks (multi-line) come out with "
                f"every line intact in result.text ({kept / max(1, pres):.3f})"
            )
    if pre_line:
        print("\n" + pre_line)
    import metadata_eval

    rows = metadata_eval.load_rows(args.datasets, args.metadata_corpora)
    print(
        f"\nmetadata, {len(rows)} pages with an article's JSON-LD ({args.metadata_corpora}); "
        "see benchmarks/metadata_eval.py for the gold and its caveat:"
    )
    print("\n".join(metadata_eval.table(rows)))


if __name__ == "__main__":
    main()
