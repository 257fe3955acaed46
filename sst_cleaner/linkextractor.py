"""Informative link extraction for Scrapy crawls (the only module here, with the Scrapy
layer, that imports Scrapy).

``InformativeLinkExtractor`` is Scrapy's ``LinkExtractor`` with one more constructor
argument, ``models``, and the same ``extract_links(response) -> list[Link]``, so it drops
into ``CrawlSpider`` rules::

    Rule(InformativeLinkExtractor(allow=r"/news/"), callback="parse_item", follow=True)

Until the response's site has a model it returns every link the plain ``LinkExtractor``
would. Once it has one, it returns only the links inside the page's informative link
blocks:

* a WISDOM model (``SiteCleaner(method="wisdom")``): the links of the TOC blocks that
  WISDOM mines (``CleanResult.link_blocks``), the paper's "information hubs";
* a model of any other method has no notion of link blocks, so the fallback is the links
  that are not inside a noise block (``CleanResult.blocks`` labelled noise): site menus,
  footers and other template blocks are dropped, links in the content are kept.

A WISDOM page with no TOC block gives no links: a crawl that must always go on should
use a second, plain rule (or a non-WISDOM model).

Model lookup: ``models`` is a mapping ``site_key -> SiteCleaner`` (the key is the host
without ``www.``, as :func:`sst_cleaner.site_models.host_key` makes it) or an object with
``.site_key(url)`` and ``.get(key)``; when ``models`` is None, the running crawl's store
``sst_cleaner.site_models.active_store()`` is used. No store, or no model for the site:
"no model yet".
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import urldefrag, urlsplit

from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url
from w3lib.url import safe_url_string

from .dom import BLOCK_TAGS, parse_html
from .result import NOISE


def _norm(url: str) -> str:
    return urldefrag(safe_url_string(url.strip()))[0]


def _host_key(url: str) -> str:
    try:
        from .site_models import host_key
    except ImportError:
        host = (urlsplit(url).hostname or "").lower()
        return host[4:] if host.startswith("www.") else host
    return host_key(url)


class InformativeLinkExtractor(LinkExtractor):
    """``LinkExtractor`` that keeps only the links of informative link blocks once the
    site has a model (see the module docstring). ``models``: where to find site models."""

    def __init__(self, *args: Any, models: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.models = models

    # -- model lookup ---------------------------------------------------------------
    def model_for(self, url: str):
        """The site's ``SiteCleaner`` or None ("no model yet")."""
        store = self.models
        if store is None:
            try:
                from .site_models import active_store
            except ImportError:
                return None
            store = active_store()
            if store is None:
                return None
        if hasattr(store, "site_key") and hasattr(store, "get") and not isinstance(store, Mapping):
            return store.get(store.site_key(url))
        if isinstance(store, Mapping):
            return store.get(_host_key(url))
        return None

    # -- extraction -----------------------------------------------------------------
    def extract_links(self, response) -> list[Link]:
        links = super().extract_links(response)
        cleaner = self.model_for(response.url)
        if cleaner is None or not links:
            return links
        # WISDOM needs two pages for any entropy (before that it cleans page by page)
        min_pages = 2 if getattr(cleaner, "method", None) == "wisdom" else 1
        if getattr(cleaner, "n_pages", 0) < min_pages:
            return links
        allowed = self.informative_urls(response, cleaner)
        if allowed is None:
            return links
        return [link for link in links if _norm(link.url) in allowed]

    def informative_urls(self, response, cleaner) -> Optional[set]:
        """Normalised URLs of the page's informative links (None: cannot tell)."""
        base = get_base_url(response)
        page = parse_html(response.text, url=base)
        result = cleaner.clean(page)
        if getattr(cleaner, "method", None) == "wisdom":
            return {_norm(u) for blk in result.link_blocks for u in blk.get("links", ())}
        # other methods: links outside noise blocks
        noise = {b.xpath for b in result.blocks if b.label == NOISE}
        if not result.blocks:
            return None
        out: set = set()
        tree = page.tree
        for a in page.root.iter("a", "area"):
            href = a.get("href")
            if not href:
                continue
            blk = a.getparent()
            while blk is not None and blk.tag not in BLOCK_TAGS and blk is not page.root:
                blk = blk.getparent()
            if blk is not None and tree.getpath(blk) in noise:
                continue
            try:
                out.add(_norm(response.urljoin(href)))
            except ValueError:
                continue
        return out


__all__ = ["InformativeLinkExtractor"]
