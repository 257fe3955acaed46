"""A small reader of WARC files (WARC/1.0 and 1.1, plain or gzip, one gzip member per
record as crawlers write them): the HTML pages a crawl stored.

    for page in read_warc(path_or_file):
        page.url, page.body, page.encoding

Only what the cleaner needs: ``response`` records with an HTTP response whose
``Content-Type`` is HTML (and ``resource`` records that are HTML themselves). Chunked
transfer encoding and gzip/deflate content encoding are undone. Everything else is
skipped. A record is read by its ``Content-Length``, so a truncated or corrupt archive
ends the walk with :class:`WarcError` (what was read before is kept) instead of reading
garbage; records larger than :data:`MAX_RECORD_BYTES` are skipped without being held in
memory.

Written here rather than taken from ``warcio``/``fastwarc``: reading HTML responses
is ~150 lines, and those libraries would add a dependency for features (writing,
indexing, every record type) the command line does not use.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union, cast

MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024


class WarcError(ValueError):
    """The archive is not WARC, or is cut or corrupt at some record."""


class WarcPage(NamedTuple):
    url: str
    body: bytes
    encoding: Optional[str]  # the charset the server declared, if any


def open_archive(source: Union[str, BinaryIO]) -> BinaryIO:
    """A readable binary stream of the archive's records, gunzipped if it is gzip
    (every member in turn: a record per member is one gzip stream to Python)."""
    fh = open(source, "rb") if isinstance(source, str) else source
    # any binary file with readinto() can be wrapped; the BinaryIO stub does not declare it
    buffered = fh if hasattr(fh, "peek") else io.BufferedReader(fh)  # type: ignore[type-var]
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        # a GzipFile is a binary file; its stub just does not derive from BinaryIO
        return cast(BinaryIO, gzip.GzipFile(fileobj=buffered))
    return buffered


def is_warc(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) starts a WARC archive."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 16)
        except zlib.error:
            return False
    return head.startswith(b"WARC/")


def _headers(stream: BinaryIO, limit: int = MAX_HEADER_BYTES) -> Optional[tuple[str, dict]]:
    """The first line and the headers (lower-cased names) up to the blank line; None
    at the end of the stream."""
    first = b""
    while not first.strip():  # blank lines between records
        first = stream.readline(limit)
        if not first:
            return None
    headers: dict = {}
    size = len(first)
    name = None
    while True:
        line = stream.readline(limit)
        size += len(line)
        if not line:
            raise WarcError("archive ends inside a record header")
        if size > limit:
            raise WarcError("record header too long")
        if line in (b"\r\n", b"\n"):
            return first.decode("latin-1").strip(), headers
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if text[:1] in (" ", "\t") and name:  # a folded header line
            headers[name] += " " + text.strip()
            continue
        name, _, value = text.partition(":")
        name = name.strip().lower()
        headers.setdefault(name, value.strip())


def _skip(stream: BinaryIO, n: int) -> None:
    while n > 0:
        chunk = stream.read(min(n, 1 << 20))
        if not chunk:
            raise WarcError("archive ends inside a record")
        n -= len(chunk)


def read_warc(source: Union[str, BinaryIO]) -> Iterator[WarcPage]:
    """The HTML pages of a WARC archive, in archive order."""
    stream = open_archive(source)
    while True:
        got = _headers(stream)
        if got is None:
            return
        version, headers = got
        if not version.startswith("WARC/"):
            raise WarcError(f"not a WARC record: {version[:40]!r}")
        try:
            length = int(headers.get("content-length", ""))
        except ValueError:
            raise WarcError("WARC record without a valid Content-Length") from None
        kind = headers.get("warc-type", "").lower()
        url = headers.get("warc-target-uri", "").strip("<>")
        if length < 0 or length > MAX_RECORD_BYTES or kind not in ("response", "resource"):
            _skip(stream, length)
            continue
        block = stream.read(length)
        if len(block) < length:
            raise WarcError("archive ends inside a record")
        page = _page(kind, url, headers, block)
        if page is not None:
            yield page


def _page(kind: str, url: str, headers: dict, block: bytes) -> Optional[WarcPage]:
    if kind == "resource":
        ctype = headers.get("content-type", "")
        return WarcPage(url, block, _charset(ctype)) if _is_html(ctype) else None
    if not headers.get("content-type", "").lower().startswith("application/http"):
        return None
    head, sep, body = block.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = block.partition(b"\n\n")
    lines = head.decode("latin-1").splitlines()
    if not lines or not lines[0].startswith("HTTP/"):
        return None
    http: dict = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        http.setdefault(name.strip().lower(), value.strip())
    ctype = http.get("content-type", "")
    if not _is_html(ctype):
        return None
    try:
        if "chunked" in http.get("transfer-encoding", "").lower():
            body = _dechunk(body)
        coding = http.get("content-encoding", "").lower()
        if coding in ("gzip", "x-gzip"):
            body = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, MAX_RECORD_BYTES)
        elif coding == "deflate":
            body = zlib.decompressobj().decompress(body, MAX_RECORD_BYTES)
    except (zlib.error, ValueError):
        return None  # a body that cannot be decoded is not a page
    return WarcPage(url, body, _charset(ctype))


def _is_html(ctype: str) -> bool:
    ctype = ctype.lower()
    return "text/html" in ctype or "application/xhtml" in ctype


def _charset(ctype: str) -> Optional[str]:
    for part in ctype.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def _dechunk(body: bytes) -> bytes:
    out, pos = [], 0
    while pos < len(body):
        end = body.find(b"\n", pos)
        if end == -1:
            break
        size = int(body[pos:end].split(b";")[0].strip() or b"0", 16)
        if size == 0:
            break
        out.append(body[end + 1 : end + 1 + size])
        pos = end + 1 + size + 2  # the chunk's CRLF
    return b"".join(out)


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
