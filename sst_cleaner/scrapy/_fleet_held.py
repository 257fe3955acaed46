"""Crash safety for the pages a fleet worker has parsed and not yet delivered.

A worker holds a page's items until its site has a model, then cleans them in the item
pipeline. If the worker dies (SIGKILL, OOM, a lost machine) the items it holds or cleans
die with it, and the fleet's shared duplicate filter (scrapy-redis's) has marked the
page's URL as seen, so no worker would crawl it again. So each page's request is
recorded in Redis (:meth:`RedisFleet.hold_page`, one hash per worker, next to a
heartbeat key the worker renews) before its callback runs, and the record is deleted
once every item the callback yielded is through the pipelines (``item_scraped``,
``item_dropped`` or ``item_error``): whenever the spider has yielded an item that is not
delivered yet, its page's record is in Redis. A worker whose heartbeat stops is dead,
and a live one takes its records (a Lua script: one taker per record) and schedules
those requests again with ``dont_filter`` (past the duplicate filter), so their items
are delivered once.

What is left: a callback that is not a generator has run (and made its items) before
the middleware sees its output, so its record is written after; a worker killed between
an item's delivery and the deletion of its page's record (one Redis round trip) has that
page crawled again, its items then delivered twice; and a page some of whose items were
delivered when its worker died has all of them delivered again.

A record is a request as JSON (never pickled): :func:`encode_request` keeps what
``Request.to_dict`` gives that JSON can carry (bytes as base64, meta values that are not
JSON are left out) and :func:`decode_request` reads it back as untrusted data: size
capped, a plain ``Request`` (a recorded class path is never imported), callbacks only
public methods of the spider.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Optional

from sst_cleaner.scrapy._redis_store import MAX_HELD_RECORD

#: meta key of a request scheduled again for a dead worker's held page
RECOVERED_META = "sst_recovered"

_BYTES = "__sst_bytes__"


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(type(value).__name__)


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_BYTES} and isinstance(value[_BYTES], str):
            return base64.b64decode(value[_BYTES].encode("ascii"), validate=True)
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def encode_request(request: Any, spider: Any) -> Optional[bytes]:
    """The request as a record, or None when it cannot be one (a callback that is not a
    spider method, a body or headers JSON cannot carry, over the size cap)."""
    try:
        data = request.to_dict(spider=spider)
    except ValueError:  # a callback that is not a method of the spider
        return None
    data.pop("_class", None)
    meta = {}
    for key, value in (data.pop("meta", None) or {}).items():
        try:
            meta[str(key)] = _jsonable(value)
        except TypeError:
            continue  # a value only this process can hold (a middleware's object)
    try:
        data = _jsonable(data)
    except TypeError:
        return None
    data["meta"] = meta
    raw = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return raw if len(raw) <= MAX_HELD_RECORD else None


def decode_request(raw: bytes, spider: Any) -> Any:
    """A record read back as a ``Request`` with ``dont_filter``; ValueError when it is not
    a record this module wrote."""
    from scrapy import Request

    if len(raw) > MAX_HELD_RECORD:
        raise ValueError("held-page record over the size cap")
    try:
        data = _from_json(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"held-page record is not JSON: {exc}"[:200]) from None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise ValueError("held-page record has no url")
    kwargs = {k: v for k, v in data.items() if k in Request.attributes and k not in ("callback", "errback")}
    for name in ("callback", "errback"):
        method = data.get(name)
        if method is None:
            continue
        if not isinstance(method, str) or method.startswith("_") or not callable(getattr(spider, method, None)):
            raise ValueError(f"held-page record names {name} {str(method)[:50]!r}, not a method of the spider")
        kwargs[name] = getattr(spider, method)
    if not isinstance(kwargs.get("meta", {}), dict):
        raise ValueError("held-page record's meta is not an object")
    kwargs["dont_filter"] = True
    kwargs["meta"] = dict(kwargs.get("meta") or {}, **{RECOVERED_META: True})
    try:
        return Request(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"held-page record is not a request: {exc}"[:200]) from None
