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

It is read from the page as parsed for cleaning (:class:`~sst_cleaner.engine._dom.PreparedPage`:
its cleaned body, and the head and JSON-LD scripts set aside before cleaning, see
:mod:`~sst_cleaner.engine._head`), so every cap of the page holds here too. The page is
untrusted, and metadata never costs a page its text:

* every field's value is capped (:data:`FIELD_CAPS`): text fields are cut at their cap;
  a URL, a language tag or an author name longer than its cap is dropped;
* a value that cannot be read (a date that is no date or out of range, a URL that does
  not parse, a value of the wrong type) is dropped and the next source is asked; so is
  a value whose reading raised anything at all. Each is counted (:class:`Metadata`
  ``.dropped``);
* at most :data:`MAX_HEAD_ELEMENTS` elements of the head, :data:`MAX_BODY_ELEMENTS`
  ``<meta>``/``<link>``/``<time>`` of the body, :data:`MAX_JSONLD_SCRIPTS` JSON-LD scripts
  of at most :data:`MAX_JSONLD_CHARS` characters in all (parsed as plain JSON) and
  :data:`MAX_JSONLD_NODES` of their objects are read; attribute values are read up to
  :data:`MAX_VALUE_CHARS` characters.
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional, Union
from urllib.parse import urljoin, urlsplit

from sst_cleaner.engine._dom import PreparedPage, as_page, normalize_space
from sst_cleaner.engine._limits import check_budget

try:  # built beside the engine where Cython, a compiler and lxml's headers were found
    from sst_cleaner.engine._walk import find_elements as _c_find_elements
except ImportError:
    _c_find_elements = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

FIELDS = ("title", "authors", "published", "modified", "language", "canonical_url", "site_name", "description")

#: the longest value kept per field, in characters (per name for ``authors``). Titles,
#: descriptions and site names are cut at their cap; a longer URL, language tag or name
#: is no such thing, and is dropped. Dates are short by construction.
FIELD_CAPS = {
    "title": 1_000,
    "description": 2_000,
    "site_name": 300,
    "language": 35,  # BCP 47's longest tag in practice
    "canonical_url": 4_096,
    "authors": 200,
}
#: author names kept
MAX_AUTHORS = 20
#: characters of one attribute value or JSON-LD string read (a field's cap is applied
#: after spaces are collapsed: this bounds that work)
MAX_VALUE_CHARS = 16_000
#: elements of the head read, and ``<meta>``/``<link>``/``<time>`` elements of the body
MAX_HEAD_ELEMENTS = 2_000
MAX_BODY_ELEMENTS = 2_000
#: ``<meta>`` elements with a ``content`` read (head, then body), as before
MAX_METAS = 500
#: JSON-LD: characters parsed in all (real scripts are a few kB), scripts read, objects visited
MAX_JSONLD_CHARS = 250_000
MAX_JSONLD_SCRIPTS = 20
MAX_JSONLD_NODES = 2_000

_ARTICLE_TYPES = re.compile(
    r"article|posting|report|review|recipe|webpage|creativework|"
    r"qapage|faqpage|aboutpage|scholarly|techarticle|newsarticle",
    re.I,
)


class Metadata(NamedTuple):
    """The fields (see the module docstring) and how many values were dropped."""

    fields: dict
    dropped: int


def empty_fields() -> dict:
    out: dict = dict.fromkeys(FIELDS)
    out["authors"] = []
    return out


def extract_metadata(
    html: Union[str, bytes, tuple, PreparedPage, None], url: Optional[str] = None, encoding: Optional[str] = None
) -> dict:
    """The metadata of one page (see the module docstring). ``html`` may be a str,
    bytes, a :class:`PreparedPage`, or the ``(url, html)`` / ``(url, bytes, encoding)``
    tuples ``SiteCleaner`` takes; it is parsed within the default limits."""
    if html is None or (isinstance(html, (str, bytes)) and not html.strip()):
        return empty_fields()
    if isinstance(html, tuple) and len(html) == 2:
        html = (html[0], html[1], encoding)
    try:
        page = as_page(html if isinstance(html, (tuple, PreparedPage)) else (url, html, encoding))
    except (TypeError, ValueError):
        return empty_fields()
    return read_metadata(page).fields


