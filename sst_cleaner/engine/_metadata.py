"""A page's metadata from its markup: JSON-LD, OpenGraph, ``<meta>``, ``<link>`` and
``<time>``.

    extract_metadata(html, url=None) -> {"title", "authors", "published", "modified",
                                         "language", "canonical_url", "site_name",
                                         "description"}

Each field takes the first source that has it, in the order publishers maintain them
best: JSON-LD (what search engines read, so it is the most often right), then
OpenGraph (what social sites read), then plain ``<meta>`` names and the document itself
(``<html lang>``, ``<title>``, ``<time datetime>``). A field no source has is ``None``
(``authors``: an empty list). Dates are ISO 8601 (``2024-03-01`` or
``2024-03-01T09:30:00+01:00``); a date string that cannot be read is left out rather
than guessed.

The page is untrusted: JSON-LD scripts are size-capped and parsed as plain JSON, walks
over them are bounded, and nothing here raises on bad markup.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Iterator, Optional, Union
from urllib.parse import urljoin

from parsel import Selector

from sst_cleaner.engine._dom import decode_html, normalize_space

FIELDS = ("title", "authors", "published", "modified", "language", "canonical_url", "site_name", "description")

#: JSON-LD scripts longer than this are skipped (real ones are a few kB)
MAX_JSONLD_CHARS = 1_000_000
MAX_JSONLD_SCRIPTS = 20
#: JSON-LD objects visited per page (``@graph`` lists can be long; hostile ones longer)
MAX_JSONLD_NODES = 2_000
MAX_PAGE_CHARS = 5_000_000

_ARTICLE_TYPES = re.compile(
    r"article|posting|report|review|recipe|webpage|creativework|"
    r"qapage|faqpage|aboutpage|scholarly|techarticle|newsarticle",
    re.I,
)


def extract_metadata(
    html: Union[str, bytes, tuple, None], url: Optional[str] = None, encoding: Optional[str] = None
) -> dict:
    """The metadata of one page (see the module docstring). ``html`` may be a str,
    bytes, or the ``(url, html)`` / ``(url, bytes, encoding)`` tuples ``SiteCleaner``
    takes."""
    if isinstance(html, tuple):
        url, html, encoding = (html + (None,))[:3] if len(html) == 2 else html
    if isinstance(html, bytes):
        html = decode_html(html[:MAX_PAGE_CHARS], encoding)
    out: dict = {f: None for f in FIELDS}
    out["authors"] = []
    if not isinstance(html, str) or not html.strip():
        return out
    try:
        sel = Selector(text=html[:MAX_PAGE_CHARS].replace("\x00", ""), type="html")
    except Exception:  # parsel/lxml refuse some inputs outright: no metadata
        return out
    sources = [_from_jsonld(sel), _from_opengraph(sel), _from_meta(sel), _from_document(sel)]
    for name in FIELDS:
        for src in sources:
            value = src.get(name)
            if value:
                out[name] = value
                break
    if out["canonical_url"] and url:
        out["canonical_url"] = urljoin(url, out["canonical_url"])
    return out


# -- JSON-LD ------------------------------------------------------------------------------


def _jsonld_nodes(sel: Selector) -> Iterator[dict]:
    seen = 0
    for raw in sel.xpath('//script[contains(translate(@type, "LDJSON", "ldjson"), "ld+json")]/text()').getall()[
        :MAX_JSONLD_SCRIPTS
    ]:
        if len(raw) > MAX_JSONLD_CHARS:
            continue
        try:
            data = json.loads(raw.strip().rstrip(";"))
        except (ValueError, RecursionError):
            continue
        todo = [data]
        while todo and seen < MAX_JSONLD_NODES:
            node = todo.pop(0)
            seen += 1
            if isinstance(node, list):
                todo.extend(node)
            elif isinstance(node, dict):
                yield node
                graph = node.get("@graph")
                if isinstance(graph, list):
                    todo.extend(graph)


def _types(node: dict) -> str:
    t = node.get("@type")
    return " ".join(x for x in (t if isinstance(t, list) else [t]) if isinstance(x, str))


def _names(value: Any, limit: int = 20) -> list[str]:
    """Names out of a JSON-LD person/organisation value (a string, an object with a
    ``name``, or a list of them)."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items[:limit]:
        if isinstance(item, dict):
            item = item.get("name")
            if isinstance(item, list):
                item = item[0] if item else None
        if isinstance(item, str):
            name = normalize_space(item)
            if name and name not in out:
                out.append(name)
    return out


def _str(value: Any) -> Optional[str]:
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict):
        value = value.get("@id") or value.get("url") or value.get("name")
    return normalize_space(value) if isinstance(value, str) else None


def _from_jsonld(sel: Selector) -> dict:
    main: Optional[dict] = None
    site: Optional[dict] = None
    for node in _jsonld_nodes(sel):
        types = _types(node)
        if main is None and _ARTICLE_TYPES.search(types) and "website" not in types.lower():
            main = node
        if site is None and "website" in types.lower():
            site = node
    out: dict = {}
    if main is not None:
        out["title"] = _str(main.get("headline")) or _str(main.get("name"))
        out["authors"] = _names(main.get("author")) or _names(main.get("creator"))
        out["published"] = parse_date(_str(main.get("datePublished")) or _str(main.get("dateCreated")))
        out["modified"] = parse_date(_str(main.get("dateModified")))
        out["language"] = _str(main.get("inLanguage"))
        out["description"] = _str(main.get("description"))
        publisher = _names(main.get("publisher"))
        out["site_name"] = publisher[0] if publisher else None
    if site is not None:
        out["site_name"] = _str(site.get("name")) or out.get("site_name")
        out["language"] = out.get("language") or _str(site.get("inLanguage"))
    return out


