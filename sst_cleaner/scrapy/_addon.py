"""The Scrapy add-on: ``ADDONS = {"sst_cleaner.Addon": 0}`` turns everything on."""

from __future__ import annotations

from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from sst_cleaner.scrapy._settings import enabled

MIDDLEWARE = "sst_cleaner.scrapy.SSTSpiderMiddleware"
PIPELINE = "sst_cleaner.scrapy.SSTPipeline"
#: spider middleware order: low = close to the engine, so it holds the items that the
#: spider's other middlewares let through (built-ins sit at 500-900)
MIDDLEWARE_PRIORITY = 50
#: pipeline order: early, so later pipelines (validation, storage) see the clean text
PIPELINE_PRIORITY = 100


class Addon:
    """Enables the sst-cleaner spider middleware and item pipeline, unless the project,
    spider or command line already lists them: their order (or None) is kept."""

    def __init__(self, crawler: Any = None):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> "Addon":
        return cls(crawler)

    def update_settings(self, settings: Any) -> None:
        # only SST_ENABLED is read here: a bad value of another setting is reported by the
        # components, as one line (see BadSettings), not by a traceback from the add-on
        if not enabled(settings):
            raise NotConfigured("sst-cleaner is disabled (SST_ENABLED = False)")
        _add_component(settings, "SPIDER_MIDDLEWARES", MIDDLEWARE, MIDDLEWARE_PRIORITY)
        _add_component(settings, "ITEM_PIPELINES", PIPELINE, PIPELINE_PRIORITY)


def _add_component(settings: Any, name: str, path: str, order: int) -> None:
    """Lists ``path`` in the component dict ``name`` at ``order``, with the add-on priority,
    unless the user listed the component already (under any import path or as the class)."""
    components = settings[name]
    if any(_is_component(key, path) for key in components):
        return
    if isinstance(components, BaseSettings):
        components.set(path, order, "addon")
    else:
        components[path] = order


def _is_component(key: Any, path: str) -> bool:
    """Whether a key of a component dict names the class at ``path``."""
    if key == path:
        return True
    class_name = path.rsplit(".", 1)[1]
    key_name = key if isinstance(key, str) else getattr(key, "__name__", "")
    if key_name.rsplit(".", 1)[-1] != class_name:
        return False  # only a namesake can be ours: the others' modules are left unimported
    try:
        return load_object(key) is load_object(path)
    except (ImportError, NameError, ValueError):
        return False  # not importable: not ours, and Scrapy reports it when it loads the list
