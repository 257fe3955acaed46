"""Learning one site's pages on several cores: ``SiteCleaner.fit(pages, n_jobs=2)``.

Why this is sound: the default method's model (:class:`~sst_cleaner.engine.methods.sitestats.site_stats.SiteStats`)
is nothing but sums over pages: page counts per node and per sentence, and each feature's
S = sum tf and Q = sum tf ln tf. Learning the first half of the pages in one process and
the second half in another, then adding the two models, gives the model that learning
them one by one gives (counts exactly; Q up to float rounding in the last bits). And
almost all of a fit is per-page work that needs no other page: parsing, the walk over
text blocks with their style paths, and sentences' words and hashes take ~90% of its CPU
time, adding a page to the model the rest. So two processes fit 500 pages in a little
over half the time of one (the figures are in the README).

How: the pages are cut into contiguous shards, one per process. The calling process
learns the first shard itself while worker processes learn the others; each shard is
learnt by exactly the code of a one-process fit (parsing, page budgets, dropping a page
that overruns its budget), under its share of the site's time budget. A worker sends
back the method's shard state (for ``SiteStats``: plain dicts of hashes and numbers,
about 2 MB for 250 documentation pages, not the pages), and the calling process merges
the shards in page order.

Workers are started with the ``spawn`` context: forking a process that may run threads
(a Twisted reactor, a thread pool) is unsafe. Like every ``spawn`` use this imports the
caller's main module in the workers, so a script that fits with ``n_jobs`` must keep its
top-level work under ``if __name__ == "__main__":``. Starting the workers costs about
0.25 s, so a shard of less than :data:`MIN_SIZE_PER_PROCESS` of HTML is not worth a
process and fewer processes are used; shards are cut to equal sizes of HTML, not equal
numbers of pages, so that the processes finish together.

Nothing is lost when a worker cannot do its part (it failed to start, died, or raised):
its shard is learnt in the calling process instead, and a warning says why.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

if TYPE_CHECKING:
    from concurrent.futures import Future

logger = logging.getLogger(__name__)

#: least HTML (characters or bytes) worth a process of its own: starting a worker costs
#: ~0.25 s, what fitting 1-1.5 MB costs (500 real pages of 18-34 MB fit at 4-6 MB/s);
#: 4 MB is about 1 s of work
MIN_SIZE_PER_PROCESS = 4_000_000


def usable_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_n_jobs(n_jobs: Any) -> int:
    """``n_jobs`` as a number of processes: a positive int, or -1 for every usable CPU."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be a positive int or -1 (every CPU), not {n_jobs!r}")
    return usable_cpus() if n_jobs == -1 else n_jobs


def plan_shards(sizes: Sequence[int], n_jobs: int, min_size: Optional[int] = None) -> list[range]:
    """Contiguous index ranges over items of the given sizes, of nearly equal total size
    (so the processes finish together): at most ``n_jobs`` of them, and fewer when a
    shard would hold less than ``min_size`` (so there may be just one)."""
    least = max(1, MIN_SIZE_PER_PROCESS if min_size is None else min_size)
    total = sum(sizes)
    k = max(1, min(n_jobs, total // least, len(sizes)))
    shards, start, acc = [], 0, 0
    for i in range(1, k):
        target = total * i / k
        end = start + 1  # every shard gets at least one item
        acc += sizes[start]
        while end < len(sizes) - (k - i) and acc + sizes[end] / 2 <= target:
            acc += sizes[end]
            end += 1
        shards.append(range(start, end))
        start = end
    shards.append(range(start, len(sizes)))
    return shards


def input_size(page: Any) -> int:
    """Characters or bytes of a page input (html, or a (url, html[, encoding]) tuple)."""
    if isinstance(page, tuple) and len(page) >= 2:
        page = page[1]
    return len(page) if isinstance(page, (str, bytes, bytearray)) else 0


def map_shards(
    fn: Callable[..., Any], shard_args: Sequence[tuple], local: Optional[Callable[..., Any]] = None
) -> list[Any]:
    """``[fn(*args) for args in shard_args]``, the first shard in this process (through
    ``local`` if given, which may return something richer than ``fn``), the others in
    worker processes at the same time. ``fn`` must be a module-level function and its
    arguments and result picklable. A shard whose worker fails is run here by ``fn``."""
    local = local or fn
    if len(shard_args) <= 1:
        return [local(*a) for a in shard_args]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    futures: list = []
    pool = None
    try:
        pool = ProcessPoolExecutor(len(shard_args) - 1, mp_context=multiprocessing.get_context("spawn"))
        futures = [pool.submit(fn, *a) for a in shard_args[1:]]
    except Exception as exc:  # no processes on this platform, or none left
        logger.warning(
            "could not start fit workers (%s: %s); learning every shard in this process", type(exc).__name__, exc
        )
    try:
        results = [local(*shard_args[0])]
        for i, a in enumerate(shard_args[1:]):
            results.append(_collect(futures[i] if i < len(futures) else None, fn, a))
        return results
    finally:
        if pool is not None:
            # not waiting: a worker takes ~0.4 s to exit (freeing its pages and model),
            # and nothing of it is needed once its result is in
            pool.shutdown(wait=False, cancel_futures=True)


def _collect(future: Optional[Future[Any]], fn: Callable[..., Any], args: tuple) -> Any:
    if future is not None:
        try:
            return future.result()
        except Exception as exc:
            logger.warning(
                "a fit worker failed (%s: %s); learning its shard in this process", type(exc).__name__, str(exc)[:300]
            )
    return fn(*args)
