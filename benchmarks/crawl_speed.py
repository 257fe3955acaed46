#!/usr/bin/env python3
"""Crawl speed with and without sst-cleaner (a benchmark, not a test).

Serves a generated ~2,000-page site (sst_cleaner.tools.demo) on 127.0.0.1, crawls it twice with
the same spider, once plain and once with the sst-cleaner add-on (middleware + pipeline),
each crawl in a fresh process, and prints pages/s for both and their ratio (target >= 0.8).

    python benchmarks/crawl_speed.py [--articles 1900] [--method default] [--threads 2]
                                     [--workers process|thread|both] [--processes N]

pages/s = HTML pages crawled / seconds from "spider opened" to "spider closed" (Scrapy's
``elapsed_time_seconds``), so start-up and imports are not counted. The local server has
no network latency, so the crawl is CPU-bound: this is the worst case for the ratio.

It also prints the CPU milliseconds per page of the crawl process (all its threads), of
its worker processes and of the server, and the "CPU-bound ceiling" of the ratio: plain
crawl-process CPU per page / the same with sst-cleaner. On a loaded machine pages/s swing
from run to run, CPU per page much less; with ``SST_WORKERS = "process"`` on a quiet
machine the ratio reaches about that ceiling when the workers fit on the other cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def child(cfg: dict) -> None:
    """One crawl (runs in its own process: one Twisted reactor per process)."""
    import scrapy
    from scrapy.crawler import CrawlerProcess

    class BenchSpider(scrapy.Spider):
        name = "bench"
        start_urls = [cfg["url"]]

        def parse(self, response):
            for href in response.css("a::attr(href)").getall():
                path = urlsplit(response.urljoin(href)).path
                if path.startswith(("/section/", "/article/")):
                    yield response.follow(href, callback=self.parse)
            yield {"url": response.url, "title": response.css("h1::text").get()}

    settings = {
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    }
    if cfg["sst"]:
        settings.update(
            {
                "ADDONS": {"sst_cleaner.Addon": 0},
                "SST_METHOD": cfg["method"],
                "SST_THREADS": cfg["threads"],
                "SST_WORKERS": cfg["workers"],
            }
        )
        if cfg.get("processes"):
            settings["SST_PROCESSES"] = cfg["processes"]
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(BenchSpider)
    process.crawl(crawler)
    process.start()
    reactor_cpu = time.thread_time()  # the reactor runs in this (main) thread
    stats = crawler.stats.get_stats()
    import resource

    own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {
        "pages": stats.get("response_received_count", 0),
        "cpu": own.ru_utime + own.ru_stime,
        "worker_cpu": workers.ru_utime + workers.ru_stime,
        "reactor_cpu": reactor_cpu,
        "items": stats.get("item_scraped_count", 0),
        "seconds": stats.get("elapsed_time_seconds", 0.0),
        "sst": {k: v for k, v in stats.items() if k.startswith("sst/")},
    }
    with open(cfg["out"], "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=str)


def run(url: str, sst: bool, method: str, threads: int, workers: str = "process", processes: int = 0) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cfg = {
            "url": url,
            "sst": sst,
            "method": method,
            "threads": threads,
            "out": out,
            "workers": workers,
            "processes": processes,
        }
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        server_cpu = time.process_time()  # this process serves the site (threads)
        subprocess.run([sys.executable, __file__, "--child", json.dumps(cfg)], check=True, env=env)
        server_cpu = time.process_time() - server_cpu
        with open(out, encoding="utf-8") as fh:
            result = json.load(fh)
        result["server_cpu"] = server_cpu
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1900, help="articles (pages ~ articles x 1.05)")
    parser.add_argument("--method", default=None, help="SST_METHOD (default: 'default', else 'cetd')")
    parser.add_argument("--threads", type=int, default=2, help="SST_THREADS")
    parser.add_argument(
        "--workers",
        default="process",
        choices=["process", "thread", "both"],
        help="SST_WORKERS; 'both' crawls once with each, after the plain crawl",
    )
    parser.add_argument("--processes", type=int, default=0, help="SST_PROCESSES (0: its default)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    from sst_cleaner import available_methods
    from sst_cleaner.tools.demo import DemoServer, DemoSite

    method = args.method or ("default" if "default" in available_methods() else "cetd")
    site = DemoSite(seed=1, n_articles=args.articles)
    modes = ["process", "thread"] if args.workers == "both" else [args.workers]
    print(
        f"site: {len(site.paths)} HTML pages; method {method}; SST_WORKERS {', '.join(modes)}; "
        f"SST_THREADS {args.threads}; SST_PROCESSES {args.processes or 'default'}; "
        f"{os.cpu_count()} CPUs"
    )
    with DemoServer(site) as server:
        plain = run(server.url, False, method, args.threads)
        cleaned = {mode: run(server.url, True, method, args.threads, mode, args.processes) for mode in modes}
    rate = lambda r: r["pages"] / r["seconds"] if r["seconds"] else 0.0  # noqa: E731
    p = rate(plain)

    def cpu(r: dict) -> str:
        n = max(1, r["pages"])
        return (
            f"CPU ms/page: crawl process {1000 * r['cpu'] / n:.1f} (reactor thread "
            f"{1000 * r['reactor_cpu'] / n:.1f}), worker processes "
            f"{1000 * r['worker_cpu'] / n:.1f}, server {1000 * r['server_cpu'] / n:.1f}"
        )

    print(f"without sst-cleaner: {plain['pages']} pages in {plain['seconds']:.1f}s = {p:.1f} pages/s")
    print(f"    {cpu(plain)}")
    for mode, res in cleaned.items():
        c = rate(res)
        sst = res["sst"]
        print(
            f"with sst-cleaner ({mode + 'es' if mode == 'process' else mode + 's'}): {res['pages']} pages "
            f"in {res['seconds']:.1f}s = {c:.1f} pages/s ({sst.get('sst/items_cleaned', 0)} items "
            f"cleaned, {sst.get('sst/models_built', 0)} model built, "
            f"{sst.get('sst/worker_processes', 0)} worker processes)"
        )
        print(f"    {cpu(res)}")
        print(f"ratio ({mode}): {c / p if p else 0.0:.2f} (target >= 0.8)")
        # what the ratio can be at most when the crawl process is the bottleneck (its CPU
        # per page against the plain crawl's), which holds on a quiet machine as long as
        # the workers fit on the other cores; unlike pages/s, it hardly moves with load
        ceiling = plain["cpu"] / plain["pages"] / (res["cpu"] / res["pages"]) if res["cpu"] else 0.0
        spare = (os.cpu_count() or 1) - 1
        fits = res["worker_cpu"] / res["pages"] * c <= spare if mode == "process" else True
        print(
            f"    CPU-bound ceiling of the ratio: {ceiling:.2f} (crawl-process CPU per page, plain / "
            f"with sst-cleaner){'' if fits else '; the workers need more than the other cores'}"
        )


if __name__ == "__main__":
    main()
