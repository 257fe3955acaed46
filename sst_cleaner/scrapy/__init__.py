"""The Scrapy layer: the add-on, the spider middleware that holds each site's items
until its model is learnt, the item pipeline that writes the cleaned content, the
model store and its worker processes, the Redis fleet store, and the informative link
extractor. Enable it with ``ADDONS = {"sst_cleaner.Addon": 0}``.

Names are imported on first use: a worker process that only cleans pages never loads
Scrapy or Twisted.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Addon": "_addon",
    "SSTSpiderMiddleware": "_middleware",
    "SSTPipeline": "_pipeline",
    "InformativeLinkExtractor": "_linkextractor",
    "SSTConfig": "_settings",
    "load_config": "_settings",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
