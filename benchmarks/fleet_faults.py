"""A fleet of separately started crawl workers under the faults an operator meets.

    python benchmarks/fleet_faults.py [--workers 3] [--sites 10] [--articles 30]
        [--scenarios clean,kill-worker,kill-builder,redis-restart,two-crawls]
        [--delay 0.7] [--sample 10] [--fit-delay 3] [--outage 10] [--repeat 1]

Serves ``--sites`` generated demo sites (one per loopback address, 127.0.0.1,
127.0.0.2...: one site per host, each with its own seed), starts a redis-server on a
fixed port, and per scenario starts ``--workers`` ``scrapy crawl fleet`` processes
(spiders/fleet.py: scrapy-redis's scheduler and duplicate filter, ``SST_MODEL_STORE =
"redis"``, ``SST_METHOD = "default"``), each on its own, as an operator would:

* ``clean``: no fault (the reference for the others);
* ``kill-worker``: SIGKILL one worker once 15% of the articles are parsed (while sites
  still gather their samples, so it dies holding items), restarted at once;
* ``kill-builder``: SIGKILL the worker that just claimed a site's build lock (the first
  fit of each worker process is made ``--fit-delay`` seconds longer through
  ``SST_WORKER_INIT = benchmarks.fleet_slowfit.slow_fits``, a stand-in for a large site,
  so the kill lands while it holds the lock), restarted at once;
* ``redis-restart``: redis-server SIGKILLed once 25% of the articles are parsed and
  started again, empty, ``--outage`` seconds later;
* ``two-crawls``: a second crawl (another spider name, ``SST_METHOD = "cetd"``, 2 workers)
  on the same Redis at the same time; then the first crawl again (1 worker, its queue and
  seen-set deleted, its models kept): it must load every model and fit none.

A restarted worker lingers (``-a grace=35``) so the fleet outlives the dead worker's
heartbeat: the pages it had parsed and not delivered are crawled again by a live worker
once the heartbeat is 15 s old (checked every 5 s).

Before them, as the reference for refinement, one process crawls the same sites with
Scrapy's own scheduler and no model store, and saves its models (``SST_MODEL_DIR``).

Prints per scenario: article pages, items delivered, missing (articles never delivered:
scrapy-redis's own losses, e.g. requests popped by a killed worker or a queue lost with
Redis, included), duplicates (and of them, items delivered more often than their page
was parsed: after an empty restart scrapy-redis's seen-set is gone and pages are crawled
twice), parsed but not delivered (items the spider yielded that
never came out of any worker's pipelines: what sst-cleaner must not lose), fits per site
(most, and the sites fitted more than once), takeovers, the longest wait of a worker for
another worker's build, refinement reached (pages in the shared models against the
pages in the single process's models) and, after the Redis restart, the seconds until
each worker shared again. Exit status 1 when a scenario misses what docs/operations.md
promises for it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from sst_cleaner.tools.demo import DemoServer, DemoSite  # noqa: E402

NAMESPACE = "sst_cleaner_examples:fleet"  # the project's and the spider's name (the default)


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


class Fleet:
    """The workers of one scenario: started, killed and restarted by tag, their files in
    ``workdir``."""

    def __init__(self, name: str, urls: list[str], redis_url: str, workdir: Path, args: argparse.Namespace):
        self.name, self.urls, self.redis_url, self.workdir, self.args = name, urls, redis_url, workdir, args
        self.procs: dict[str, subprocess.Popen] = {}
        self.killed: list[str] = []

    def file(self, tag: str, what: str) -> Path:
        return self.workdir / f"{self.name}-{tag}.{what}"

    def start(self, tag: str, grace: float = 2, spider: str = "", workers: int = 0, **settings: Any) -> None:
        base = {
            "REDIS_URL": self.redis_url,
            "SST_METHOD": "default",
            "SST_SAMPLE_PAGES": self.args.sample,
            "SST_REDIS_PREFIX": self.name,
            "SST_WORKERS": "process",
            "SST_PROCESSES": 1,
            "DOWNLOAD_DELAY": self.args.delay,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
            "LOG_LEVEL": "INFO",
        }
        base.update(settings)
        cmd = [sys.executable, "-m", "scrapy", "crawl", "fleet", "-a", "url=" + ",".join(self.urls)]
        cmd += ["-a", f"grace={grace}", "-a", "quiet=3", "-a", f"workers={workers}"]
        if spider:
            cmd += ["-a", f"name={spider}"]
        for what in ("stats", "parsed", "delivered"):
            cmd += ["-a", f"{what}_out={self.file(tag, what)}"]
        for key, value in base.items():
            cmd += ["-s", f"{key}={value}"]
        with open(self.file(tag, "log"), "w", encoding="utf-8") as log:
            self.procs[tag] = subprocess.Popen(
                cmd,
                cwd=str(ROOT),
                env=_env(SST_BENCH_FIT_DELAY=str(self.args.fit_delay)),
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

    def kill(self, tag: str) -> None:
        self.procs[tag].send_signal(signal.SIGKILL)
        self.procs[tag].wait()
        self.killed.append(tag)

    def wait(self, timeout: float = 900) -> None:
        deadline = time.monotonic() + timeout
        for tag, proc in self.procs.items():
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            if proc.returncode != 0 and tag not in self.killed:
                raise SystemExit(f"worker {self.name}-{tag} failed: see {self.file(tag, 'log')}")

    def lines(self, what: str) -> list[str]:
        out: list[str] = []
        for tag in self.procs:
            path = self.file(tag, what)
            if path.exists():
                out += [x for x in path.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
        return out

    def logs(self) -> dict[str, str]:
        return {tag: self.file(tag, "log").read_text(encoding="utf-8", errors="replace") for tag in self.procs}

    def stats(self) -> list[dict]:
        found = []
        for tag in self.procs:
            path = self.file(tag, "stats")
            if path.exists() and tag not in self.killed:
                found.append(json.loads(path.read_text(encoding="utf-8")))
        return found


def _wait_until(predicate: Callable[[], bool], fleet: Fleet, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"{fleet.name}: timed out")
        if all(p.poll() is not None for p in fleet.procs.values()):
            raise SystemExit(f"{fleet.name}: the workers ended before the fault")
        time.sleep(0.05)


def shared_pages(redis_url: str, prefix: str, method: str = "default") -> dict[str, int]:
    """model key -> pages of the fleet's models of ``method`` under ``prefix`` (any
    namespace; the other crawl of ``two-crawls`` keeps its cetd models beside them)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        return {
            key.decode(): int(client.hget(key, "pages") or 0)
            for key in client.scan_iter(f"{prefix}:*:model")
            if client.type(key) == b"hash" and client.hget(key, "method") == method.encode()
        }
    finally:
        client.close()


