"""The share of a worker's time that refinements (``partial_fit``) may take.

``site_time_budget`` bounds what one site spends learning, but a crawl meets as many host
names as an attacker cares to make, and the refinements of all of them queue in the same
few workers, in front of the cleaning that releases other sites' items. So each worker
(process, or the thread pool in thread mode) also has a token bucket of CPU seconds for
refinements: ``burst`` seconds to start with, refilled at ``share`` seconds per second
of wall time. A refinement that finds the bucket empty is skipped (the model stays as it
was, ``sst/refinements_skipped``): refining is an improvement, never a duty, and
cleaning always goes first.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

#: refinements may use this share of a worker's time once the burst is spent
REFINE_SHARE = 0.25
#: CPU seconds of refinement a worker may spend at once
REFINE_BURST = 3.0


class RefineBudget:
    """A token bucket of CPU seconds (thread-safe)."""

    def __init__(
        self, share: float = REFINE_SHARE, burst: float = REFINE_BURST, clock: Callable[[], float] = time.monotonic
    ):
        self.share = share
        self.burst = burst
        self._clock = clock
        self._tokens = burst
        self._last = clock()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        """Whether a refinement may run now."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.share)
            self._last = now
            return self._tokens > 0

    def spend(self, seconds: float) -> None:
        """Charge a refinement's CPU seconds (the bucket may go below zero: the next
        refinements wait until it has refilled)."""
        with self._lock:
            self._tokens -= max(0.0, seconds)
