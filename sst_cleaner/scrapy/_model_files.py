"""Site models on disk (``SST_MODEL_DIR``): loading and saving them.

A model file is untrusted input: it is read in a worker thread, bounded and checked
(:mod:`sst_cleaner.engine._model_io`), and anything wrong with it (a directory,
unreadable, forged, over the size cap, another method's) makes the site build a new
model instead of failing the crawl.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Optional

from sst_cleaner.engine._cleaner import SiteCleaner
from sst_cleaner.scrapy._site_keys import model_filename

if TYPE_CHECKING:
    import threading

    from sst_cleaner.scrapy._dispatch import Dispatcher
    from sst_cleaner.scrapy._local_models import LocalModels
    from sst_cleaner.scrapy._settings import SSTConfig

# the store's log lines keep the logger name they were always written under (Scrapy
# prints it, and a crawl's logging settings may select it)
logger = logging.getLogger("sst_cleaner.scrapy._site_models")


class ModelFiles:
    """The model files of one crawl's sites: read once per site, saved at the close.

    ``models`` is the store's local model copies (a loaded model is put there),
    ``dispatch`` runs the reads and gives loaded models to the sites' workers,
    ``inc(name)`` counts a ``sst/`` stat and ``lock(site)`` is the site's lock, held
    while a thread-mode model is saved.
    """

    def __init__(
        self,
        config: SSTConfig,
        models: LocalModels,
        dispatch: Dispatcher,
        inc: Callable[..., None],
        lock: Callable[[str], threading.Lock],
    ):
        self.config = config
        self._models = models
        self._dispatch = dispatch
        self._inc = inc
        self._lock = lock
        #: sites whose model changed since it was built or loaded: saved at the close
        self.dirty: set[str] = set()
        self._load_tried: set[str] = set()
        self._loading: dict[str, list] = {}  # site -> Deferreds waiting for its model file

    def path(self, site_key: str) -> Optional[str]:
        if not self.config.model_dir:
            return None
        return os.path.join(self.config.model_dir, model_filename(site_key))

    def from_dict(self, data: dict) -> SiteCleaner:
        """A cleaner from model data, with this crawl's method parameters and limits
        (``SST_PARAMS``), whatever the model was saved with."""
        return SiteCleaner.from_dict(data, params=self.config.params)

    # -- loading
    def ensure_loaded(self, site_key: str):
        """See :meth:`SiteModelStore.ensure_loaded`: a Deferred fired (never failed) once
        the site's model file is read, or None when there is nothing to read."""
        if not self.config.model_dir or site_key in self._models:
            return None
        waiting = self._loading.get(site_key)
        if waiting is None:
            if site_key in self._load_tried:
                return None
            self._load_tried.add(site_key)
            waiting = self._loading[site_key] = []
            self._dispatch.run(self.read, site_key).addBoth(self._installed, site_key)
        from twisted.internet.defer import Deferred

        d: Deferred = Deferred()
        waiting.append(d)
        return d

    def read(self, site_key: str) -> tuple:
        """In a worker thread: (cleaner or None, model data, path, why it was refused)."""
        from sst_cleaner.engine._model_io import read_json_model

        path = self.path(site_key)
        try:
            if path is None or not os.path.lexists(path):
                return None, None, path, None
            data = read_json_model(path)
            model = self.from_dict(data)
        except Exception as exc:  # untrusted file: anything is a refusal, never a crash
            return None, None, path, exc
        if model.method != self.config.method:
            return None, None, path, f"made by method {model.method!r}, not {self.config.method!r}"
        return model, data, path, None

    def _installed(self, outcome: Any, site_key: str) -> None:
        """On the reactor thread: install what :meth:`read` found, wake the waiters."""
        try:
            if not isinstance(outcome, tuple):  # a Failure: read cannot fail, kept safe
                outcome = (None, None, self.path(site_key), getattr(outcome, "value", outcome))
            model, data, path, why = outcome
            if why is not None:
                logger.warning(
                    "sst: ignoring unusable model file %s for site %s (%s); building a new model", path, site_key, why
                )
                self._inc("models_rejected")
                if isinstance(why, BaseException):
                    self._inc("errors")
            elif model is not None and site_key not in self._models:
                self._install(site_key, model, data, path)
        except Exception:
            logger.exception("sst: installing the model of site %s failed", site_key)
            self._inc("errors")
        finally:
            for d in self._loading.pop(site_key, []):
                d.callback(None)

    def _install(self, site_key: str, model: SiteCleaner, data: dict, path: str) -> None:
        self._models.put(site_key, model)
        # the site's worker gets the checked data, not the path
        sent = self._dispatch.give_model(site_key, data, model.n_pages)
        if sent is not None:
            sent.addErrback(
                lambda f: logger.warning("sst: the worker could not take the model of %s: %s", site_key, f.value)
            )
        self._inc("models_loaded")
        logger.info("sst: loaded model for site %s (%d pages) from %s", site_key, model.n_pages, path)

    # -- saving
    def save_all(self) -> None:
        """Save the models that changed: by the sites' workers in process mode (they hold
        the refined models), else (or when a worker cannot) from the local copies."""
        if not self.config.model_dir:
            return
        remote = self._dispatch.save_in_workers(sorted(self.dirty), self.path)
        for site in sorted(self.dirty):
            if site not in self._models:
                continue
            if site in remote:
                self._inc("models_saved")
                continue
            try:
                with self._lock(site):
                    path = self.path(site)
                    assert path is not None  # there is a model_dir: checked on entry
                    saved = self._models.save(site, path)
                if saved:
                    self._inc("models_saved")
            except Exception:
                logger.exception("sst: could not save the model of site %s", site)
                self._inc("errors")
        self.dirty.clear()
