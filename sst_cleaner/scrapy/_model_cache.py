"""The site models a worker process keeps in memory: at most ``max_models``, the least
recently used written to disk and read back when their site comes up again.

A site model holds megabytes of Python objects (its sentence and feature tables), and a
crawl may meet tens of thousands of sites, most of them never seen again after a few
pages; keeping every model would make memory grow with the number of sites. Evicted
models are saved as ordinary model files (``SST_MODEL_DIR`` when set, where they would be
saved at the close anyway, else a temporary folder of the crawl) and read back through
the bounded loader like any model file.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from typing import Any, Callable, Optional

logger = logging.getLogger(__name__)


class ModelCache:
    """``site -> SiteCleaner``, LRU-bounded (``max_models``; 0 keeps every model),
    spilling to ``folder``."""

    def __init__(self, max_models: int, folder: Optional[str], load: Callable[[str], Any]):
        self.max_models = max(0, int(max_models))
        self.folder = folder
        self._load = load
        self._models: "OrderedDict[str, Any]" = OrderedDict()
        self._spilled: dict[str, str] = {}  # site -> file of its evicted model
        #: models written to disk / read back / lost (could not be written)
        self.evicted = self.reloaded = self.lost = 0

    def __len__(self) -> int:
        return len(self._models)

    def path(self, site: str) -> str:
        from sst_cleaner.scrapy._site_keys import model_filename

        return os.path.join(self.folder or ".", model_filename(site))

    def get(self, site: str) -> Any:
        """The site's model (read back from disk if it was evicted), or None."""
        model = self._models.get(site)
        if model is not None:
            self._models.move_to_end(site)
            return model
        path = self._spilled.pop(site, None)
        if path is None:
            return None
        try:
            model = self._load(path)
        except Exception as exc:  # a file that went bad: the site cleans page by page
            logger.warning("sst: could not read back the evicted model of site %s from %s: %s", site, path, exc)
            self.lost += 1
            return None
        self.reloaded += 1
        self.put(site, model)
        return model

    def put(self, site: str, model: Any) -> None:
        self._spilled.pop(site, None)
        self._models[site] = model
        self._models.move_to_end(site)
        while self.max_models and len(self._models) > self.max_models:
            old_site, old = self._models.popitem(last=False)
            self._spill(old_site, old)

    def _spill(self, site: str, model: Any) -> None:
        if not self.folder:
            self.lost += 1  # nowhere to write: the site cleans page by page from now on
            return
        path = self.path(site)
        try:
            model.save(path)
        except Exception:
            logger.exception("sst: could not write the evicted model of site %s", site)
            self.lost += 1
            return
        self._spilled[site] = path
        self.evicted += 1

    def save(self, site: str, path: str) -> bool:
        """Write the site's model to ``path`` (at the close); False if it has none."""
        model = self._models.get(site)
        if model is None:
            spilled = self._spilled.get(site)
            if spilled is None:
                return False
            if os.path.abspath(spilled) == os.path.abspath(path):
                return True  # evicted into the model folder: already there
            model = self.get(site)
            if model is None:
                return False
        model.save(path)
        return True
