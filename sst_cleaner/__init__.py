"""sst-cleaner: site-level main-content extraction for crawled web sites.

The engine (:mod:`sst_cleaner.engine`) is framework-free:

    from sst_cleaner import SiteCleaner
    cleaner = SiteCleaner().fit(pages_of_one_site)
    print(cleaner.clean(html).text)
    sst_cleaner.explain(pages_of_one_site, "report.html")  # why each block was kept or not

The Scrapy layer (:mod:`sst_cleaner.scrapy`: ``Addon``, ``SSTSpiderMiddleware``,
``SSTPipeline``, ``InformativeLinkExtractor``) is imported on first use, so using the
engine never imports Scrapy.
"""

from __future__ import annotations

from typing import Any

from sst_cleaner._version import __version__
from sst_cleaner.engine import (
    ENGINE_BUILD,
    Block,
    CleanResult,
    Limits,
    ModelFormatError,
    PageExplanation,
    SiteCleaner,
    available_methods,
    explain,
    register_method,
)

_SCRAPY = ("Addon", "SSTSpiderMiddleware", "SSTPipeline", "InformativeLinkExtractor")
__all__ = [
    "ENGINE_BUILD",
    "Block",
    "CleanResult",
    "Limits",
    "ModelFormatError",
    "PageExplanation",
    "SiteCleaner",
    "__version__",
    "available_methods",
    "explain",
    "register_method",
    *_SCRAPY,
]


def __getattr__(name: str) -> Any:  # the Scrapy layer pulls in Scrapy: only on first use
    if name in _SCRAPY:
        from sst_cleaner import scrapy as layer

        return getattr(layer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