def score(fleet: Fleet, sites: list[DemoSite], ref_pages: int, prefix: Optional[str] = None) -> dict:
    articles = {(i, p) for i, site in enumerate(sites) for p in site.article_paths}

    def key(url: str) -> tuple:
        parts = urlsplit(url)
        return int((parts.hostname or "127.0.0.0").rsplit(".", 1)[1]) - 1, parts.path

    delivered = collections.Counter(fleet.lines("delivered"))
    parsed_count = collections.Counter(fleet.lines("parsed"))
    parsed = set(parsed_count)
    logs = fleet.logs()
    stats = fleet.stats()
    fits = collections.Counter(s for log in logs.values() for s in re.findall(r"model built for site (\S+) from", log))
    models = shared_pages(fleet.redis_url, prefix or fleet.name)
    return {
        "articles": len(articles),
        "items": sum(delivered.values()),
        "missing": len(articles - {key(u) for u in delivered}),
        "duplicates": sum(n - 1 for n in delivered.values()),
        # an item delivered more often than its page was parsed: sst-cleaner's doubling (a
        # page crawled twice, by scrapy-redis after it lost its seen-set, is parsed twice)
        "doubled": sum(max(0, n - parsed_count[u]) for u, n in delivered.items()),
        "parsed_not_delivered": len(parsed - set(delivered)),
        "fits": fits,
        "takeovers": sum(s.get("sst/redis/takeovers", 0) for s in stats),
        "recovered": sum(s.get("sst/redis/pages_recovered", 0) for s in stats),
        "max_wait": max([s.get("sst/redis/max_wait_seconds", 0.0) for s in stats] or [0.0]),
        "models": len(models),
        "model_pages": sum(models.values()),
        "refinement": sum(models.values()) / ref_pages if ref_pages else 0.0,
        "not_merged": sum(s.get("sst/redis/pages_not_merged", 0) for s in stats),
        "conflicts": sum(s.get("sst/redis/merge_conflicts", 0) for s in stats),
        "logs": logs,
        "stats": stats,
    }


