"""``SST_WORKER_INIT = "benchmarks.fleet_slowfit.slow_fits"``: the first site fit of each
worker process first sleeps ``$SST_BENCH_FIT_DELAY`` seconds.

For benchmarks/fleet_faults.py only: a fit of a small demo site takes a fraction of a
second, too short for a harness to kill the worker that holds a site's build lock while
it holds it. The pause stands in for a large site's fit. Only the first fit of a process
is slowed (the one the harness kills, and the takeover's), so the other sites' fits,
queued behind it in the same worker process, do not stretch every wait; refinements
(fitted in the crawl process's threads) are never slowed.
"""

from __future__ import annotations

import os
import time


def slow_fits() -> None:
    from sst_cleaner.engine._cleaner import SiteCleaner

    delay = float(os.environ.get("SST_BENCH_FIT_DELAY") or 0)
    if delay <= 0:
        return
    fit = SiteCleaner.fit
    slowed = []

    def slow_fit(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not slowed:
            slowed.append(True)
            time.sleep(delay)
        return fit(self, *args, **kwargs)

    SiteCleaner.fit = slow_fit  # type: ignore[method-assign]
