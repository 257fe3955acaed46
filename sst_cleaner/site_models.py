"""The per-crawl store of site models, shared by the spider middleware, the item pipeline
and anything else that needs a site's model during a crawl (e.g. a link extractor).

    store = active_store()          # the store of the running crawl, or None
    key = store.site_key(url)       # "host" (default), "domain", or SST_SITE_KEY(url)
    cleaner = store.get(key)        # SiteCleaner, or None while the site has no model

Thread model: all bookkeeping (dicts, counters) is touched only from the reactor thread;
CPU work (fitting, refining, cleaning) runs in the store's thread pool through
:meth:`SiteModelStore.run`, and every operation on one site's ``SiteCleaner`` holds that
site's lock, because a method's ``partial_fit`` may mutate state that ``clean`` reads.
"""
from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from .cleaner import SiteCleaner
from .model_io import ModelFormatError
from .settings import SSTConfig

logger = logging.getLogger(__name__)

_ACTIVE: Optional["SiteModelStore"] = None


def active_store() -> Optional["SiteModelStore"]:
    """The model store of the crawl that is running now (None outside a crawl)."""
    return _ACTIVE


# -- site keys ---------------------------------------------------------------------------

def host_key(url: str) -> str:
    """The lower-cased host name of ``url`` (no port, no credentials): one site per host.

    The port is left out on purpose: a site served on another port (a test server, a
    mirror) is still the same templates.
    """
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return host.rstrip(".").lower()


# second-level labels under which registrations happen in many country TLDs (co.uk,
# com.au, ...): a short offline stand-in for the Public Suffix List when tldextract is absent
_SECOND_LEVEL = frozenset("ac co com edu gov net org ne or go gob mil nic ltd plc sch".split())
_TLDEXTRACT = None


def domain_key(url: str) -> str:
    """The registered domain of ``url`` ("news.bbc.co.uk" -> "bbc.co.uk").

    Uses tldextract's bundled Public Suffix List snapshot when it is installed (never
    fetched over the network), otherwise the last two labels, or three when the
    second-to-last is a common second-level label under a two-letter country TLD.
    """
    global _TLDEXTRACT
    host = host_key(url)
    if not host:
        return host
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    if _TLDEXTRACT is None:
        try:
            import tldextract

            _TLDEXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
        except Exception:  # not installed, or an old version without these options
            _TLDEXTRACT = False
    if _TLDEXTRACT:
        ext = _TLDEXTRACT(host)
        if ext.domain and ext.suffix:
            return f"{ext.domain}.{ext.suffix}"
        return host
    labels = host.split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def resolve_site_key(spec: Any) -> Callable[[str], str]:
    """``SST_SITE_KEY`` -> a function url -> site key."""
    if callable(spec):
        return spec
    if spec == "host":
        return host_key
    if spec == "domain":
        return domain_key
    if isinstance(spec, str) and "." in spec:
        from importlib import import_module

        module, _, name = spec.rpartition(".")
        func = getattr(import_module(module), name)
        if not callable(func):
            raise ValueError(f"SST_SITE_KEY {spec!r} is not callable")
        return func
    raise ValueError(f"SST_SITE_KEY must be 'host', 'domain', a callable or its import path, not {spec!r}")


