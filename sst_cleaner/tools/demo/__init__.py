"""A generated multi-template news site with known gold text, served locally.

    site = DemoSite(seed=7, n_articles=60)
    with DemoServer(site) as server:          # 127.0.0.1, random free port
        print(server.url)                     # http://127.0.0.1:PORT/

Used by ``scrapy crawl demo``, the integration tests and the crawl-speed benchmark.
"""

from sst_cleaner.tools.demo.scoring import boilerplate_removed, prf, tokens
from sst_cleaner.tools.demo.server import DemoServer
from sst_cleaner.tools.demo.site import DemoSite

__all__ = ["DemoSite", "DemoServer", "prf", "tokens", "boilerplate_removed"]