def read_metadata(page: PreparedPage) -> Metadata:
    """The metadata of a page as parsed for cleaning. Never raises (but a time budget's
    ``BaseException``): a value that cannot be read is dropped and counted."""
    reading = _Reading(page)
    out = empty_fields()
    sources = (reading.jsonld, reading.opengraph, reading.meta, reading.document)
    for name in FIELDS:
        check_budget()  # between fields: a source is read whole or not at all
        for source in sources:
            value = reading.value(name, source)
            if value:
                out[name] = value
                break
    return Metadata(out, reading.dropped)


class _Reading:
    """One page's metadata being read: its sources, made when first asked for, and the
    values dropped so far."""

    def __init__(self, page: PreparedPage):
        self.page = page
        self.dropped = 0
        self._sources: dict = {}
        self._metas: Optional[dict] = None
        self._elements: Optional[dict] = None

    def value(self, name: str, source: Callable[[], dict]) -> Any:
        """The field ``name`` from ``source``, checked and capped; None if it has none."""
        try:
            got = self._sources.get(source.__name__)
            if got is None:
                self._sources[source.__name__] = {}  # a source that raises is asked once
                got = self._sources[source.__name__] = source()
            getter = got.get(name)
            return self._checked(name, getter() if getter is not None else None)
        except Exception as exc:  # anything at all: the field is dropped, never the page
            self.dropped += 1
            logger.debug("metadata field %s dropped: %r", name, exc)
            return None

    def _checked(self, name: str, value: Any) -> Any:
        if value is None or value == "" or value == []:
            return None
        if name == "authors":
            names = [a for a in value if isinstance(a, str) and a and len(a) <= FIELD_CAPS["authors"]]
            self.dropped += len(value) - len(names)
            return names[:MAX_AUTHORS]
        if not isinstance(value, str):
            self.dropped += 1
            return None
        if name == "canonical_url":
            value = absolute_url(value, self.page.url)
        cap = FIELD_CAPS.get(name)
        if value is None or (cap is not None and len(value) > cap and name in ("language", "canonical_url")):
            self.dropped += 1
            return None
        return value[:cap].rstrip() if cap is not None else value

    def date(self, value: Optional[str]) -> Optional[str]:
        """``value`` as an ISO date (see :func:`parse_date`); an unreadable one is counted."""
        if not value:
            return None
        iso = parse_date(value)
        if iso is None:
            self.dropped += 1
        return iso

    # -- what the sources read -------------------------------------------------------
    def elements(self, tag: str) -> list:
        """The ``<meta>``, ``<link>``, ``<time>`` or ``<script>`` elements read, in document
        order: of the head (every kind), then of the body (no scripts: they are set aside
        as text), each part capped."""
        if self._elements is None:
            page = self.page
            found: dict = {"meta": [], "link": [], "time": [], "script": []}
            if page.head is not None:
                for el in islice(page.head.iter("meta", "link", "time", "script"), MAX_HEAD_ELEMENTS):
                    found[el.tag].append(el)
            body: Optional[Iterable] = None
            if _c_find_elements is not None:  # the same walk over libxml2's nodes
                body = _c_find_elements(page.root, _BODY_TAGS, None, None, MAX_BODY_ELEMENTS)
            if body is None:
                body = islice(page.root.iter("meta", "link", "time"), MAX_BODY_ELEMENTS)
            for el in body:
                found[el.tag].append(el)
            self._elements = found
        return self._elements[tag]

    def metas(self) -> dict:
        """``<meta>`` contents by lower-cased ``property``/``name``/``itemprop``/``http-equiv``,
        the first one wins."""
        if self._metas is None:
            out: dict = {}
            metas = (el for el in self.elements("meta") if el.get("content") is not None)
            for m in islice(metas, MAX_METAS):
                content = _text(m.get("content"))
                if not content:
                    continue
                for attr in ("property", "name", "itemprop", "http-equiv"):
                    key = (m.get(attr) or "")[:200].strip().lower()
                    if key and key not in out:
                        out[key] = content
            self._metas = out
        return self._metas

    # -- the sources, in the order of trust: each maps a field to how it is read -----------
    def jsonld(self) -> dict:
        main: Optional[dict] = None
        site: Optional[dict] = None
        for node in _jsonld_nodes(self._scripts()):
            types = _types(node).lower()
            if main is None and _ARTICLE_TYPES.search(types) and "website" not in types:
                main = node
            if site is None and "website" in types:
                site = node
        out: dict = {}
        if main is not None:
            m = main
            out["title"] = lambda: _str(m.get("headline")) or _str(m.get("name"))
            out["authors"] = lambda: _names(m.get("author")) or _names(m.get("creator"))
            out["published"] = lambda: self.date(_str(m.get("datePublished")) or _str(m.get("dateCreated")))
            out["modified"] = lambda: self.date(_str(m.get("dateModified")))
            out["language"] = lambda: _str(m.get("inLanguage"))
            out["description"] = lambda: _str(m.get("description"))
            out["site_name"] = lambda: next(iter(_names(m.get("publisher"))), None)
        if site is not None:
            s, publisher = site, out.get("site_name")
            out["site_name"] = lambda: _str(s.get("name")) or (publisher() if publisher else None)
            language = out.get("language")
            out["language"] = lambda: (language() if language else None) or _str(s.get("inLanguage"))
        return out

    def _scripts(self) -> Iterator[str]:
        """The JSON-LD scripts' text: the head's, then the body's."""
        for el in self.elements("script"):
            if "ld+json" in (el.get("type") or "").lower() and el.text:
                yield el.text
        yield from self.page.scripts

    def opengraph(self) -> dict:
        m = self.metas()
        return {
            "title": lambda: m.get("og:title"),
            "site_name": lambda: m.get("og:site_name"),
            "description": lambda: m.get("og:description"),
            "canonical_url": lambda: m.get("og:url"),
            "published": lambda: self.date(m.get("article:published_time")),
            "modified": lambda: self.date(m.get("article:modified_time") or m.get("og:updated_time")),
            # article:author is often a profile URL, which is not a name
            "authors": lambda: [a] if (a := m.get("article:author")) and not _is_web_url(a) else [],
            "language": lambda: (m.get("og:locale") or "").replace("_", "-") or None,
        }

    def meta(self) -> dict:
        m = self.metas()
        return {
            "title": lambda: m.get("twitter:title") or m.get("title") or m.get("dc.title"),
            "description": lambda: m.get("description") or m.get("twitter:description"),
            "authors": lambda: _meta_authors(m),
            "published": lambda: next((d for d in (self.date(m.get(k)) for k in _META_DATES) if d), None),
            "modified": lambda: next((d for d in (self.date(m.get(k)) for k in _META_MODIFIED) if d), None),
            "language": lambda: m.get("content-language") or m.get("language") or m.get("dc.language"),
            "site_name": lambda: m.get("application-name") or m.get("twitter:site:name"),
        }

    def document(self) -> dict:
        page = self.page
        return {
            "title": lambda: page.title or None,
            "language": lambda: _text(_html_lang(page)) or None,
            "canonical_url": lambda: _text(next(_canonical_links(self.elements("link")), "")) or None,
            "authors": lambda: _names(_author_texts(page.root)) if _marks_author(page.markup) else [],
            "published": lambda: self._time_published(),
            "modified": lambda: self.date(_first_datetime(self.elements("time"), _is_modified)),
        }

    def _time_published(self) -> Optional[str]:
        times = self.elements("time")
        for rule in (_is_published, _is_pubdate, _is_classed, _any_time):
            found = self.date(_first_datetime(times, rule))
            if found:
                return found
        return None