# -- OpenGraph and <meta> ------------------------------------------------------------------


def _metas(sel: Selector) -> dict:
    """``<meta>`` contents by lower-cased ``property``/``name``/``itemprop``, first wins."""
    out: dict = {}
    for m in sel.xpath("//meta[@content]")[:500]:
        content = normalize_space(m.attrib.get("content", ""))
        if not content:
            continue
        for attr in ("property", "name", "itemprop", "http-equiv"):
            key = (m.attrib.get(attr) or "").strip().lower()
            if key and key not in out:
                out[key] = content
    return out


def _from_opengraph(sel: Selector) -> dict:
    m = _metas(sel)
    author = m.get("article:author")
    return {
        "title": m.get("og:title"),
        "site_name": m.get("og:site_name"),
        "description": m.get("og:description"),
        "canonical_url": m.get("og:url"),
        "published": parse_date(m.get("article:published_time")),
        "modified": parse_date(m.get("article:modified_time") or m.get("og:updated_time")),
        # article:author is often a profile URL, which is not a name
        "authors": [author] if author and not author.startswith(("http://", "https://")) else [],
        "language": (m.get("og:locale") or "").replace("_", "-") or None,
    }


_META_DATES = (
    "datepublished",
    "article.published",
    "pubdate",
    "publishdate",
    "publish-date",
    "citation_publication_date",
    "dc.date.issued",
    "dc.date",
    "dcterms.date",
    "dcterms.created",
    "date",
    "sailthru.date",
    "parsely-pub-date",
)
_META_MODIFIED = ("datemodified", "article.updated", "dcterms.modified", "last-modified", "lastmod")
_META_AUTHORS = ("author", "dc.creator", "citation_author", "sailthru.author", "parsely-author", "article:author")


def _from_meta(sel: Selector) -> dict:
    m = _metas(sel)
    authors: list[str] = []
    for key in _META_AUTHORS:
        value = m.get(key)
        if value and not value.startswith(("http://", "https://")):
            # split on separators, then strip: a pattern with spaces on both sides of
            # the separator backtracks quadratically on long runs of spaces
            authors = [a.strip() for a in re.split(r"[,;]| and ", value) if a.strip()][:20]
            break
    return {
        "title": m.get("twitter:title") or m.get("title") or m.get("dc.title"),
        "description": m.get("description") or m.get("twitter:description"),
        "authors": authors,
        "published": next((d for d in (parse_date(m.get(k)) for k in _META_DATES) if d), None),
        "modified": next((d for d in (parse_date(m.get(k)) for k in _META_MODIFIED) if d), None),
        "language": m.get("content-language") or m.get("language") or m.get("dc.language"),
        "site_name": m.get("application-name") or m.get("twitter:site:name"),
    }


def _from_document(sel: Selector) -> dict:
    title = normalize_space(" ".join(sel.xpath("//title[1]//text()").getall()))
    published = None
    for xp in (
        '//time[@itemprop="datePublished"]/@datetime',
        "//time[@pubdate]/@datetime",
        '//time[contains(@class, "publish") or contains(@class, "posted")]/@datetime',
        "//time/@datetime",
    ):
        published = parse_date(sel.xpath(xp).get())
        if published:
            break
    modified = parse_date(sel.xpath('//time[@itemprop="dateModified"]/@datetime').get())
    return {
        "title": title or None,
        "language": normalize_space(sel.xpath("/html/@lang").get() or sel.xpath("/html/@xml:lang").get() or "") or None,
        "canonical_url": normalize_space(
            sel.xpath('//link[contains(concat(" ", normalize-space(@rel), " "), " canonical ")]/@href').get() or ""
        )
        or None,
        "authors": _names(sel.xpath('//*[@rel="author" or @itemprop="author"]//text()').getall()[:3]),
        "published": published,
        "modified": modified,
    }


# -- dates ---------------------------------------------------------------------------------

_ISO = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?)?"
)
_SLASHED = re.compile(r"(\d{4})[/.](\d{1,2})[/.](\d{1,2})")
_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})(?:T?(\d{2})(\d{2})(\d{2})?)?$")


def parse_date(value: Optional[str]) -> Optional[str]:
    """An ISO 8601 date (``YYYY-MM-DD``) or date-time from the forms pages use (ISO,
    ``YYYY/MM/DD``, ``YYYYMMDD``, RFC 2822); None if it is none of them or not a real
    date."""
    if not value or not isinstance(value, str):
        return None
    value = value.strip()[:64]
    m = _ISO.match(value)
    if m:
        y, mo, d, hh, mi, ss, tz = m.groups()
        return _iso(y, mo, d, hh, mi, ss, tz)
    m = _SLASHED.match(value)
    if m:
        return _iso(*m.groups())
    m = _COMPACT.match(value)
    if m:
        return _iso(*m.groups())
    try:
        dt = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return dt.isoformat() if dt.tzinfo else dt.date().isoformat()


def _iso(
    y: str,
    mo: str,
    d: str,
    hh: Optional[str] = None,
    mi: Optional[str] = None,
    ss: Optional[str] = None,
    tz: Optional[str] = None,
) -> Optional[str]:
    try:
        if hh is None:
            return datetime(int(y), int(mo), int(d)).date().isoformat()
        dt = datetime(int(y), int(mo), int(d), int(hh), int(mi), int(ss or 0))  # type: ignore[arg-type]
    except ValueError:
        return None
    if tz:
        if tz == "Z":
            dt = dt.replace(tzinfo=timezone.utc)
        else:
            tz = tz.replace(":", "")
            sign = 1 if tz[0] == "+" else -1
            try:
                from datetime import timedelta

                dt = dt.replace(tzinfo=timezone(sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5]))))
            except ValueError:
                return dt.date().isoformat()
    return dt.isoformat()
