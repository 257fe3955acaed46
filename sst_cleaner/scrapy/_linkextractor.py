"""Informative link extraction for Scrapy crawls (the only module here, with the Scrapy
layer, that imports Scrapy).

``InformativeLinkExtractor`` is Scrapy's ``LinkExtractor`` with two more constructor
arguments, ``models`` and ``pagination``, and the same ``extract_links(response) ->
list[Link]``, so it drops into ``CrawlSpider`` rules::

    Rule(InformativeLinkExtractor(allow=r"/news/"), callback="parse_item", follow=True)

Until the response's site has a model it returns every link the plain ``LinkExtractor``
would (the crawl explores the site, menus included, while the model's sample is
gathered). Once it has one, it returns only the *informative links* of the page, the
union of:

* **link blocks** -- with a WISDOM model (``SiteCleaner(method="wisdom")``), the links of
  the TOC blocks WISDOM mines (``CleanResult.link_blocks``), the paper's "information
  hubs";
* **content links** -- the links that are not inside a noise block of the page
  (``CleanResult.blocks`` labelled noise), for every method: the teasers of a listing
  page and the links of an article are content, while site menus, footers, ads and other
  template blocks are noise. WISDOM's informative structure is its article blocks *and*
  its TOC blocks, so both are kept; methods without link blocks have only this part.
  A noise block whose parent element also holds content blocks counts as content: a
  teaser's headline recurs on the home page and in "most read" lists, so it looks like
  template, while the summary beside it does not;
* **pagination** (``pagination=True``, the default) -- the links to other pages of the
  same paginated series as the page itself (see :func:`is_pagination_link`). A pager
  ("Older stories", "2 3 4 Next") is template by every site-level measure (the same
  words at the same place on every listing page), so the methods call it noise; but
  without it a crawl that drops menus reaches only the first page of every listing.

A page on which the model finds nothing informative keeps all its links ("the model
cannot tell"): a listing, once the model has learnt the site's other listings and
articles, is template from top to bottom (every teaser's headline and first sentence
recur), and dropping all its links would leave the articles it alone lists unreached.

Reaching sections: menus are noise, so a section linked *only* from the menu is reached
while the model's sample is crawled (every link is followed then), not afterwards.

Model lookup: ``models`` is a mapping ``site_key -> SiteCleaner`` (the key is the host
as :func:`sst_cleaner.scrapy._site_keys.host_key` makes it: lower case, no port) or an object
with ``.site_key(url)`` and ``.get(key)`` (and, optionally, ``.lock(key)``: the lock
held while the model is used, as the crawl's store has it, because the middleware
refines models in worker threads); when ``models`` is None, the running crawl's store
``sst_cleaner.scrapy._site_models.active_store()`` is used. No store, or no model for the site:
"no model yet".

``stats`` counts what the extractor did (pages, links the plain extractor found, links
kept, and why they were kept), so a spider can report the share of links it followed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import parse_qsl, urldefrag, urlsplit

from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url
from w3lib.url import safe_url_string

from sst_cleaner.engine._dom import BLOCK_TAGS, normalize_space, parse_html
from sst_cleaner.engine._result import NOISE
from sst_cleaner.scrapy._site_keys import host_key
from sst_cleaner.scrapy._site_models import active_store

#: a page number has at most this many digits: pagers rarely pass 9,999 pages, while the
#: numeric ids of records (articles, threads) are usually longer
PAGE_NUMBER_DIGITS = 4
#: a pager link's text has at most this many words ("2", "Next", "Older stories",
#: "« Previous page"); a link whose text is a headline is not a pager link
PAGER_TEXT_WORDS = 3
#: ``rel`` values that mark a link to the next/previous page of a series (HTML standard)
PAGER_RELS = frozenset({"next", "prev", "previous"})


def _norm(url: str) -> str:
    return urldefrag(safe_url_string(url.strip()))[0]


# -- pagination -------------------------------------------------------------------------


def _is_page_number(token: str) -> bool:
    return 0 < len(token) <= PAGE_NUMBER_DIGITS and token.isascii() and token.isdigit()


def _is_series_word(token: str) -> bool:
    """A path word that may announce the page number ("page", "p", "seite")."""
    return 0 < len(token) <= 20 and token.isalpha()


def _path_pages(a: tuple, b: tuple) -> bool:
    """Path segments ``a`` and ``b`` are two pages of one series: they differ only in a
    final page number (``/news/page/2`` ~ ``/news/page/3``), or one is the other plus a
    page number, optionally after a series word (``/news`` ~ ``/news/2`` ~
    ``/news/page/2``: the first page of a series usually has no number)."""
    if len(a) == len(b):
        return len(a) > 0 and a[:-1] == b[:-1] and a[-1] != b[-1] and _is_page_number(a[-1]) and _is_page_number(b[-1])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    if long_[: len(short)] != short:
        return False
    rest = long_[len(short) :]
    if len(rest) == 1:
        return _is_page_number(rest[0])
    return len(rest) == 2 and _is_series_word(rest[0]) and _is_page_number(rest[1])


def _query_pages(a: tuple, b: tuple) -> bool:
    """Queries ``a`` and ``b`` (sorted pairs) differ in exactly one parameter, whose
    value is a page number where present (``?page=2`` ~ ``?page=3`` ~ no ``page``)."""
    da, db = dict(a), dict(b)
    if len(da) != len(a) or len(db) != len(b):  # repeated parameters: not a page number
        return False
    diff = [k for k in da.keys() | db.keys() if da.get(k) != db.get(k)]
    if len(diff) != 1:
        return False
    values = [d[diff[0]] for d in (da, db) if diff[0] in d]
    return all(_is_page_number(v) for v in values)


def same_series(page_url: str, link_url: str) -> bool:
    """True when ``link_url`` is another page of the paginated series ``page_url``
    belongs to: same host, and the URLs differ only by a page number in the path or in
    one query parameter (see :func:`_path_pages`, :func:`_query_pages`).

    Known misses: series numbered inside a file name (``index_2.html``). Known false
    positives: a short numeric record id right under the page's path (``/news`` ->
    ``/news/42``), which :func:`is_pagination_link` only accepts with a pager's short
    link text.
    """
    try:
        a, b = urlsplit(page_url), urlsplit(link_url)
        if (a.hostname or "").lower() != (b.hostname or "").lower() or a.port != b.port:
            return False
    except ValueError:
        return False
    seg_a = tuple(s for s in a.path.split("/") if s)
    seg_b = tuple(s for s in b.path.split("/") if s)
    q_a = tuple(sorted(parse_qsl(a.query, keep_blank_values=True)))
    q_b = tuple(sorted(parse_qsl(b.query, keep_blank_values=True)))
    if seg_a == seg_b:
        return q_a != q_b and _query_pages(q_a, q_b)
    return q_a == q_b and _path_pages(seg_a, seg_b)


def is_pagination_link(page_url: str, link_url: str, text: str = "", rel: str = "") -> bool:
    """A link to another page of the page's own paginated series.

    ``rel="next"``/``"prev"`` says so explicitly (any URL shape); otherwise the URL must
    be another page of the same series (:func:`same_series`) *and* the link text must be
    a pager's: at most ``PAGER_TEXT_WORDS`` words ("2", "Next", "Older stories").
    Language-independent: no list of "next" words is used.
    """
    if _norm(link_url) == _norm(page_url):
        return False
    if PAGER_RELS & set(rel.lower().split()):
        return True
    return len(text.split()) <= PAGER_TEXT_WORDS and same_series(page_url, link_url)


# -- the extractor ----------------------------------------------------------------------


def _new_stats() -> dict:
    return {
        "pages": 0,
        "pages_with_model": 0,
        "links_seen": 0,
        "links_kept": 0,
        # the same two counts on pages whose site had a model (the filtered pages)
        "links_seen_with_model": 0,
        "links_kept_with_model": 0,
        # why kept links were kept (first reason: link block, content, pagination)
        "kept_link_block": 0,
        "kept_content": 0,
        "kept_pagination": 0,
    }


#: result statuses whose labels are a page-level fallback's, not the site model's
_NOT_THE_MODELS = ("empty_fallback", "over_budget")


class InformativeLinkExtractor(LinkExtractor):
    """``LinkExtractor`` that keeps only the informative links (link blocks, content
    links, pagination) once the site has a model (see the module docstring).

    ``models``: where to find site models (None: the running crawl's store).
    ``pagination``: also keep links to the other pages of the page's paginated series.
    """

    def __init__(self, *args: Any, models: Any = None, pagination: bool = True, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.models = models
        self.pagination = bool(pagination)
        self.stats = _new_stats()

    # -- model lookup ---------------------------------------------------------------
    def _lookup(self, url: str) -> tuple[Any, Any]:
        """(site model or None, the lock to hold while using it)."""
        store = self.models if self.models is not None else active_store()
        if store is None:
            return None, None
        if hasattr(store, "site_key") and hasattr(store, "get") and not isinstance(store, Mapping):
            key = store.site_key(url)
            model = store.get(key)
            lock = store.lock(key) if model is not None and hasattr(store, "lock") else None
            return model, lock
        if isinstance(store, Mapping):
            return store.get(host_key(url)), None
        return None, None

    # -- extraction -----------------------------------------------------------------
    def extract_links(self, response) -> list[Link]:
        links = super().extract_links(response)
        st = self.stats
        st["pages"] += 1
        st["links_seen"] += len(links)
        kept = self._filter(response, links)
        st["links_kept"] += len(kept)
        return kept

    def _filter(self, response, links: list[Link]) -> list[Link]:
        cleaner, lock = self._lookup(response.url)
        if cleaner is None or not links:
            return links
        # WISDOM needs two pages for any entropy (before that it cleans page by page)
        min_pages = 2 if getattr(cleaner, "method", None) == "wisdom" else 1
        if getattr(cleaner, "n_pages", 0) < min_pages:
            return links
        reasons = self.informative_urls(response, cleaner, lock)
        if reasons is None:
            return links
        st = self.stats
        st["pages_with_model"] += 1
        st["links_seen_with_model"] += len(links)
        kept = []
        for link in links:
            why = reasons.get(_norm(link.url))
            if why is not None:
                kept.append(link)
                st["kept_" + why] += 1
        st["links_kept_with_model"] += len(kept)
        return kept

    def informative_urls(self, response, cleaner, lock: Any = None) -> Optional[dict]:
        """Normalised URLs of the page's informative links, each with the first reason
        it is kept for: ``"link_block"``, ``"content"`` or ``"pagination"`` (None: the
        model cannot tell: a page on which nothing is informative)."""
        base = get_base_url(response)
        page = parse_html(response.text, url=base)
        with lock if lock is not None else contextlib.nullcontext():
            result = cleaner.clean(page)
        if result.status in _NOT_THE_MODELS or not any(b.label != NOISE for b in result.blocks):
            # nothing on the page is informative: a listing once the model has learnt
            # the site's other listings (every teaser's headline and first sentence
            # recur), or a page unlike the sample. The model cannot tell its links
            # apart, and dropping them all would cut the crawl off whatever the page
            # alone leads to. A page-level fallback's text (the model kept nothing of
            # a page with prose, or ran out of time) is no verdict of the model either.
            return None
        out: dict = {}
        for blk in result.link_blocks:
            for u in blk.get("links", ()):
                out.setdefault(_norm(u), "link_block")
        noise = {b.xpath for b in result.blocks if b.label == NOISE}
        kept_blocks = [b.xpath for b in result.blocks if b.label != NOISE]
        in_record: dict = {}
        page_url = response.url
        for a in page.root.iter("a", "area"):
            href = a.get("href")
            if not href:
                continue
            try:
                url = _norm(response.urljoin(href))
            except ValueError:
                continue
            if url in out:
                continue
            # the text block a link belongs to: its nearest block-level ancestor
            blk = a.getparent()
            while blk is not None and blk.tag not in BLOCK_TAGS and blk is not page.root:
                blk = blk.getparent()
            if blk is None or page.xpath_of(blk) not in noise or _record_is_content(page, blk, kept_blocks, in_record):
                out[url] = "content"
            elif self.pagination:
                text = normalize_space("".join(a.itertext())) if a.tag == "a" else a.get("alt", "")
                if is_pagination_link(page_url, url, text, a.get("rel") or ""):
                    out[url] = "pagination"
        return out


def _record_is_content(page: Any, blk: Any, kept_blocks: list[str], memo: dict) -> bool:
    """Whether a noise block is part of a record whose other blocks are content: a
    teaser's headline whose words recur elsewhere on the site (the same title on the
    home page, in a "most read" list) is judged template, while its summary beside it
    is not, and the headline holds the link to the article. The record is the block's
    parent element; the page root and body are no record."""
    parent = blk.getparent()
    if parent is None or parent is page.root or parent.tag in ("html", "body"):
        return False
    key = page.xpath_of(parent)
    if key not in memo:
        prefix = key + "/"
        memo[key] = any(x.startswith(prefix) for x in kept_blocks)
    return memo[key]


__all__ = ["InformativeLinkExtractor", "is_pagination_link", "same_series"]