def reference(urls: list[str], redis_url: str, workdir: Path, args: argparse.Namespace) -> int:
    """One process, Scrapy's own scheduler, no model store: pages in its saved models."""
    from sst_cleaner.engine._cleaner import SiteCleaner

    model_dir = workdir / "ref-models"
    stats = workdir / "ref.stats"
    cmd = [sys.executable, "-m", "scrapy", "crawl", "fleet", "-a", "url=" + ",".join(urls), "-a", "grace=0"]
    cmd += ["-a", f"stats_out={stats}"]
    settings = {
        "SCHEDULER": "scrapy.core.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
        "SST_MODEL_STORE": "",
        "SST_MODEL_DIR": str(model_dir),
        "SST_METHOD": "default",
        "SST_SAMPLE_PAGES": args.sample,
        "DOWNLOAD_DELAY": args.delay,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "REDIS_URL": redis_url,  # the spider's keep-alive only: its queue is Scrapy's
        "LOG_LEVEL": "WARNING",
    }
    for k, v in settings.items():
        cmd += ["-s", f"{k}={v}"]
    subprocess.run(cmd, cwd=str(ROOT), env=_env(), check=True, timeout=900, stdout=subprocess.DEVNULL)
    return sum(SiteCleaner.load(str(path)).n_pages for path in model_dir.iterdir() if path.is_file())


def progress(fleet: Fleet, fraction: float, total: int) -> Callable[[], bool]:
    return lambda: len(set(fleet.lines("parsed"))) >= fraction * total


