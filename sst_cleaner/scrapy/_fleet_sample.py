"""A fleet's shared samples: every sample page of a held site is also pushed to the
site's shared sample list in Redis, so the sample fills at the fleet's speed; when the
list is complete (or another worker has published the model) the middleware is told
(its listener) and starts its build.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from sst_cleaner.scrapy._fleet_link import RedisLink
from sst_cleaner.scrapy._item_pages import PageRecord

#: page bytes waiting to be pushed to Redis, all sites together: past it a page is not
#: shared (the local sample still has it), so a slow Redis cannot pile up memory here
MAX_PUSH_BACKLOG = 8 * 1024 * 1024
#: how often sites waiting for the fleet are checked (one pipelined round trip for all
#: the sites due): each site first after POLL_SECONDS, then backing off to POLL_MAX_SECONDS,
#: so a crawl with many small sites does not poll Redis for each of them four times a second
POLL_SECONDS = 0.25
POLL_MAX_SECONDS = 4.0
POLL_SITES = 500
#: sites watched at most (the oldest are let go: they still get their model when their
#: own sample is complete, at their hold timeout or at the end of the crawl)
MAX_WATCHED = 10_000


def make_room(sites: dict, site: str) -> None:
    """Let the oldest site go when ``sites`` is full and ``site`` is new in it."""
    if site not in sites and len(sites) >= MAX_WATCHED:
        sites.pop(next(iter(sites)))


class SharedSamples:
    """What this worker knows of the fleet's samples: the pages it pushed and where
    they went (``sampled``), the sites it polls until their sample is complete, the
    sites it told the listener about, and the sites it saw another worker build
    (``elsewhere``: site -> since when)."""

    def __init__(self, link: RedisLink, sample_pages: int, has_model: Callable[[str], bool], inc: Callable[..., None]):
        self.link, self.fleet, self.inc = link, link.fleet, inc
        self.sample_pages, self.has_model = sample_pages, has_model
        # ``listener(site)`` is called (reactor thread) when the fleet is ready to give
        # ``site`` a model: its shared sample is complete or its model is published
        self.listener: Optional[Callable[[str], None]] = None
        # sites waiting for the fleet -> [when to check next, interval]; insertion order
        self._watch: dict[str, list] = {}
        self._notified: set[str] = set()
        self._push_backlog = 0
        # site -> URLs of this process's pages that went into the site's shared sample
        self.sampled: dict[str, set[str]] = {}
        # site -> when this process first saw another worker building it: while Redis is
        # down such a site is not fitted here before SST_REDIS_WAIT from then
        self.elsewhere: dict[str, float] = {}

    def added(self, site: str, page: PageRecord) -> None:
        """A new sample page of a held site: share it with the fleet."""
        if self.link.down:
            return
        # a held site that is not being built: it needs telling again (its earlier hold
        # may have been evicted by a cap after a notification)
        self._notified.discard(site)
        if self._push_backlog + page.size > MAX_PUSH_BACKLOG:
            self.inc("redis/pages_not_shared")
            return
        self._push_backlog += page.size
        d = self.link.call(self.fleet.push_page, site, page.url, page.body, page.encoding, self.sample_pages)

        def pushed(result: tuple) -> None:
            status, n = result
            if status in ("added", "filled"):
                self.inc("redis/pages_shared")
            if status in ("added", "filled", "dup"):  # in the sample the model is fitted on
                make_room(self.sampled, site)
                self.sampled.setdefault(site, set()).add(page.url)
            if status in ("added", "dup"):
                if site not in self._watch:
                    make_room(self._watch, site)
                    self._watch[site] = [time.monotonic() + POLL_SECONDS, POLL_SECONDS]
            elif status in ("filled", "full", "model") or n > 0:  # complete, or no room left
                self._ready(site)
            else:  # over the per-site cap on its own: this page is not shared
                self.inc("redis/pages_not_shared")

        def done(result: Any) -> Any:
            self._push_backlog -= page.size
            return result

        d.addBoth(done).addCallbacks(pushed, self.link.failed)

    def building(self, site: str) -> None:
        """``site``'s build starts here: no more polling or telling for it."""
        self._watch.pop(site, None)
        self._notified.add(site)

    def stop_polling(self) -> None:
        """Redis failed: sites are no longer polled (they are pushed again when it answers)."""
        self._watch.clear()

    def mark_elsewhere(self, site: str, since: float) -> None:
        """Another worker builds ``site`` (or is about to: its shared sample is complete)."""
        make_room(self.elsewhere, site)
        self.elsewhere.setdefault(site, since)

    def _ready(self, site: str) -> None:
        self._watch.pop(site, None)
        if not self.has_model(site):  # the fleet's sample is complete: a worker builds it
            self.mark_elsewhere(site, time.monotonic())
        if site in self._notified or self.listener is None:
            return
        self._notified.add(site)
        self.listener(site)

    def poll(self) -> None:
        """Check the sites waiting for the fleet whose turn it is (one round trip for all)."""
        if self._watch:
            self.link.once("poll", self._poll_due)

    def _poll_due(self) -> Any:
        from twisted.internet.defer import succeed

        now, sites = time.monotonic(), []
        for site, due in list(self._watch.items()):
            if self.has_model(site):  # built or loaded meanwhile
                del self._watch[site]
            elif due[0] <= now:
                sites.append(site)
                due[1] = min(due[1] * 2, POLL_MAX_SECONDS)
                due[0] = now + due[1]
                if len(sites) >= POLL_SITES:
                    break
        if not sites:
            return succeed(None)

        def polled(states: list) -> None:
            for site, (has_model, n) in zip(sites, states):
                if has_model or n >= self.sample_pages:
                    self._ready(site)

        return self.link.call(self.fleet.sample_state, sites).addCallbacks(polled, self.link.failed)
