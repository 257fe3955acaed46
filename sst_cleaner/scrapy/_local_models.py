"""The Scrapy process's copies of the site models: at most ``max_models`` in memory, the
least recently used written to disk and read back when they are asked for again.

What the copies are for: in process mode a site's model lives in its worker, and the
Scrapy process keeps the model as it was built or loaded, for link extractors
(``store.get``), for the fall-back to threads, and to give a restarted worker its sites'
models. In thread mode the copy *is* the model, refined in the store's threads. Either
way there is one per site, and a crawl may meet tens of thousands of sites: unbounded,
they are what makes the Scrapy process's memory grow with the number of sites.

An evicted copy is written as an ordinary model file and read back through the bounded
loader, like any model file. Where: in thread mode, ``SST_MODEL_DIR`` when set (where the
model would be saved at the close anyway, refinements included); otherwise a temporary
folder of the crawl, removed at the close. In process mode never ``SST_MODEL_DIR``: the
workers write their refined models there, under the same file names, and a copy as it was
built must not overwrite them.

Threads: the store's other bookkeeping is touched from the reactor thread only, but these
copies are also looked up from worker threads (cleaning and refining in thread mode), so
the maps are guarded by one mutex, never held while a file is read or written. A model is
written out holding its site's lock, so a refinement running on it finishes first and is
in the file; a thread that changes a model looks it up while holding that lock, so it
never changes a copy that was written out and dropped.

Writing happens in one background thread (a write ends with an ``fsync`` in
``SST_MODEL_DIR``; the reactor thread must not wait for disks). Until its file is
written an evicted model stays in memory, and is taken back if its site is asked for
meanwhile: at most ``max_models`` models are in use, plus those being written out.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections import Counter, OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

if TYPE_CHECKING:
    from sst_cleaner.engine._cleaner import SiteCleaner

# the store's log lines keep the logger name they were always written under
logger = logging.getLogger("sst_cleaner.scrapy._site_models")


class Spilled(NamedTuple):
    """An evicted model: its file (None: it could not be written or read back, and is
    lost) and its page count (what ``model_pages`` reports without reading the file)."""

    path: Optional[str]
    n_pages: int


class LocalModels:
    """``site -> SiteCleaner``, LRU-bounded (``max_models``; 0 keeps every model).

    ``folder``: where evicted models are written (None: a temporary folder made at the
    first eviction); ``load(path)``: the bounded loader; ``lock(site)``: the site's lock.
    """

    def __init__(
        self,
        max_models: int,
        folder: Optional[str],
        load: Callable[[str], SiteCleaner],
        lock: Callable[[str], threading.Lock],
    ):
        self.max_models = max(0, int(max_models))
        self._folder = folder
        # a file in SST_MODEL_DIR outlives the crawl: synced like any saved model; one in
        # the crawl's temporary folder dies with it and need not be
        self._durable = folder is not None
        self._temp_folder: Optional[str] = None
        self._load = load
        self._lock = lock
        self._mutex = threading.Lock()
        self._resident: OrderedDict[str, SiteCleaner] = OrderedDict()
        self._leaving: dict[str, tuple[SiteCleaner, int]] = {}  # site -> (model, eviction number)
        self._spilled: dict[str, Spilled] = {}
        self._evictions = itertools.count()
        self._writer: Optional[ThreadPoolExecutor] = None
        #: "evicted" (written to disk), "reloaded", "lost", since the last take_counts
        self._counts: Counter = Counter()
        self._peak = 0

    # -- what the store asks
    def __len__(self) -> int:
        """Models in use (at most ``max_models``); see :attr:`in_memory`."""
        return len(self._resident)

    @property
    def in_memory(self) -> int:
        """Models in memory: those in use and those being written out."""
        return len(self._resident) + len(self._leaving)

    def __contains__(self, site: object) -> bool:
        """Whether the site has a model, in memory or on disk (or lost: the site keeps
        its model in its worker, and is not built again)."""
        with self._mutex:  # a model moving to disk is always in one of the three
            return site in self._resident or site in self._leaving or site in self._spilled

    def n_pages(self, site: str) -> int:
        """Pages the site's copy has learnt from (0: no model), without reading a file."""
        with self._mutex:
            model = self._in_memory(site)
            if model is not None:
                return model.n_pages
            record = self._spilled.get(site)
            return record.n_pages if record is not None else 0

    def _in_memory(self, site: str) -> Optional[SiteCleaner]:
        model = self._resident.get(site)
        if model is None:
            entry = self._leaving.get(site)
            model = entry[0] if entry is not None else None
        return model

    # -- get and put
    def get(self, site: str) -> Optional[SiteCleaner]:
        """The site's model, read back from disk (on the calling thread) if it was
        evicted; None when it has none, or its file could not be read back."""
        while True:
            with self._mutex:
                model, victims = self._take_in_memory(site)
                record = self._spilled.get(site) if model is None else None
            if model is not None:
                self._write_out(victims)
                return model
            if record is None or record.path is None:
                return None
            model = self._read_back(site, record.path)
            with self._mutex:
                if self._spilled.get(site) is not record:
                    continue  # put, or read back by another thread, meanwhile: look again
                victims = self._reinstate(site, record, model)
            self._write_out(victims)
            return model

    def _take_in_memory(self, site: str) -> tuple[Optional[SiteCleaner], list[tuple[str, int]]]:
        """Under the mutex: the site's model if it is in memory, now the most recently
        used (one being written out is kept), and the models that makes room for."""
        model = self._resident.get(site)
        if model is not None:
            self._resident.move_to_end(site)
            return model, []
        entry = self._leaving.pop(site, None)
        if entry is None:
            return None, []
        return entry[0], self._insert(site, entry[0])

    def _reinstate(self, site: str, record: Spilled, model: Optional[SiteCleaner]) -> list[tuple[str, int]]:
        """Under the mutex: the model read back from ``record`` in use again (None: its
        file was unusable, the copy is lost); the models that makes room for."""
        if model is None:
            self._spilled[site] = record._replace(path=None)
            self._counts["lost"] += 1
            return []
        del self._spilled[site]
        self._counts["reloaded"] += 1
        return self._insert(site, model)

    def _read_back(self, site: str, path: str) -> Optional[SiteCleaner]:
        try:
            return self._load(path)
        except Exception as exc:  # a file that went bad: the site's copy is lost
            logger.warning("sst: could not read back the evicted model of site %s from %s: %s", site, path, exc)
            return None

    def put(self, site: str, model: SiteCleaner) -> None:
        """Make ``model`` the site's copy (the most recently used)."""
        with self._mutex:
            self._spilled.pop(site, None)
            self._leaving.pop(site, None)  # a write of the old copy under way is dropped
            victims = self._insert(site, model)
        self._write_out(victims)

    def _insert(self, site: str, model: SiteCleaner) -> list[tuple[str, int]]:
        """Under the mutex: ``model`` in use; the least recently used beyond
        ``max_models`` move to the models being written out. Returns them."""
        self._resident[site] = model
        self._resident.move_to_end(site)
        victims = []
        while self.max_models and len(self._resident) > self.max_models:
            old_site, old = self._resident.popitem(last=False)
            number = next(self._evictions)
            self._leaving[old_site] = (old, number)
            victims.append((old_site, number))
        self._peak = max(self._peak, self.in_memory)
        return victims

    # -- writing evicted models out
    def _write_out(self, victims: list[tuple[str, int]]) -> None:
        if not victims:
            return
        with self._mutex:
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sst-model-spill")
            writer = self._writer
        for site, number in victims:
            writer.submit(self._write, site, number)

    def _write(self, site: str, number: int) -> None:
        """In the writer thread: write the evicted model out, then drop it, unless it
        was taken back (or replaced) meanwhile."""
        from sst_cleaner.engine._model_io import write_json_atomic
        from sst_cleaner.scrapy._site_keys import model_filename

        with self._lock(site):  # a refinement running on it finishes first
            with self._mutex:
                entry = self._leaving.get(site)
                if entry is None or entry[1] != number:
                    return
                model = entry[0]
            path: Optional[str] = None
            try:
                path = os.path.join(self._spill_folder(), model_filename(site))
                write_json_atomic(path, model.to_dict(), fsync=self._durable)
            except Exception:
                logger.exception("sst: could not write the evicted model of site %s", site)
                path = None
            with self._mutex:
                entry = self._leaving.get(site)
                if entry is None or entry[1] != number:
                    return  # taken back while it was written: it stays in memory
                del self._leaving[site]
                self._spilled[site] = Spilled(path, model.n_pages)
                self._counts["evicted" if path is not None else "lost"] += 1

    def _spill_folder(self) -> str:
        """The folder of evicted models (the writer thread's only)."""
        if self._folder is not None:
            return self._folder
        if self._temp_folder is None:
            import tempfile

            self._temp_folder = tempfile.mkdtemp(prefix="sst-local-models-")
        return self._temp_folder

    def flush(self) -> None:
        """Wait until the evicted models are written out."""
        with self._mutex:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)

    # -- a restarted worker, the close
    def copies(self) -> list[tuple[str, Optional[SiteCleaner], Optional[Spilled]]]:
        """Every site's copy: ``(site, model, None)`` for those in memory, ``(site, None,
        Spilled)`` for those on disk (or lost)."""
        with self._mutex:
            in_memory = [(site, model) for site, model in self._resident.items()]
            in_memory += [(site, entry[0]) for site, entry in self._leaving.items()]
            on_disk = list(self._spilled.items())
        return [(s, m, None) for s, m in in_memory] + [(s, None, r) for s, r in on_disk]

    def save(self, site: str, path: str) -> bool:
        """Write the site's model to ``path`` (at the close, holding the site's lock);
        False when it has none (or it was lost)."""
        with self._mutex:
            model = self._in_memory(site)
            record = self._spilled.get(site)
        if model is None:
            if record is None or record.path is None:
                return False
            if os.path.abspath(record.path) == os.path.abspath(path):
                return True  # evicted into the model folder: written there already
            model = self._load(record.path)  # through the bounded loader, not copied blindly
        model.save(path)
        return True

    def take_counts(self) -> tuple[Counter, int]:
        """The evictions, reloads and losses since the last call, and the most models
        that were in memory at once."""
        with self._mutex:
            counts, self._counts = self._counts, Counter()
            return counts, self._peak

    def close(self) -> None:
        """Wait for the writes under way; remove the temporary folder (never
        ``SST_MODEL_DIR``)."""
        self.flush()
        if self._temp_folder is not None:
            import shutil

            shutil.rmtree(self._temp_folder, ignore_errors=True)
            self._temp_folder = None
