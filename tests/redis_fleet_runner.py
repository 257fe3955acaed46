"""Subprocess entry point of tests/test_redis_fleet.py (holds no tests itself).

``python tests/redis_fleet_runner.py CONFIG.json``: one crawl of tests/test_scrapy_runner.py
(same spider, items and record), plus what the fleet tests need in the crawl's process:
``"slow_fit": SECONDS`` registers method ``slowfit`` (CETD whose fit sleeps that long
first, so a test can kill the process while it holds a site's build lock: the sleep is
this process's, not a method parameter, so crawls with other sleeps share one model
identity); ``"spider_name"`` renames the spider (another spider, another namespace).

:class:`StallPipeline` is for ``scrapy crawl fleet`` workers: listed in ``ITEM_PIPELINES``
after sst-cleaner's, it never lets an item through (a storage that hangs), so a worker
killed then dies with every item it parsed still in its pipelines; :class:`CopyPipeline`
gives back copies.
"""

from __future__ import annotations

import sys
import time


class StallPipeline:
    async def process_item(self, item, spider=None):
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet.defer import Deferred

        await maybe_deferred_to_future(Deferred())  # never fired: no item_scraped
        return item


class CopyPipeline:
    """Gives back a copy of each item, as a pipeline may: Scrapy's item_scraped then
    carries another object than the one the spider yielded."""

    def process_item(self, item, spider=None):
        return dict(item)


def register_slow_fit_method(seconds: float) -> None:
    from sst_cleaner.engine._registry import register_method
    from sst_cleaner.engine.methods.cetd import CETDMethod

    @register_method("slowfit")
    class SlowFitMethod(CETDMethod):
        def fit(self, pages: list) -> None:
            time.sleep(seconds)
            super().fit(pages)


if __name__ == "__main__":
    import json

    import test_scrapy_runner

    with open(sys.argv[1], encoding="utf-8") as fh:
        cfg = json.load(fh)
    if cfg.get("slow_fit") is not None:
        register_slow_fit_method(float(cfg["slow_fit"]))
    if cfg.get("spider_name"):
        test_scrapy_runner.ProbeSpider.name = cfg["spider_name"]
    test_scrapy_runner.main(sys.argv[1])
