"""Prove that a change keeps every output: a digest of what each method returns on
every dev page, written before the change and compared after it.

    python benchmarks/same_output.py --write /tmp/before.json      # on the old commit
    python benchmarks/same_output.py --compare /tmp/before.json    # on the new one

For every corpus in ``../shared/datasets`` (or the manifests given) and every method,
each site is fitted on all its pages and each page cleaned (the papers' transductive
setting); the default method also cleans every page without a fit (the page-level
path) and every other page with a model of the rest of its site (pages it has not
learnt). Per page it records a hash of the text, the Markdown, the status and the blocks'
(xpath, label) pairs; per site a hash of the saved model. ``--compare`` prints every
difference and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "shared"))
sys.path.insert(0, os.path.join(SHARED, "bench"))
sys.path.insert(0, os.path.dirname(HERE))  # the checkout, when it is not installed


def _h(value) -> str:
    raw = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]


def _page_digest(result) -> str:
    blocks = [(b.xpath, b.label) for b in result.blocks]
    return _h([result.text or "", result.markdown or "", result.status, blocks])


def digest_corpus(manifest: str, methods: list[str]) -> dict:
    from pages import load_manifest, read_page

    from sst_cleaner import SiteCleaner

    by_site: dict[str, list[dict]] = defaultdict(list)
    for row in load_manifest(manifest):
        by_site[row["site"] or row["id"]].append(row)
    out: dict[str, str] = {}
    for site, rows in sorted(by_site.items()):
        pages = [(r.get("url"), read_page(r)[0]) for r in rows]
        for method in methods:
            cleaner = SiteCleaner(method=method).fit(pages)
            out[f"{method}|{site}|model"] = _h(cleaner.to_dict())
            for row, (url, html) in zip(rows, pages):
                out[f"{method}|{row['id']}"] = _page_digest(cleaner.clean(html, url=url))
        # the default method also cleans pages its model has not learnt (fitted on every
        # other page of the site), as a crawl does with most pages: a learnt page's clean
        # reuses what learning it computed, so the transductive digests leave that out
        if "default" in methods and len(pages) > 1:
            half = SiteCleaner(method="default").fit(pages[::2])
            for row, (url, html) in list(zip(rows, pages))[1::2]:
                out[f"unseen|{row['id']}"] = _page_digest(half.clean(html, url=url))
        cold = SiteCleaner(method="default")
        for row, (url, html) in zip(rows, pages):
            out[f"page|{row['id']}"] = _page_digest(cold.clean(html, url=url))
    return out


def _manifests(paths: list[str]) -> list[str]:
    from score import find_manifests

    found: list[str] = []
    for p in paths:
        found.extend(find_manifests(p))
    return sorted(found)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=[os.path.join(SHARED, "datasets")])
    ap.add_argument("--write", help="write the digest to this file")
    ap.add_argument("--compare", help="compare with a digest written before")
    ap.add_argument("--methods", default="", help="comma-separated (default: every method)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    from sst_cleaner import available_methods

    methods = [m for m in args.methods.split(",") if m] or available_methods()
    manifests = _manifests(args.paths)
    t0 = time.perf_counter()
    digest: dict[str, str] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for part in pool.map(digest_corpus, manifests, [methods] * len(manifests)):
            digest.update(part)
    print(
        f"{len(digest)} digests from {len(manifests)} corpora, methods {', '.join(methods)}, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    if args.write:
        with open(args.write, "w", encoding="utf-8") as fh:
            json.dump(digest, fh, indent=0, sort_keys=True)
    if args.compare:
        with open(args.compare, encoding="utf-8") as fh:
            before = json.load(fh)
        diff = sorted(k for k in set(before) | set(digest) if before.get(k) != digest.get(k))
        for key in diff[:200]:
            print(f"differs: {key} {before.get(key)} -> {digest.get(key)}")
        print(f"{len(diff)} of {len(set(before) | set(digest))} digests differ")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
