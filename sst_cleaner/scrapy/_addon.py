"""The Scrapy add-on: ``ADDONS = {"sst_cleaner.Addon": 0}`` turns everything on."""

from __future__ import annotations

from typing import Any

from scrapy.exceptions import NotConfigured

from sst_cleaner.scrapy._settings import load_config

#: spider middleware order: low = close to the engine, so it holds the items that the
#: spider's other middlewares let through (built-ins sit at 500-900)
MIDDLEWARE_PRIORITY = 50
#: pipeline order: early, so later pipelines (validation, storage) see the clean text
PIPELINE_PRIORITY = 100


class Addon:
    """Enables the sst-cleaner spider middleware and item pipeline."""

    def __init__(self, crawler: Any = None):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> "Addon":
        return cls(crawler)

    def update_settings(self, settings: Any) -> None:
        if not load_config(settings).enabled:
            raise NotConfigured("sst-cleaner is disabled (SST_ENABLED = False)")
        settings["SPIDER_MIDDLEWARES"]["sst_cleaner.scrapy.SSTSpiderMiddleware"] = MIDDLEWARE_PRIORITY
        settings["ITEM_PIPELINES"]["sst_cleaner.scrapy.SSTPipeline"] = PIPELINE_PRIORITY
