"""Pausing Python's cyclic garbage collector while a site is learnt.

Learning a site allocates a few hundred thousand short-lived containers (text blocks,
sentence records, per-node counters) and no reference cycles. Each allocation burst
triggers collections, and every full collection walks all of the process's long-lived
objects (the sentence and label caches, the model being built): on 500 documentation
pages that was 12-15% of the fit's CPU time for nothing reclaimed. The standard
library's ``timeit`` pauses the collector for the same reason.

The pause is process-wide, so it is reference-counted: concurrent fits in threads
share one pause, and the collector is re-enabled when the last one ends, and only if
it was enabled when the first one began (a caller who turned it off keeps it off).
Reference counting still frees everything without cycles at once; the collector runs
its normal schedule again after the pause.

Cleaning a page makes no reference cycles either, and its collections walk the page's
live blocks and rows many times over. A clean pauses the collector only when no pause
is on (``join=False``): it never joins one, so cleans overlapping in worker threads
cannot keep the collector off between them for good while the rest of the process (a
crawler's own cycles) goes on allocating; a clean that starts during a pause runs as
the collector is.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused(join: bool = True) -> Iterator[None]:
    """Run the block with the cyclic collector off (see module docstring); with
    ``join=False``, only when no other pause is on (else the block runs as it is)."""
    global _depth, _was_enabled
    with _lock:
        if not join and _depth:
            joined = False
        else:
            joined = True
            if _depth == 0:
                _was_enabled = gc.isenabled()
                if _was_enabled:
                    gc.disable()
            _depth += 1
    if not joined:
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
