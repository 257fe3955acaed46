#!/usr/bin/env python3
"""What a page's trip to its worker process costs the crawl process (a benchmark, not a test).

Runs the same small load in two checkouts, in turn, each in a fresh process: a Twisted
reactor that is busy ``--busy`` ms of CPU per page (standing for the crawl's own work of a
response) sends ``--pages`` sites-dev pages to one worker process to be cleaned page by
page, ``--window`` pages in flight, and prints for each checkout the CPU the crawl
process spent per page beyond its own busy work (the cost of sending the page and
receiving the answer) and the wall time per page, then the ratio new / old.

    python benchmarks/worker_calls.py OLD NEW [--pages 300] [--window 16] [--busy 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "sites-dev"


def child(cfg: dict) -> None:
    import time

    from twisted.internet import reactor

    from sst_cleaner.scrapy._dispatch import ReactorInbox
    from sst_cleaner.scrapy._workers import WorkerPool

    files = sorted(Path(cfg["corpus"]).rglob("*.html"))[:50]
    bodies = [f.read_bytes() for f in files]
    n, window, busy = cfg["pages"], cfg["window"], cfg["busy"] / 1000
    inbox = ReactorInbox()
    state = {"sent": 0, "done": 0, "busy": 0.0}
    takes_reactor = "reactor" in WorkerPool.__init__.__code__.co_varnames
    pool = WorkerPool(1, "default", {}, reactor=reactor) if takes_reactor else WorkerPool(1, "default", {})

    def work() -> None:
        start = time.thread_time()
        while time.thread_time() - start < busy:
            pass
        state["busy"] += time.thread_time() - start

    def send() -> None:
        if state["sent"] < n:
            i = state["sent"]
            state["sent"] += 1
            call = pool.submit(0, "clean", "", f"http://bench/{i}", bodies[i % len(bodies)], "utf-8", False, False)
            inbox.deferred(call).addCallback(answered)
            reactor.callLater(0, work)

    def answered(_: object) -> None:
        state["done"] += 1
        if state["done"] < n:
            send()
            return
        cpu = time.process_time() - state["cpu"] - state["busy"]
        print(json.dumps({"cpu_ms": cpu / n * 1000, "wall_ms": (time.time() - state["wall"]) / n * 1000}))
        pool.shutdown(wait=False)
        reactor.stop()

    def started(_: object) -> None:
        state["cpu"], state["wall"] = time.process_time(), time.time()
        for _ in range(window):
            send()

    reactor.callWhenRunning(lambda: inbox.deferred(pool.start_first()).addCallback(started))
    reactor.run()


def run(checkout: str, cfg: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(checkout).resolve()))
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(cfg)], env=env, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", nargs="?", help="checkout measured first")
    ap.add_argument("new", nargs="?", help="checkout set against it")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--busy", type=float, default=8.0, help="the reactor's own CPU ms per page")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if not (args.old and args.new):
        ap.error("give two checkouts: OLD NEW")
    cfg = {"pages": args.pages, "window": args.window, "busy": args.busy, "corpus": args.corpus}
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
            res = run(getattr(args, name), cfg)
            runs[name].append(res)
            cpu, wall = res["cpu_ms"], res["wall_ms"]
            print(f"round {r + 1} {name}: {cpu:.3f} CPU ms/page beyond the busy work, {wall:.2f} wall ms/page")
    for key, what in (("cpu_ms", "crawl-process CPU per page for the calls"), ("wall_ms", "wall per page")):
        old = statistics.median(r[key] for r in runs["old"])
        new = statistics.median(r[key] for r in runs["new"])
        print(f"{what}: old {old:.3f} ms, new {new:.3f} ms, new / old {new / old:.2f} (medians of {args.rounds})")


if __name__ == "__main__":
    main()
