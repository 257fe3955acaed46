"""Subprocess entry point of tests/test_redis_fleet.py (holds no tests itself).

``python tests/redis_fleet_runner.py CONFIG.json``: one crawl of tests/test_scrapy_runner.py
(same spider, items and record), plus what the fleet tests need in the crawl's process:
``"slow_fit": true`` registers method ``slowfit`` (CETD whose fit first creates the file
``fit_started`` names, then waits until the file ``fit_until`` names exists: a test kills
the process while it holds a site's build lock, whatever the machine's load).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any


def register_slow_fit_method() -> None:
    from sst_cleaner.engine._registry import register_method
    from sst_cleaner.engine.methods.cetd import CETDMethod

    @register_method("slowfit")
    class SlowFitMethod(CETDMethod):
        def __init__(self, fit_started: str = "", fit_until: str = "", **params: Any):
            super().__init__(**params)
            self.fit_started = fit_started
            self.fit_until = fit_until

        def fit(self, pages: list) -> None:
            if self.fit_started:
                Path(self.fit_started).touch()
            # a cap only against a test that forgot its process: the test kills it first
            deadline = time.monotonic() + 900
            while self.fit_until and not Path(self.fit_until).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            super().fit(pages)


if __name__ == "__main__":
    import json

    import test_scrapy_runner

    with open(sys.argv[1], encoding="utf-8") as fh:
        if json.load(fh).get("slow_fit") is not None:
            register_slow_fit_method()
    test_scrapy_runner.main(sys.argv[1])