_WINDOWS_RESERVED = frozenset(["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)]
                              + [f"lpt{i}" for i in range(10)])
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_PREFIX_MAX = 48


def model_filename(site_key: str) -> str:
    """A file name for a site's model that is safe whatever the key holds.

    ``site-<sanitized prefix>-<sha256[:20]>.json``: the prefix keeps only ``[a-z0-9_-]``
    (dots become ``_``, so no ``..`` and no hidden files), is cut to 48 characters, and
    the hash keeps distinct keys distinct. The constant ``site-`` start means the stem is
    never a Windows device name (CON, NUL, COM1...), and the name is never longer than
    ~80 characters, whatever the host string.
    """
    raw = site_key.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()[:20]
    prefix = "".join(ch if ch in _SAFE else "_" for ch in site_key.lower())[:_PREFIX_MAX].strip("_-")
    if prefix in _WINDOWS_RESERVED:  # cannot happen after "site-", kept as a second guard
        prefix = "_" + prefix
    return f"site-{prefix or 'x'}-{digest}.json"


# -- pages -------------------------------------------------------------------------------

class PageRecord:
    """One crawled HTML page, as the middleware recorded it (url, raw body, encoding)."""

    __slots__ = ("url", "body", "encoding", "site", "clean_result", "__weakref__")

    def __init__(self, url: str, body: bytes, encoding: Optional[str], site: str):
        self.url = url
        self.body = body
        self.encoding = encoding
        self.site = site
        self.clean_result: Any = None  # Deferred or CleanResult, shared by the page's items

    @property
    def size(self) -> int:
        return len(self.body)

    def prepare(self, limits=None):
        """The page parsed within ``limits`` (a cleaner's ``Limits``; the defaults if None)."""
        from .dom import parse_html

        return parse_html(self.body, url=self.url, encoding=self.encoding, limits=limits)


def build_model(method: str, params: dict, pages: list[PageRecord],
                share_pages: int = 5) -> tuple[SiteCleaner, float, float]:
    """Fit a site model on ``pages`` (runs in a worker thread).

    Returns the cleaner, the seconds it took, and the mean share of text the model
    judged template on up to ``share_pages`` of the sample (for the log line a user
    reads to decide whether the model makes sense).
    """
    start = time.perf_counter()
    cleaner = SiteCleaner(method, **params)
    # parsed within the cleaner's limits, so size caps given in SST_PARAMS apply here too
    prepared = [p.prepare(cleaner.limits) for p in pages]
    cleaner.fit(prepared)
    seconds = time.perf_counter() - start
    shares = []
    for page in pages[:share_pages]:
        try:
            shares.append(cleaner.clean(page.prepare(cleaner.limits)).template_share)
        except Exception:  # the share is informative only; the build itself succeeded
            pass
    share = sum(shares) / len(shares) if shares else 0.0
    return cleaner, seconds, share


# -- the store ---------------------------------------------------------------------------

class SiteModelStore:
    """Site models of one crawl, the item -> page map, and the CPU worker threads."""

    def __init__(self, config: SSTConfig, stats: Any = None):
        self.config = config
        self.stats = stats
        self._site_key = resolve_site_key(config.site_key)
        self._models: dict[str, SiteCleaner] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._dirty: set[str] = set()
        self._load_tried: set[str] = set()
        self._item_pages: dict[int, tuple[Any, PageRecord]] = {}
        self._executor: Optional[ThreadPoolExecutor] = None
        self._fallback: Optional[SiteCleaner] = None
        # fail now, not at the first page: an unknown method or bad SST_PARAMS is a
        # configuration error the user must see before anything is crawled
        try:
            SiteCleaner(config.method, **config.params)
        except Exception as exc:
            raise ValueError(f"sst-cleaner: cannot create method {config.method!r} with SST_PARAMS "
                             f"{config.params!r}: {exc}") from exc

    # -- stats helper
    def inc(self, key: str, count: float = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"sst/{key}", count)

    def max_stat(self, key: str, value: float) -> None:
        if self.stats is not None:
            self.stats.max_value(f"sst/{key}", value)

    # -- lifecycle
    def open(self) -> None:
        global _ACTIVE
        _ACTIVE = self

    def close(self) -> None:
        global _ACTIVE
        try:
            if self._executor is not None:
                # refinements not started yet are dropped; running ones finish first, so
                # the saved models are never written while a thread changes them
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = None
            self.save_all()
        finally:
            self._item_pages.clear()
            if _ACTIVE is self:
                _ACTIVE = None

    # -- site keys and models
    def site_key(self, url: str) -> str:
        """The site a URL belongs to (``SST_SITE_KEY``)."""
        return str(self._site_key(url))

    def get(self, site_key: str) -> Optional[SiteCleaner]:
        """The site's model, loading it from ``SST_MODEL_DIR`` the first time it is asked."""
        model = self._models.get(site_key)
        if model is None and self.config.model_dir and site_key not in self._load_tried:
            self._load_tried.add(site_key)
            model = self._load(site_key)
        return model

    def has_model(self, site_key: str) -> bool:
        return self.get(site_key) is not None

    def put(self, site_key: str, cleaner: SiteCleaner) -> None:
        self._models[site_key] = cleaner
        self._dirty.add(site_key)

    def mark_dirty(self, site_key: str) -> None:
        self._dirty.add(site_key)

    def sites(self) -> list[str]:
        return list(self._models)

    def lock(self, site_key: str) -> threading.Lock:
        lock = self._locks.get(site_key)
        if lock is None:
            lock = self._locks[site_key] = threading.Lock()
        return lock

    def fallback(self) -> SiteCleaner:
        """An unfitted cleaner: the method's page-level fallback, for pages of sites
        without a model (evicted, failed, or fewer pages than ``SST_MIN_FIT_PAGES``)."""
        if self._fallback is None:
            self._fallback = SiteCleaner(self.config.method, **self.config.params)
        return self._fallback

    def model_path(self, site_key: str) -> Optional[str]:
        if not self.config.model_dir:
            return None
        return os.path.join(self.config.model_dir, model_filename(site_key))

    def _load(self, site_key: str) -> Optional[SiteCleaner]:
        path = self.model_path(site_key)
        if path is None or not os.path.exists(path):
            return None
        try:
            model = SiteCleaner.load(path)
        except (ModelFormatError, ValueError, TypeError, KeyError) as exc:
            logger.warning("sst: ignoring unusable model file %s for site %s: %s", path, site_key, exc)
            self.inc("errors")
            return None
        if model.method != self.config.method:
            logger.info("sst: model file %s was made by method %r, not %r; building a new one",
                        path, model.method, self.config.method)
            return None
        self._models[site_key] = model
        self.inc("models_loaded")
        logger.info("sst: loaded model for site %s (%d pages) from %s", site_key, model.n_pages, path)
        return model

    def save_all(self) -> None:
        if not self.config.model_dir:
            return
        for site in sorted(self._dirty):
            model = self._models.get(site)
            if model is None:
                continue
            try:
                with self.lock(site):
                    model.save(self.model_path(site))
                self.inc("models_saved")
            except Exception:
                logger.exception("sst: could not save the model of site %s", site)
                self.inc("errors")
        self._dirty.clear()

    # -- item -> page map
    def bind(self, item: Any, page: PageRecord) -> None:
        """Remember the page an item came from (the item object itself is the key)."""
        self._item_pages[id(item)] = (item, page)

    def page_for(self, item: Any) -> Optional[PageRecord]:
        """Pop the page ``item`` came from (None for items that came from no HTML page)."""
        entry = self._item_pages.pop(id(item), None)
        if entry is None or entry[0] is not item:
            return None
        return entry[1]

    def forget(self, item: Any) -> None:
        entry = self._item_pages.get(id(item))
        if entry is not None and entry[0] is item:
            del self._item_pages[id(item)]

    # -- worker threads
    def run(self, func: Callable[..., Any], *args: Any):
        """Run ``func(*args)`` in the store's worker threads; a Deferred fired on the
        reactor thread with its result (works with any Twisted reactor)."""
        from twisted.internet import defer, reactor

        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.config.threads,
                                                thread_name_prefix="sst-worker")
        d: defer.Deferred = defer.Deferred()

        def done(future) -> None:
            if future.cancelled():  # dropped at close: nobody waits for it any more
                return
            exc = future.exception()
            if exc is not None:
                reactor.callFromThread(d.errback, exc)
            else:
                reactor.callFromThread(d.callback, future.result())

        self._executor.submit(func, *args).add_done_callback(done)
        return d
