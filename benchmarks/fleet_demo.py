"""A fleet of crawl processes sharing one crawl and its site models, on this machine.

    python benchmarks/fleet_demo.py [--workers 1,2,4] [--articles 200] [--delay 0]

Starts a local redis-server (or uses ``--redis-url`` / ``$REDIS_URL``: its current
database is emptied before each run), serves the generated demo site, and for each N
runs N ``scrapy crawl fleet`` worker processes (spiders/fleet.py: scrapy-redis's
scheduler and duplicate filter, ``SST_MODEL_STORE = "redis"``) until the site is crawled.
First, as the reference, one process with Scrapy's own scheduler and no model store.

Prints per run: items per worker, items in total against the site's article pages and
duplicates, models fitted per site (each site's "model built" log lines across the
fleet: 1 means learnt once), mean F1 against the demo site's gold text and its
difference to the single-process crawl, crawl time (the first worker's first request to
the last worker's close, its ``quiet`` second included) and wall time (launch to the
last worker's exit, Python and Scrapy start-up included). ``--delay`` sets ``DOWNLOAD_DELAY`` per worker (one
request at a time per worker): a stand-in for a remote site's latency and politeness,
where a fleet's extra workers pay off on any number of cores.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from sst_cleaner.tools.demo import DemoServer, DemoSite, prf  # noqa: E402


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_fleet(
    n: int, site_url: str, redis_url: str, workdir: Path, args: argparse.Namespace, shared: bool = True
) -> dict:
    """N worker processes on one crawl; what each produced."""
    import redis

    if shared:
        redis.Redis.from_url(redis_url).flushdb()  # a new crawl: empty queue, seen-set, models
    settings = {
        "REDIS_URL": redis_url,
        "SST_SAMPLE_PAGES": args.sample,
        "LOG_LEVEL": "INFO",
        "DOWNLOAD_DELAY": args.delay,
    }
    if args.delay:
        settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = 1
    if not shared:  # the reference: Scrapy's own scheduler, no shared store
        settings.update(
            {
                "SCHEDULER": "scrapy.core.scheduler.Scheduler",
                "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
                "SST_MODEL_STORE": "",
            }
        )
    procs = []
    start = time.monotonic()
    for i in range(n):
        tag = f"{'fleet' if shared else 'single'}-{n}-{i}"
        cmd = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "fleet",
            "-a",
            f"url={site_url}",
            "-a",
            f"workers={n}",
            "-a",
            f"stats_out={workdir / (tag + '.stats.json')}",
            "-O",
            str(workdir / (tag + ".jsonl")),
        ]
        for key, value in settings.items():
            cmd += ["-s", f"{key}={value}"]
        log = open(workdir / (tag + ".log"), "w", encoding="utf-8")
        procs.append((tag, subprocess.Popen(cmd, cwd=str(ROOT), env=_env(), stdout=subprocess.DEVNULL, stderr=log)))
        log.close()
    for tag, proc in procs:
        if proc.wait(timeout=1800) != 0:
            raise SystemExit(f"worker {tag} failed: see {workdir / (tag + '.log')}")
    wall = time.monotonic() - start
    workers = []
    for tag, _ in procs:
        lines = (workdir / (tag + ".jsonl")).read_text(encoding="utf-8").splitlines()
        log = (workdir / (tag + ".log")).read_text(encoding="utf-8")
        workers.append(
            {
                "items": [json.loads(x) for x in lines if x.strip()],
                "stats": json.loads((workdir / (tag + ".stats.json")).read_text()),
                "built": re.findall(r"model built for site (\S+) from", log),
            }
        )
    return {"n": n, "wall": wall, "workers": workers}


def score(run: dict, site: DemoSite) -> dict:
    items = [item for w in run["workers"] for item in w["items"]]
    urls = collections.Counter(item["url"] for item in items)
    f1 = [prf(item.get("text") or "", site.gold(urlsplit(item["url"]).path))[2] for item in items]
    built = collections.Counter(s for w in run["workers"] for s in w["built"])
    return {
        "per_worker": [len(w["items"]) for w in run["workers"]],
        "items": len(items),
        "pages": len(site.article_paths),
        "duplicates": sum(c - 1 for c in urls.values()),
        "missing": len(set(site.article_paths) - {urlsplit(u).path for u in urls}),
        "built": dict(built),
        "loaded": sum(w["stats"].get("sst/redis/models_loaded", 0) for w in run["workers"]),
        "redis_down": sum(w["stats"].get("sst/redis/down", 0) for w in run["workers"]),
        "f1": mean(f1) if f1 else 0.0,
        "wall": run["wall"],
        # first worker sending its first request -> last worker closing (quiet period included)
        "crawl": max(w["stats"]["fleet/closed_at"] for w in run["workers"])
        - min(w["stats"]["fleet/started_at"] for w in run["workers"]),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4", help="fleet sizes to run (comma-separated)")
    parser.add_argument("--articles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=20, help="SST_SAMPLE_PAGES")
    parser.add_argument("--delay", type=float, default=0.0, help="DOWNLOAD_DELAY of each worker")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.workers.split(",") if x.strip()]

    from redis_server import RedisServer

    server = None if args.redis_url else RedisServer().start()
    redis_url = args.redis_url or server.url
    site = DemoSite(seed=args.seed, n_articles=args.articles)
    try:
        with DemoServer(site) as demo, tempfile.TemporaryDirectory(prefix="sst-fleet-") as tmp:
            print(
                f"demo site: {len(site.paths)} pages, {len(site.article_paths)} articles; "
                f"Redis at {redis_url}; SST_SAMPLE_PAGES={args.sample}; DOWNLOAD_DELAY={args.delay}"
            )
            ref = score(run_fleet(1, demo.url, redis_url, Path(tmp), args, shared=False), site)
            rows = [("single process (no Redis)", ref)]
            for n in sizes:
                rows.append((f"fleet of {n}", score(run_fleet(n, demo.url, redis_url, Path(tmp), args), site)))
    finally:
        if server is not None:
            server.stop()
    print()
    print(
        "| run | items per worker | items / article pages | duplicates | models fitted per site "
        "| fleet loads | F1 | F1 - single | crawl s | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        built = ", ".join(f"{k}: {v}" for k, v in sorted(r["built"].items())) or "none"
        print(
            f"| {name} | {r['per_worker']} | {r['items']} / {r['pages']} (missing {r['missing']}) "
            f"| {r['duplicates']} | {built} | {r['loaded']} | {r['f1']:.4f} | {r['f1'] - ref['f1']:+.4f} "
            f"| {r['crawl']:.1f} | {r['wall']:.1f} |"
        )
    bad = [
        name
        for name, r in rows[1:]
        if r["duplicates"] or r["missing"] or r["redis_down"] or any(v != 1 for v in r["built"].values())
    ]
    if bad:
        raise SystemExit(f"not as expected: {bad}")


if __name__ == "__main__":
    main()
