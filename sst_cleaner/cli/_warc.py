"""Reading WARC files (WARC/1.0 and 1.1, plain or gzip): the HTML pages a crawl stored.

    for page in read_warc(path_or_file, max_body_bytes, skipped):
        page.url, page.body, page.encoding

Records are read by ``warcio``, one at a time (nothing holds the archive): it undoes
chunked transfer encoding and gzip/deflate content encoding as a stream, so a body is
read only up to ``max_body_bytes`` decoded (a gzip bomb costs that much, not its size).
Taken from warcio rather than FastWARC: FastWARC reads faster but hands back HTTP
bodies still chunked and gzip-encoded (decoding them is the part that went wrong
here) and ends silently at a cut member, where warcio raises, so damage can be counted.

Only ``response`` records with a 2xx HTTP response whose ``Content-Type`` is HTML (and
``resource`` records that are HTML themselves) are pages. A non-2xx response is counted
in ``skipped`` as ``http_error``, an HTML-typed body that is not HTML (a PDF, an image)
as ``not_html``; other records are not pages and are passed over. A cut or corrupt
archive ends the walk with :class:`WarcError` after every complete record before the
damage has been given.
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union

from sst_cleaner.engine._limits import Limits

# a body is read as far as the engine would look at it (the rest is never cleaned)
MAX_BODY_BYTES = Limits().max_page_bytes
# what a body that claims to be HTML starts with when it is a file of another kind
_NOT_HTML_MAGIC = (
    b"%PDF",
    b"PK\x03\x04",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"\x1f\x8b",
    b"OggS",
    b"\x00\x00\x01\x00",
)
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


class WarcError(ValueError):
    """The archive is not WARC, or is cut or corrupt at some record."""


class WarcPage(NamedTuple):
    url: str
    body: bytes
    encoding: Optional[str]  # the charset the server declared, if any


def is_warc(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) starts a WARC archive."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 16)
        except zlib.error:
            return False
    return head.startswith(b"WARC/")


def read_warc(
    source: Union[str, BinaryIO],
    max_body_bytes: int = MAX_BODY_BYTES,
    skipped: Optional[Counter] = None,
) -> Iterator[WarcPage]:
    """The HTML pages of a WARC archive, in archive order; see the module docstring."""
    if isinstance(source, str):
        with open(source, "rb") as fh:
            yield from _read_stream(fh, max_body_bytes, skipped)
    else:
        yield from _read_stream(source, max_body_bytes, skipped)


def _read_stream(fh: BinaryIO, max_body_bytes: int, skipped: Optional[Counter]) -> Iterator[WarcPage]:
    from warcio.archiveiterator import ArchiveIterator

    skipped = Counter() if skipped is None else skipped
    try:
        records = ArchiveIterator(fh)
        for record in records:
            if not record.format.startswith("warc"):
                raise WarcError("not a WARC record")
            status, page = _page(record, max_body_bytes)
            records.read_to_end(record)
            if getattr(record.raw_stream, "limit", 0) > 0:
                raise WarcError("archive ends inside a record")
            if status:
                skipped[status] += 1
            elif page is not None:
                yield page
    except WarcError:
        raise
    except Exception as exc:  # warcio, zlib and gzip each raise their own kind on damage
        raise WarcError(f"cut or corrupt archive: {exc!r}"[:200]) from None


def _page(record, max_body_bytes: int) -> tuple[str, Optional[WarcPage]]:
    """("", page) for a page, (status, None) for a counted skip, ("", None) for a
    record that is not a page at all."""
    url = (record.rec_headers.get_header("WARC-Target-URI") or "").strip("<>")
    if record.rec_type == "resource":
        ctype = record.rec_headers.get_header("Content-Type") or ""
    elif record.rec_type == "response" and record.http_headers is not None:
        ctype = record.http_headers.get_header("Content-Type") or ""
        code = record.http_headers.get_statuscode() or ""
        if not code.startswith("2"):
            return "http_error", None  # an error page or a redirect: not the site's content
    else:
        return "", None
    if not _is_html(ctype):
        return "", None
    try:
        body = record.content_stream().read(max_body_bytes)
    except Exception:  # an encoded body that cannot be decoded (each decoder raises its own kind)
        return "not_html", None
    if _looks_binary(body):
        return "not_html", None
    return "", WarcPage(url, body, _charset(ctype))


def _looks_binary(body: bytes) -> bool:
    head = body[:1024].lstrip()
    if head.startswith(_NOT_HTML_MAGIC):
        return True
    return b"\x00" in head and not head.startswith(_BOMS)


def _is_html(ctype: str) -> bool:
    ctype = ctype.lower()
    return "text/html" in ctype or "application/xhtml" in ctype


def _charset(ctype: str) -> Optional[str]:
    for part in ctype.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def write_record(
    fh: BinaryIO,
    url: str,
    html: bytes,
    content_type: str = "text/html; charset=utf-8",
    compress: bool = False,
    version: str = "1.1",
) -> None:
    """Append one ``response`` record (an HTTP 200 carrying ``html``): what a crawler
    stores, for tests and small tools."""
    http = (
        f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(html)}\r\n\r\n".encode("latin-1")
        + html
    )
    head = (
        f"WARC/{version}\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    )
    record = head.encode("utf-8") + http + b"\r\n\r\n"
    fh.write(gzip.compress(record) if compress else record)
