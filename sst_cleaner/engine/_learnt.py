"""Which pages a site model has learnt from, so that no page is learnt twice.

A model that learns the same page again counts its text twice as the site's: the page's
own words start to look like template, and every re-crawl with a saved model
(``SST_MODEL_DIR``) would make it worse. So a model keeps a key per learnt page and skips
a page whose key it has.

A page's key is its canonical URL (``<link rel="canonical">``) when it names one,
else the URL it was fetched from, else a hash of its content: a page fetched again
under another query string, or with a changed date line, is still the same page. A
canonical URL that points at the site's root from a deeper page is ignored: sites that
put one canonical on every page would otherwise be learnt from one page. Keys are stored
as 64-bit hashes (no URL is kept in the model file), at most :data:`MAX_LEARNT` per model,
the oldest forgotten first.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import Any, Iterable, Optional
from urllib.parse import urldefrag, urlsplit

from sst_cleaner.engine._metadata import absolute_url

#: keys kept per model (a crawl learns at most SST_MAX_MODEL_PAGES pages per site)
MAX_LEARNT = 10_000
#: the head of a page, where ``<link rel=canonical>`` belongs, is looked for this far
HEAD_BYTES = 256 * 1024

_HEAD_END = re.compile(rb"</head", re.I)
_LINK = re.compile(r"<link\b[^>]{0,2000}>", re.I)
_REL_CANONICAL = re.compile(r"""\brel\s*=\s*["']?[^"'>]{0,100}?\bcanonical\b""", re.I)
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]{0,4000})"|'([^']{0,4000})'|([^\s>]{1,4000}))""", re.I)
_HEX16 = re.compile(r"[0-9a-f]{16}")


def canonical_url(html: bytes, url: Optional[str] = None) -> Optional[str]:
    """The page's ``<link rel="canonical">`` URL (absolute, without fragment), if any."""
    # the head's end found on the bytes (lower-casing the decoded head cost more than the
    # rest of the search); latin-1 then maps each byte to one character: the markup's
    # ASCII is what is searched
    data = html[:HEAD_BYTES]
    end = _HEAD_END.search(data)
    head = (data[: end.start()] if end is not None else data).decode("latin-1")
    for tag in _LINK.finditer(head):
        text = tag.group(0)
        if not _REL_CANONICAL.search(text):
            continue
        m = _HREF.search(text)
        if not m:
            continue
        raw = m.group(1) or m.group(2) or m.group(3) or ""
        href = raw.encode("latin-1").decode("utf-8", "replace").strip()
        if not href:
            continue
        absolute = absolute_url(href, url)  # resolved as the metadata's canonical_url is
        return urldefrag(absolute)[0] if absolute is not None else None
    return None


def _is_root_of_other(canonical: str, url: Optional[str]) -> bool:
    try:
        c, u = urlsplit(canonical), urlsplit(url) if url else None
    except ValueError:
        return True
    return c.path in ("", "/") and not c.query and u is not None and u.path not in ("", "/")


def page_key(page: Any, url: Optional[str] = None) -> str:
    """The key of a page as ``SiteCleaner`` takes it (html str/bytes, ``(url, html)``,
    ``(url, bytes, encoding)`` or a ``PreparedPage``): canonical URL, else URL, else
    content."""
    if isinstance(page, tuple):
        url, page = page[0], page[1]
    if hasattr(page, "root"):  # a PreparedPage: the markup is gone, its text is what is left
        url = url or page.url
        page = "\x00".join(page.root.itertext())
    # canonical_url reads the first HEAD_BYTES bytes, and a character takes at least one:
    # a text is encoded whole only when its content is the key
    head = page[:HEAD_BYTES].encode("utf-8", "surrogatepass") if isinstance(page, str) else bytes(page)
    canonical = canonical_url(head, url)
    if canonical and not _is_root_of_other(canonical, url):
        ident = "canonical " + canonical
    elif url:
        ident = "url " + urldefrag(url)[0]
    else:
        body = page.encode("utf-8", "surrogatepass") if isinstance(page, str) else head
        ident = "content " + hashlib.sha256(body).hexdigest()
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class LearntPages:
    """The keys of the pages a model learnt, oldest first, at most ``limit``."""

    def __init__(self, keys: Iterable[str] = (), limit: int = MAX_LEARNT):
        self.limit = limit
        self._keys: OrderedDict[str, None] = OrderedDict()
        for key in keys:
            self.add(key)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: str) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self.limit:
            self._keys.popitem(last=False)

    def to_list(self) -> list[str]:
        return list(self._keys)

    @classmethod
    def from_list(cls, data: Any) -> "LearntPages":
        """Read the saved list; raises ``ValueError`` on anything but a list of keys."""
        if data is None:  # a model file from before pages were recorded
            return cls()
        if not isinstance(data, list) or len(data) > MAX_LEARNT:
            raise ValueError(f"'learnt_pages' must be a list of at most {MAX_LEARNT} keys")
        for key in data:
            if not isinstance(key, str) or not _HEX16.fullmatch(key):
                raise ValueError(f"bad key in 'learnt_pages': {str(key)[:40]!r}")
        return cls(data)