def run_scenario(
    name: str,
    urls: list[str],
    sites: list[DemoSite],
    server: Any,
    workdir: Path,
    args: argparse.Namespace,
    ref: int,
    label: str = "",
) -> dict:
    """One run of scenario ``name``; ``label`` (default ``name``) names its files and
    Redis prefix, so repeated runs keep theirs apart."""
    label = label or name
    n, total = args.workers, sum(len(s.article_paths) for s in sites)
    _new_queues(server.url)
    fleet = Fleet(label, urls, server.url, workdir, args)
    extra: dict[str, Any] = {}
    if name == "kill-builder":
        extra["SST_WORKER_INIT"] = "benchmarks.fleet_slowfit.slow_fits"
    # after an empty restart the queue is gone and the workers would close at once: they
    # linger (a grace from their start past the outage and the reconnect backoff) so what
    # is measured is whether they share again, not whether the frontier survived (it does not)
    grace = 35 + args.outage if name == "redis-restart" else 2
    for i in range(n):
        fleet.start(f"w{i}", grace=grace, workers=n, **extra)
    result: dict[str, Any] = {}
    if name == "kill-worker":
        _wait_until(progress(fleet, 0.15, total), fleet)
        fleet.kill("w1")
        fleet.start("w1-restarted", grace=35, **extra)
    elif name == "kill-builder":
        claimed: dict[str, str] = {}

        def claim() -> bool:
            for tag in list(fleet.procs):
                m = re.search(r"building the model of site (\S+) for the fleet", fleet.file(tag, "log").read_text())
                if m:
                    claimed[tag] = m.group(1)
                    return True
            return False

        _wait_until(claim, fleet)
        tag, site = next(iter(claimed.items()))
        fleet.kill(tag)
        fleet.start(f"{tag}-restarted", grace=35, **extra)
        result["killed_builder_of"] = site
    elif name == "redis-restart":
        _wait_until(progress(fleet, 0.25, total), fleet)
        server.proc.kill()
        server.proc.wait()
        server.proc = None
        time.sleep(args.outage)
        server.start()
        result["restarted_at"] = time.time()
    elif name == "two-crawls":
        other = Fleet(label, urls, server.url, workdir, args)
        for i in range(2):
            other.start(f"b{i}", spider="fleetb", SST_METHOD="cetd")
        other.wait()
        result["other"] = score(other, sites, ref)
    fleet.wait()
    result.update(score(fleet, sites, ref))
    if name == "redis-restart":
        back = []
        for log in result["logs"].values():
            m = re.search(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d).*answers again: back to sharing", log, re.M)
            if m:
                back.append(time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) - result["restarted_at"])
        result["back_to_sharing"] = back
        result["down"] = sum(1 for s in result["stats"] if s.get("sst/redis/down"))
    if name == "two-crawls":
        before = shared_pages(server.url, label)
        _new_queues(server.url)  # a new crawl of the first spider: new queue, same models
        again = Fleet(f"{label}-again", urls, server.url, workdir, args)
        again.start("a", SST_REDIS_PREFIX=label)
        again.wait()
        stats = again.stats()[0]
        after = shared_pages(server.url, label)
        result["again_fits"] = stats.get("sst/models_built", 0)
        result["again_loaded"] = stats.get("sst/redis/models_loaded", 0)
        result["models_kept"] = set(before) <= set(after)
        result["models_by_method"] = _methods(server.url, label)
    return result


