"""The fuzzer's WARC cases: archives a hostile or broken crawl could hand the command
line (records cut, bytes flipped, members truncated, chunked bodies with bad sizes,
gzip bombs, error responses, non-HTML bodies), each fed through the CLI's own WARC
reading and cleaning path (``sst-cleaner site``), whose contract is a row per page or a
reported error, never an exception, a hang or a body read whole."""

from __future__ import annotations

import gzip
import os
import random
import tempfile
from typing import Optional

from sst_cleaner.tools._fuzz_cases import normal_page


def _record(url: str, http: bytes, version: str = "1.1") -> bytes:
    head = (
        f"WARC/{version}\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    )
    return head.encode() + http + b"\r\n\r\n"


def _http(rng: random.Random, body: bytes) -> bytes:
    status = rng.choice(["200 OK"] * 6 + ["404 Not Found", "301 Moved Permanently", "500 Oops", "", "abc"])
    ctype = rng.choice(["text/html; charset=utf-8"] * 5 + ["application/pdf", "text/html; charset=bogus", ""])
    extra = ""
    roll = rng.random()
    if roll < 0.25:  # chunked, sizes good or bad
        sizes = [rng.choice([len(body), -6, 0, 2**70, rng.randint(0, 2 * len(body) + 1)])]
        size = sizes[0]
        text = f"{size:x}" if size >= 0 else f"-{-size:x}"
        if rng.random() < 0.2:
            text = rng.choice(["zz", "", "1;ext=\x00", " " * 50])
        body = text.encode("latin-1") + b"\r\n" + body + b"\r\n0\r\n\r\n"
        extra = "Transfer-Encoding: chunked\r\n"
    elif roll < 0.45:  # gzip-encoded, sometimes a bomb, sometimes broken
        if rng.random() < 0.3:
            body = gzip.compress(b"<p>" + b"a" * rng.randint(1 << 20, 48 << 20), 9)
        else:
            body = gzip.compress(body)
        if rng.random() < 0.3:
            body = body[: rng.randint(0, len(body))]
        extra = f"Content-Encoding: {rng.choice(['gzip', 'deflate', 'x-gzip', 'br'])}\r\n"
    return f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n{extra}\r\n".encode("latin-1") + body


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice([0, 0, 1, 3, 20])):
        if not out:
            break
        what, at = rng.random(), rng.randrange(len(out))
        if what < 0.5:
            out[at] ^= 1 << rng.randrange(8)
        elif what < 0.8:
            del out[at : at + rng.randint(1, 400)]
        else:
            out[at:at] = rng.randbytes(rng.randint(1, 40))
    if rng.random() < 0.3:
        del out[rng.randint(0, len(out)) :]  # cut
    return bytes(out)


def gen_warc(rng: random.Random, scale: float) -> tuple[bytes, Optional[str]]:
    """A .warc or .warc.gz archive of a few records, damaged in one of many ways."""
    records = []
    for k in range(rng.randint(1, 6)):
        host = rng.choice(["a.test", "b.test"])
        records.append(_record(f"http://{host}/{k}", _http(rng, normal_page(rng, k).encode())))
    compress = rng.random() < 0.6
    parts = [gzip.compress(r, 1) if compress else r for r in records]
    data = _mutate(rng, b"".join(parts))
    return (b"\x1f\x8b" + data[2:] if compress and len(data) > 2 else data), None


def clean_warc(data: bytes) -> int:
    """``sst-cleaner site`` on the archive (in a temporary folder): its exit status."""
    from sst_cleaner.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.warc.gz" if data[:2] == b"\x1f\x8b" else "case.warc")
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            return main(["site", path, "--output", os.path.join(tmp, "out.jsonl")])
        except SystemExit as exc:  # a usage error (no page in the archive) exits 2
            return int(exc.code or 0)
