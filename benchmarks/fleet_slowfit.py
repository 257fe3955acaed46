"""``SST_WORKER_INIT = "benchmarks.fleet_slowfit.slow_fits"``: every site fit in a worker
process first sleeps ``$SST_BENCH_FIT_DELAY`` seconds.

For benchmarks/fleet_faults.py only: a fit of a small demo site takes a fraction of a
second, too short for a harness to kill the worker that holds a site's build lock while
it holds it. The pause stands in for a large site's fit; refinements (fitted in the
crawl process's threads) are not slowed.
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

    def slow_fit(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(delay)
        return fit(self, *args, **kwargs)

    SiteCleaner.fit = slow_fit  # type: ignore[method-assign]