# -- reading values ------------------------------------------------------------------------


def _text(value: Any) -> str:
    """``value`` (a str) with spaces collapsed, read up to :data:`MAX_VALUE_CHARS`. A lone
    surrogate (JSON-LD's ``"\\ud800"``) becomes "?": the value must encode as UTF-8
    wherever it is written."""
    if not isinstance(value, str):
        return ""
    value = value[:MAX_VALUE_CHARS]
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    return normalize_space(value)


def _is_web_url(value: str) -> bool:
    return value.startswith(("http://", "https://"))


def absolute_url(href: str, base: Optional[str]) -> Optional[str]:
    """``href`` made absolute against ``base`` (when there is one); None if either does
    not parse as a URL (``http://[x/``)."""
    try:
        url = urljoin(base, href) if base else href
        urlsplit(url)
    except ValueError:
        return None
    return url


def _html_lang(page: PreparedPage) -> Optional[str]:
    html = page.root.getparent()
    if html is None:
        return None
    return html.get("lang") or html.get("xml:lang")


def _canonical_links(elements: list) -> Iterator[str]:
    for el in elements:
        if "canonical" in (el.get("rel") or "")[:200].split():
            href = el.get("href")
            if href is not None:
                yield href


_BODY_TAGS = (b"meta", b"link", b"time")
_AUTHOR_ATTRS = (b"rel", b"itemprop")
#: marked elements the compiled walk returns before the author texts are looked for in
#: Python instead (a page marking thousands of elements, most of them empty)
_AUTHOR_MARKED = 50


