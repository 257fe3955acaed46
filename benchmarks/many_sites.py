#!/usr/bin/env python3
"""Memory under many sites (a benchmark, not a test).

Serves a generated web of many small sites on 127.0.0.1 (default 2,000 sites of 1 index +
4 article pages, each site with its own template) and crawls all of it with the
sst-cleaner middleware and pipeline, in a fresh process. Sites are told apart by a path
prefix (``/s/<n>/...``) through an ``SST_SITE_KEY`` callable, so one loopback server
stands in for thousands of hosts.

    python benchmarks/many_sites.py [--sites 2000] [--pages 4] [--max-held-bytes 4194304]
                                    [--sample 20] [--method cetd] [--max-models 1000]
                                    [--processes 1]

With the default ``--sample 20`` no site ever has enough pages for a model: every item is
held until the byte cap evicts its site or the crawl ends, the worst case for the hold.
It prints the crawl process's peak RSS (``resource.getrusage``, the whole Python process:
Scrapy, its queues and the models included), ``sst/peak_held_bytes`` against the
configured ``SST_MAX_HELD_BYTES``, and checks that every yielded item was scraped exactly
once. With ``--sample 3`` every site reaches a model: the peak RSS of the largest worker
process, against ``--max-models`` (SST_MAX_MODELS), shows what keeping models costs.
Exit status 1 if the held bytes ever went over the bound or an item was lost.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_WORDS = (
    "river harbour council market winter garden station bridge library museum orchard "
    "festival engineer teacher farmer painter season archive lantern valley ferry mill "
    "quarry signal meadow tower canal theatre bakery workshop ledger survey"
).split()
_VERBS = "opened repaired surveyed restored measured painted crossed counted mapped rebuilt".split()


# -- the generated web --------------------------------------------------------------------


def site_key(url: str) -> str:
    """SST_SITE_KEY: ``/s/<n>/...`` is site ``s<n>`` (one loopback host, many sites)."""
    parts = urlsplit(url).path.split("/")
    return f"s{parts[2]}" if len(parts) > 2 and parts[1] == "s" else "other"


def _sentence(rng: random.Random) -> str:
    w = [rng.choice(_WORDS) for _ in range(rng.randint(6, 12))]
    return f"The {w[0]} {rng.choice(_VERBS)} the {w[1]} of {' '.join(w[2:])}.".capitalize()


def render(path: str, n_sites: int, n_pages: int) -> Optional[str]:
    """The page at ``path`` (None: not found). Deterministic: a function of the path."""
    parts = path.strip("/").split("/")
    if len(parts) < 2 or parts[0] != "s" or not parts[1].isdigit() or int(parts[1]) >= n_sites:
        return None
    n = int(parts[1])
    page = parts[2] if len(parts) > 2 else ""
    if page and not (
        page.startswith("p") and page.endswith(".html") and page[1:-5].isdigit() and int(page[1:-5]) < n_pages
    ):
        return None
    srng = random.Random(f"site:{n}")  # the site's template
    prng = random.Random(f"page:{path}")
    cls = f"t{srng.randrange(10**6)}"
    name = " ".join(srng.choice(_WORDS).title() for _ in range(2)) + " Gazette"
    nav = "".join(
        f'<li><a href="/s/{n}/p{k}.html">{html.escape(srng.choice(_WORDS).title())}</a></li>' for k in range(n_pages)
    )
    side = "".join(f"<li>{html.escape(_sentence(srng))}</li>" for _ in range(3))
    footer = html.escape(_sentence(srng))
    if page:
        title = html.escape(_sentence(prng)[:60])
        body = "".join(
            f"<p>{html.escape(' '.join(_sentence(prng) for _ in range(prng.randint(2, 4))))}</p>"
            for _ in range(prng.randint(3, 6))
        )
    else:
        title = "Latest"
        body = "<ul>" + "".join(f'<li><a href="/s/{n}/p{k}.html">Story {k}</a></li>' for k in range(n_pages)) + "</ul>"
    return (
        f"<!DOCTYPE html><html><head><title>{title} | {html.escape(name)}</title></head>"
        f'<body><div class="{cls}-top"><h2>{html.escape(name)}</h2><ul class="{cls}-nav">{nav}</ul></div>'
        f'<div class="{cls}-main"><h1>{title}</h1><div class="{cls}-body">{body}</div></div>'
        f'<div class="{cls}-side"><ul>{side}</ul></div>'
        f'<div class="{cls}-foot"><p>{footer}</p></div></body></html>'
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:  # noqa: N802
        page = render(urlsplit(self.path).path, self.server.n_sites, self.server.n_pages)  # type: ignore[attr-defined]
        status = 200 if page is not None else 404
        body = (page or "<html><body>not found</body></html>").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


# -- the crawl (child process) ------------------------------------------------------------


def child(cfg: dict) -> None:
    """One crawl in its own process, so its RSS is the crawl's alone (the server is in
    the parent)."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    rss_start_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    yielded: list[str] = []
    scraped: list[str] = []

    class ManySitesSpider(scrapy.Spider):
        name = "many_sites"

        async def start(self):
            for n in range(cfg["sites"]):
                yield scrapy.Request(f"{cfg['url']}s/{n}/")

        def parse(self, response):
            yielded.append(response.url)
            yield {"id": response.url}
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse)

    def on_scraped(item: Any, **kwargs: Any) -> None:
        scraped.append(item["id"])

    settings = {
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        "ADDONS": {"sst_cleaner.Addon": 0},
        "SST_METHOD": cfg["method"],
        "SST_SITE_KEY": site_key,
        "SST_SAMPLE_PAGES": cfg["sample"],
        "SST_MAX_HELD_BYTES": cfg["max_held_bytes"],
        "SST_THREADS": 2,
        "SST_MAX_MODELS": cfg["max_models"],
        "SST_PROCESSES": cfg["processes"],
    }
    worker_peak = [0.0]
    stop_sampling = threading.Event()

    def sample_workers() -> None:
        # the worker processes' peak RSS (VmHWM), read while they run (Linux /proc)
        import multiprocessing

        while not stop_sampling.wait(0.5):
            for child_proc in multiprocessing.active_children():
                try:
                    with open(f"/proc/{child_proc.pid}/status", encoding="ascii") as fh:
                        for line in fh:
                            if line.startswith("VmHWM:"):
                                worker_peak[0] = max(worker_peak[0], int(line.split()[1]) / 1024)
                except OSError:
                    pass

    sampler = threading.Thread(target=sample_workers, daemon=True)
    sampler.start()
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(ManySitesSpider)
    crawler.signals.connect(on_scraped, signal=signals.item_scraped)
    process.crawl(crawler)
    process.start()
    stop_sampling.set()
    stats = crawler.stats.get_stats()
    result = {
        "rss_start_mb": rss_start_kb / 1024,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_rss_peak_mb": worker_peak[0],
        "pages": stats.get("response_received_count", 0),
        "seconds": stats.get("elapsed_time_seconds", 0.0),
        "finish_reason": stats.get("finish_reason"),
        "yielded": len(yielded),
        "scraped": len(scraped),
        "exactly_once": sorted(yielded) == sorted(scraped) and len(set(scraped)) == len(scraped),
        "sst": {k: v for k, v in stats.items() if k.startswith("sst/")},
    }
    with open(cfg["out"], "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=str)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=4, help="article pages per site (plus its index)")
    parser.add_argument("--max-held-bytes", type=int, default=4 * 1024 * 1024, help="SST_MAX_HELD_BYTES")
    parser.add_argument("--sample", type=int, default=20, help="SST_SAMPLE_PAGES")
    parser.add_argument("--method", default="cetd", help="SST_METHOD")
    parser.add_argument("--max-models", type=int, default=1000, help="SST_MAX_MODELS (0: keep every model)")
    parser.add_argument("--processes", type=int, default=1, help="SST_PROCESSES")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return 0

    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.n_sites, httpd.n_pages = args.sites, args.pages  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    web_bytes = sum(
        len(render(f"/s/{n}/{p}", args.sites, args.pages).encode("utf-8"))
        for n in range(args.sites)
        for p in [""] + [f"p{k}.html" for k in range(args.pages)]
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            cfg = {
                "url": url,
                "sites": args.sites,
                "method": args.method,
                "sample": args.sample,
                "max_held_bytes": args.max_held_bytes,
                "out": out,
                "max_models": args.max_models,
                "processes": args.processes,
            }
            start = time.monotonic()
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            subprocess.run([sys.executable, __file__, "--child", json.dumps(cfg)], check=True, env=env)
            wall = time.monotonic() - start
            with open(out, encoding="utf-8") as fh:
                r = json.load(fh)
    finally:
        httpd.shutdown()
        httpd.server_close()

    sst = r["sst"]
    bound = args.max_held_bytes
    peak = sst.get("sst/peak_held_bytes", 0)
    print(
        f"web: {args.sites} sites x {args.pages + 1} pages, {web_bytes / 2**20:.1f} MiB of HTML; "
        f"method {args.method}, SST_SAMPLE_PAGES {args.sample}"
    )
    print(
        f"crawl: {r['pages']} pages in {r['seconds']:.1f} s ({wall:.1f} s wall), finish {r['finish_reason']}; "
        f"items yielded {r['yielded']}, scraped {r['scraped']}, exactly once: {r['exactly_once']}"
    )
    print(
        f"peak RSS of the crawl process: {r['rss_peak_mb']:.0f} MiB (after imports: {r['rss_start_mb']:.0f} MiB); "
        f"of the largest worker process: {r['workers_rss_peak_mb']:.0f} MiB "
        f"(SST_MAX_MODELS {args.max_models}, SST_PROCESSES {args.processes})"
    )
    print(f"sst/peak_held_bytes {peak:,} vs SST_MAX_HELD_BYTES {bound:,} ({100 * peak / bound:.0f}% of the bound)")
    keys = (
        "peak_held_items",
        "items_held",
        "items_released",
        "evictions",
        "models_built",
        "fallback_cleans",
        "items_cleaned",
        "items_flushed_at_close",
        "flushes",
        "local_models_evicted",
        "local_models_reloaded",
        "peak_local_models",
        "errors",
    )
    print("  " + ", ".join(f"{k} {sst.get('sst/' + k, 0)}" for k in keys))
    ok = peak <= bound and r["exactly_once"] and r["yielded"] > 0
    if not ok:
        print("FAILED: " + ("held bytes went over the bound" if peak > bound else "items lost or duplicated"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
