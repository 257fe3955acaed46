"""sst-cleaner: site-level main-content extraction for crawled web sites.

The core (this package minus the Scrapy modules) is framework-free:

    from sst_cleaner import SiteCleaner
    cleaner = SiteCleaner().fit(pages_of_one_site)
    print(cleaner.clean(html).text)

The Scrapy layer (``sst_cleaner.middleware``, ``sst_cleaner.pipeline``,
``sst_cleaner.Addon``) is imported lazily so the core never imports Scrapy.
"""
from .cleaner import SiteCleaner, available_methods, register_method
from .model_io import ModelFormatError
from .result import Block, CleanResult

__version__ = "0.1.0"
__all__ = ["SiteCleaner", "CleanResult", "Block", "ModelFormatError", "available_methods",
           "register_method", "Addon", "__version__"]


def __getattr__(name):  # lazy: the Scrapy add-on pulls in Scrapy
    if name == "Addon":
        from .addon import Addon

        return Addon
    raise AttributeError(name)
