"""``SST_EXPLAIN_DIR``: a crawl's explain report, for the first pages of each site.

The pipeline offers every page it cleaned; the first ``SST_EXPLAIN_PAGES`` of each site
are kept (their raw bodies, within :data:`MAX_HELD_BYTES` and the report's page cap).
At the close, once every item went through, they are explained with their site's model
as the crawl has it (in process mode, the Scrapy process's copy: the model as built,
before the workers' later refinements) and written as one report,
``<SST_EXPLAIN_DIR>/<spider name>-explain.html``. Explaining runs in a thread: the
reactor goes on meanwhile, and the close waits for it. A page that cannot be explained
is listed in the report and counted; a report that cannot be written is logged, and the
crawl closes as it would have.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Optional

from sst_cleaner.engine._explain import MAX_REPORT_PAGES

logger = logging.getLogger(__name__)

#: page bytes held for the report, all sites together: past it, pages are not sampled
MAX_HELD_BYTES = 32 * 1024 * 1024


def report_path(folder: str, spider_name: Any) -> str:
    """The report's file: the spider's name, reduced to a safe file name."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(spider_name or ""))[:100].lstrip(".") or "crawl"
    return os.path.join(folder, f"{name}-explain.html")


class ExplainSample:
    """The pages a crawl's explain report shows, and the writing of it (see the module
    docstring). ``store``: the crawl's :class:`~sst_cleaner.scrapy._site_models.SiteModelStore`."""

    def __init__(self, folder: str, per_site: int, store: Any):
        self.folder = folder
        self.per_site = per_site
        self.store = store
        self.pages: list[tuple[str, bytes, Optional[str], str]] = []
        self.per_site_count: dict[str, int] = {}
        self.held = 0
        self.not_sampled = 0

    def offer(self, page: Any) -> None:
        """A cleaned page (a PageRecord): kept if its site still needs pages and the caps allow."""
        n = self.per_site_count.get(page.site, 0)
        if n >= self.per_site:
            return
        if len(self.pages) >= MAX_REPORT_PAGES or self.held + len(page.body) > MAX_HELD_BYTES:
            self.not_sampled += 1
            return
        self.per_site_count[page.site] = n + 1
        self.pages.append((page.url, page.body, page.encoding, page.site))
        self.held += len(page.body)

    def write(self, spider_name: Any):
        """A Deferred of writing the report in a thread (fired with its path, or None when
        it could not be written), or None when no page was sampled."""
        if not self.pages:
            return None
        from twisted.internet.threads import deferToThread

        return deferToThread(self._write, report_path(self.folder, spider_name))

    def _write(self, path: str) -> Optional[str]:
        from sst_cleaner.engine._explain import render_report, write_report

        store = self.store
        explained, failed = [], []
        for url, body, encoding, site in self.pages:
            has_model = bool(site) and store.has_model(site)
            try:
                with store.lock(site if has_model else "\0fallback"):
                    cleaner = (store.get(site) if has_model else None) or store.fallback()
                    exp = cleaner.explain((url, body, encoding), name=url)
                exp.site = site
                explained.append(exp)
            except Exception as exc:  # one page never costs the report
                failed.append(f"{url}: {exc!r}")
        self.pages = []  # the bodies are no longer needed
        store.inc("explain_pages", len(explained))
        if failed:
            store.inc("errors/explain", len(failed))
            store.inc("errors", len(failed))
            logger.warning("sst: %d pages could not be explained (listed in the report)", len(failed))
        report = render_report(
            explained,
            title="sst-cleaner explain: why each block was kept or removed",
            not_shown=self.not_sampled,
            skipped=failed,
        )
        try:
            os.makedirs(self.folder, exist_ok=True)
            write_report(path, report)
        except OSError as exc:
            store.inc("errors/explain")
            store.inc("errors")
            logger.error("sst: cannot write the explain report %s: %s", path, exc)
            return None
        logger.info("sst: explain report of %d pages written to %s", len(explained), path)
        return path