def _new_queues(redis_url: str) -> None:
    """Delete the spiders' scrapy-redis keys (queue, seen-set, keep-alive): a new crawl.
    The model store's keys stay (each scenario has a prefix of its own)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        for pattern in ("fleet:*", "fleetb:*"):
            for key in list(client.scan_iter(pattern)):
                client.delete(key)
    finally:
        client.close()


def _methods(redis_url: str, prefix: str) -> dict[str, int]:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        return dict(
            collections.Counter(
                (client.hget(k, "method") or b"?").decode() for k in client.scan_iter(f"{prefix}:*:model")
            )
        )
    finally:
        client.close()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--sites", type=int, default=10)
    parser.add_argument("--articles", type=int, default=30, help="articles per site")
    parser.add_argument("--scenarios", default="clean,kill-worker,kill-builder,redis-restart,two-crawls")
    parser.add_argument("--delay", type=float, default=0.7, help="DOWNLOAD_DELAY of each worker (per site)")
    parser.add_argument("--sample", type=int, default=10, help="SST_SAMPLE_PAGES")
    parser.add_argument("--fit-delay", type=float, default=3.0, help="seconds added to a first fit (kill-builder)")
    parser.add_argument("--outage", type=float, default=10.0, help="seconds Redis stays down (redis-restart)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each scenario")
    parser.add_argument("--keep", action="store_true", help="keep the workers' logs and files")
    args = parser.parse_args(argv)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]

    from redis_server import RedisServer, free_port

    sites = [DemoSite(seed=100 + i, n_articles=args.articles) for i in range(args.sites)]
    servers = [DemoServer(site, host=f"127.0.0.{i + 1}").start() for i, site in enumerate(sites)]
    urls = [s.url for s in servers]
    redis_server = RedisServer(port=free_port()).start()
    workdir = Path(tempfile.mkdtemp(prefix="sst-fleet-faults-"))
    failures: list[str] = []
    rows = []
    try:
        print(
            f"{args.sites} sites x {args.articles} articles, {args.workers} workers, SST_SAMPLE_PAGES={args.sample}, "
            f"DOWNLOAD_DELAY={args.delay}; Redis at {redis_server.url}; files in {workdir}",
            flush=True,
        )
        t0 = time.monotonic()
        ref = reference(urls, redis_server.url, workdir, args)
        print(f"single process: {ref} pages in its models ({time.monotonic() - t0:.0f} s)", flush=True)
        for name in scenarios:
            for run in range(1, args.repeat + 1):
                label = name if args.repeat == 1 else f"{name}-{run}"
                t0 = time.monotonic()
                r = run_scenario(name, urls, sites, redis_server, workdir, args, ref, label)
                r["seconds"] = time.monotonic() - t0
                rows.append((label, r))
                print(_line(label, r), flush=True)
                failures += [f"{label}: {why}" for why in _check(name, r, args)]
    finally:
        redis_server.stop()
        for server in servers:
            server.close()
        if not args.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(
        "| scenario | items / articles | missing | duplicates | parsed, not delivered | fits per site (most) "
        "| takeovers | pages recovered | longest wait s | refinement reached | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['items']} / {r['articles']} | {r['missing']} | {r['duplicates']} "
            f"| {r['parsed_not_delivered']} | {max(r['fits'].values() or [0])} | {r['takeovers']} | {r['recovered']} "
            f"| {r['max_wait']:.1f} | {r['refinement']:.0%} ({r['model_pages']} / {ref}) | {r['seconds']:.0f} |"
        )
    for why in failures:
        print("NOT AS EXPECTED:", why)
    return 1 if failures else 0


def _line(name: str, r: dict) -> str:
    more = ""
    if "back_to_sharing" in r:
        more = f"; {r['down']} workers went local, back to sharing after {[round(x) for x in r['back_to_sharing']]} s"
    if "killed_builder_of" in r:
        more = f"; killed the builder of {r['killed_builder_of']}"
    if "again_fits" in r:
        o = r["other"]
        more = (
            f"; other crawl (cetd): {o['items']} items, {o['missing']} missing, {o['duplicates']} duplicates; "
            f"models by method {r['models_by_method']}; first crawl again: {r['again_fits']} fits, "
            f"{r['again_loaded']} models loaded, models kept: {r['models_kept']}"
        )
    multi = {s: c for s, c in r["fits"].items() if c > 1}
    return (
        f"{name}: {r['items']} items / {r['articles']} articles, missing {r['missing']}, "
        f"duplicates {r['duplicates']} (delivered more often than parsed {r['doubled']}), "
        f"parsed not delivered {r['parsed_not_delivered']}, "
        f"fitted more than once {multi or 'none'}, takeovers {r['takeovers']}, recovered {r['recovered']}, "
        f"longest wait {r['max_wait']:.1f} s, refinement {r['model_pages']} pages in {r['models']} models, "
        f"{r['not_merged']} not merged, {r['conflicts']} conflicts{more}"
    )


def _check(name: str, r: dict, args: argparse.Namespace) -> list[str]:
    """What docs/operations.md promises for each scenario."""
    out = []
    if r["parsed_not_delivered"]:
        out.append(f"{r['parsed_not_delivered']} parsed pages not delivered")
    if (name != "redis-restart" and r["duplicates"]) or r["doubled"]:
        out.append(f"{r['duplicates']} duplicates, {r['doubled']} delivered more often than parsed")
    most = max(r["fits"].values() or [0])
    if name in ("clean", "two-crawls") and most > 1:
        out.append(f"a site fitted {most} times")
    if name in ("kill-worker", "kill-builder") and most > 2:
        out.append(f"a site fitted {most} times")
    if name == "redis-restart":
        if most > 2:
            out.append(f"a site fitted {most} times")
        if any(x > 30 for x in r["back_to_sharing"]) or len(r["back_to_sharing"]) < r["down"]:
            out.append(f"back to sharing after {r['back_to_sharing']} s")
    if name == "clean" and r["refinement"] < 0.8:
        out.append(f"refinement reached {r['refinement']:.0%}")
    if name == "two-crawls" and (r["again_fits"] or not r["models_kept"]):
        out.append("the first crawl's models were not reused")
    return out


if __name__ == "__main__":
    sys.exit(main())
