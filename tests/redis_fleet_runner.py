"""Subprocess entry point of tests/test_redis_fleet.py (holds no tests itself).

``python tests/redis_fleet_runner.py CONFIG.json``: one crawl of tests/test_scrapy_runner.py
(same spider, items and record), plus what the fleet tests need in the crawl's process:
``"slow_fit": SECONDS`` registers method ``slowfit`` (CETD whose fit sleeps that long
first, so a test can kill the process while it holds a site's build lock).
"""

from __future__ import annotations

import sys
import time
from typing import Any


def register_slow_fit_method() -> None:
    from sst_cleaner.engine._registry import register_method
    from sst_cleaner.engine.methods.cetd import CETDMethod

    @register_method("slowfit")
    class SlowFitMethod(CETDMethod):
        def __init__(self, fit_sleep: float = 0.0, **params: Any):
            super().__init__(**params)
            self.fit_sleep = float(fit_sleep)

        def fit(self, pages: list) -> None:
            time.sleep(self.fit_sleep)
            super().fit(pages)


if __name__ == "__main__":
    import json

    import test_scrapy_runner

    with open(sys.argv[1], encoding="utf-8") as fh:
        if json.load(fh).get("slow_fit") is not None:
            register_slow_fit_method()
    test_scrapy_runner.main(sys.argv[1])
