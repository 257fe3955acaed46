#!/usr/bin/env python3
"""Informative vs plain link extraction on the demo site (a benchmark, not a test).

Runs ``scrapy crawl demo_links`` (spiders/demo_links.py: a CrawlSpider over the embedded
demo site, site model WISDOM) once with Scrapy's plain ``LinkExtractor`` and once with
``InformativeLinkExtractor``, each in its own process, and optionally once with the
informative extractor but no pagination links (``--no-pagination-run``), then prints per
crawl: links followed, requests made, how many followed links lead to article pages,
article pages reached / total, and the informative/plain ratios.

    python benchmarks/link_extraction.py [--seeds 7,11] [--articles 60] [--per-listing 4]
                                         [--sample-pages 20] [--no-pagination-run]

"links followed" = links the rule's extractor returned, summed over the pages (Scrapy
drops the duplicates later); "requests" = Scrapy's ``downloader/request_count`` (robots.txt
included). Until the WISDOM model exists (the first ``SST_SAMPLE_PAGES`` pages, plus those
parsed while it is built) the informative extractor returns every link too, so the
"on pages with a model" columns show what the extractor itself keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def crawl(
    mode: str,
    seed: int,
    articles: int,
    per_listing: int,
    sample_pages: int,
    pagination: bool = True,
    timeout: float = 600,
) -> dict:
    """One ``scrapy crawl demo_links`` in a fresh process; its JSON summary."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "summary.json")
        cmd = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "demo_links",
            "-a",
            f"links={mode}",
            "-a",
            f"seed={seed}",
            "-a",
            f"articles={articles}",
            "-a",
            f"per_listing={per_listing}",
            "-a",
            f"pagination={int(pagination)}",
            "-a",
            f"summary={out}",
            "-s",
            f"SST_SAMPLE_PAGES={sample_pages}",
            "-s",
            "LOG_LEVEL=WARNING",
        ]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"crawl {mode} failed:\n{proc.stderr[-3000:]}")
        with open(out, encoding="utf-8") as fh:
            return json.load(fh)


def row(name: str, s: dict) -> str:
    pct = lambda n, d: f"{100.0 * n / d:5.1f}%" if d else "   - "  # noqa: E731
    return (
        f"{name:<24} {s['links_followed']:>8} {s['requests']:>9} "
        f"{s['followed_to_articles']:>7} {pct(s['followed_to_articles'], s['links_followed'])} "
        f"{s['articles_reached']:>4}/{s['articles_total']:<4} {'yes' if s['all_articles_reached'] else 'NO':>4}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="7", help="demo site seeds, comma-separated")
    parser.add_argument("--articles", type=int, default=60)
    parser.add_argument("--per-listing", type=int, default=4, help="teasers per listing page")
    parser.add_argument("--sample-pages", type=int, default=20, help="SST_SAMPLE_PAGES")
    parser.add_argument(
        "--no-pagination-run",
        action="store_true",
        help="also crawl with the informative extractor without pagination links",
    )
    args = parser.parse_args()
    from sst_cleaner.tools.demo import DemoSite

    header = f"{'crawl':<24} {'followed':>8} {'requests':>9} {'->art':>7} {'share':>6} {'articles':>9} {'all':>4}"
    for seed in [int(s) for s in args.seeds.split(",") if s.strip()]:
        site = DemoSite(seed=seed, n_articles=args.articles, per_listing=args.per_listing)
        print(
            f"\ndemo site seed {seed}: {len(site.paths)} HTML pages, {args.articles} articles, "
            f"{args.per_listing} teasers per listing page; SST_METHOD wisdom, "
            f"SST_SAMPLE_PAGES {args.sample_pages}"
        )
        common = (seed, args.articles, args.per_listing, args.sample_pages)
        plain = crawl("plain", *common)
        info = crawl("informative", *common)
        runs = [("plain LinkExtractor", plain), ("informative", info)]
        if args.no_pagination_run:
            runs.append(("informative, no pages", crawl("informative", *common, pagination=False)))
        print(header)
        for name, s in runs:
            print(row(name, s))
        print(
            f"ratio informative/plain: links followed {info['links_followed'] / plain['links_followed']:.2f}, "
            f"requests {info['requests'] / plain['requests']:.2f}"
        )
        seen, kept = info["extractor_links_seen_with_model"], info["extractor_links_kept_with_model"]
        print(
            f"on the {info['extractor_pages_with_model']} of {info['extractor_pages']} pages parsed with a "
            f"model: {kept} of {seen} links kept ({100.0 * kept / max(1, seen):.1f}%: "
            f"{info['extractor_kept_link_block']} in WISDOM link blocks, {info['extractor_kept_content']} "
            f"content, {info['extractor_kept_pagination']} pagination); "
            f"{info['followed_with_model_to_articles']} of them lead to article pages "
            f"({100.0 * info['followed_with_model_to_articles'] / max(1, kept):.1f}%)"
        )


if __name__ == "__main__":
    main()