def _author_texts(root: Any, limit: int = 3) -> list[str]:
    """The first ``limit`` text nodes inside elements marked ``rel="author"`` or
    ``itemprop="author"``, in document order (each node once when marked elements nest).
    A walk that stops at the first ones: selecting every marked element and then their
    text in XPath merges node sets quadratically (100,000 marked elements: minutes)."""
    if _c_find_elements is not None:
        # the first marked elements found over libxml2's nodes, a proxy made for those
        # only; when they hold too few texts and there are more, the walk below is taken
        marked = _c_find_elements(root, None, _AUTHOR_ATTRS, "author", _AUTHOR_MARKED)
        if marked is not None:
            texts = _texts_of(marked, limit)
            if len(texts) == limit or len(marked) < _AUTHOR_MARKED:
                return texts
    return _texts_of((el for el in root.iter() if el.get("rel") == "author" or el.get("itemprop") == "author"), limit)


def _texts_of(marked: Iterable, limit: int) -> list[str]:
    """The first ``limit`` text nodes inside the ``marked`` elements (document order),
    each node once when they nest."""
    texts: list[str] = []
    taken: set = set()
    for el in marked:
        if taken and any(a in taken for a in el.iterancestors()):
            continue  # its text is its marked ancestor's
        taken.add(el)
        for text in el.itertext():
            texts.append(text)
            if len(texts) == limit:
                return texts
    return texts


#: what precedes a ``rel``/``itemprop`` value (attribute names are read in any case, as
#: the parser does)
_ATTR_BEFORE = re.compile(r"""(?:rel|itemprop)\s*=\s*["']?$""", re.I)
#: occurrences of "author" looked at before the tree is searched anyway
_MAX_AUTHOR_MARKS = 1_000


def _marks_author(markup: str) -> bool:
    """Whether ``markup`` may mark an author with ``rel="author"`` or
    ``itemprop="author"``: the XPath that finds them walks every element of the body,
    so the markup (found by C-level search) decides first whether it is worth it."""
    if not markup:  # a page made without its markup: search the tree
        return True
    i = markup.find("author")
    for _ in range(_MAX_AUTHOR_MARKS):
        if i == -1:
            return False
        if _ATTR_BEFORE.search(markup, max(0, i - 40), i):
            return True
        i = markup.find("author", i + 6)
    return True


def _first_datetime(times: list, rule: Callable[[Any], bool]) -> Optional[str]:
    """The ``datetime`` of the first ``<time>`` that has one and matches ``rule``."""
    for el in times:
        value = el.get("datetime")
        if value is not None and rule(el):
            return value
    return None


def _is_published(el: Any) -> bool:
    return el.get("itemprop") == "datePublished"


def _is_modified(el: Any) -> bool:
    return el.get("itemprop") == "dateModified"


def _is_pubdate(el: Any) -> bool:
    return el.get("pubdate") is not None


def _is_classed(el: Any) -> bool:
    cls = el.get("class") or ""
    return "publish" in cls or "posted" in cls


def _any_time(el: Any) -> bool:
    return True


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


def _meta_authors(m: dict) -> list[str]:
    for key in _META_AUTHORS:
        value = m.get(key)
        if value and not _is_web_url(value):
            # split on separators, then strip: a pattern with spaces on both sides of
            # the separator backtracks quadratically on long runs of spaces
            return [a.strip() for a in re.split(r"[,;]| and ", value) if a.strip()][:MAX_AUTHORS]
    return []


# -- JSON-LD ------------------------------------------------------------------------------


def _jsonld_nodes(scripts: Iterator[str]) -> Iterator[dict]:
    seen = 0
    budget = MAX_JSONLD_CHARS
    for raw in islice(scripts, MAX_JSONLD_SCRIPTS):
        if len(raw) > budget:
            continue
        budget -= len(raw)
        try:
            data = json.loads(raw.strip().rstrip(";"))
        except (ValueError, RecursionError):
            continue
        # breadth first, never queueing more than can still be visited: a list of
        # thousands of lists must not fill memory
        todo = deque([data])
        while todo and seen < MAX_JSONLD_NODES:
            node = todo.popleft()
            seen += 1
            if isinstance(node, dict):
                yield node
                node = node.get("@graph")
            if isinstance(node, list):
                todo.extend(node[: max(0, MAX_JSONLD_NODES - seen - len(todo))])


def _types(node: dict) -> str:
    t = node.get("@type")
    return " ".join(x[:200] for x in (t[:20] if isinstance(t, list) else [t]) if isinstance(x, str))


def _names(value: Any, limit: int = MAX_AUTHORS) -> list[str]:
    """Names out of a JSON-LD person/organisation value (a string, an object with a
    ``name``, or a list of them)."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items[:limit]:
        if isinstance(item, dict):
            item = item.get("name")
            if isinstance(item, list):
                item = item[0] if item else None
        name = _text(item)
        if name and name not in out:
            out.append(name)
    return out


def _str(value: Any) -> Optional[str]:
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict):
        value = value.get("@id") or value.get("url") or value.get("name")
    return _text(value) if isinstance(value, str) else None


# -- dates ---------------------------------------------------------------------------------

_ISO = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?)?"
)
_SLASHED = re.compile(r"(\d{4})[/.](\d{1,2})[/.](\d{1,2})")
_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})(?:T?(\d{2})(\d{2})(\d{2})?)?$")


def parse_date(value: Optional[str]) -> Optional[str]:
    """An ISO 8601 date (``YYYY-MM-DD``) or date-time from the forms pages use (ISO,
    ``YYYY/MM/DD``, ``YYYYMMDD``, RFC 2822); None if it is none of them or not a real
    date (out of range included)."""
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
    except (TypeError, ValueError, IndexError, OverflowError):  # a year of 20 digits overflows
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
                dt = dt.replace(tzinfo=timezone(sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5]))))
            except ValueError:
                return dt.date().isoformat()
    return dt.isoformat()
