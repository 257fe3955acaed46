"""The Redis side of a fleet of crawl processes sharing site models (``SST_MODEL_STORE``).

Everything here is synchronous and meant to run in a thread, never on the reactor
thread: :mod:`sst_cleaner.scrapy._fleet` calls it from its own small thread pool. Only this
module imports the ``redis`` client (``pip install sst-cleaner[redis]``), and only when a
crawl sets ``SST_MODEL_STORE``.
Its settings (``SST_MODEL_STORE``, ``SST_REDIS_*``: :class:`RedisConfig`) are described
with the others in :mod:`sst_cleaner.scrapy._settings`.

Keys, for one site (``H`` = the first 32 hex digits of sha256(site key): a host string
never becomes part of a key, whatever it holds; ``NS`` = the crawl's namespace,
``SST_REDIS_NAMESPACE``, by default its project and spider; ``ID`` = the model's identity,
a hash of its method, its parameters and its sample size, see :class:`ModelIdentity`)::

    PREFIX:NS:ID:site:{H}:sample   list of sample pages (zlib-compressed, see encode_page)
    PREFIX:NS:ID:site:{H}:urls     set of sha1(url) of the sampled pages (one copy per page)
    PREFIX:NS:ID:site:{H}:bytes    bytes in the sample list
    PREFIX:NS:ID:site:{H}:lock     the builder's token (SET NX PX, renewed while it fits)
    PREFIX:NS:ID:site:{H}:model    hash: json (the model file format), version, pages,
                                   builder, and the identity: method, params (fingerprint),
                                   sample_pages
    PREFIX:sample-bytes            bytes in all sample lists together (the total cap)

and, for the pages whose items a worker holds (crash safety, ``W`` = a hash of the
worker's id, one per process)::

    PREFIX:NS:held:W      hash: one entry per held page, its request as JSON
    PREFIX:NS:alive:W     the worker's heartbeat (SET PX, renewed while it runs)
    PREFIX:NS:workers     set of the W that may have held pages

Why the identity is in the key: two crawls on one Redis with other methods, parameters or
sample sizes would otherwise find each other's model, reject it and delete it in turn;
each keeps its own model instead, and a crawl of the same identity reuses it.

Why Lua scripts: each decision ("is there room for this page?", "am I still the
builder?") reads and writes several keys, and two workers must never both win it.
Redis runs a script atomically, so no WATCH retry loop is needed for these.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from dataclasses import dataclass
from typing import Any, Optional, cast

from sst_cleaner.engine._model_file import check_model
from sst_cleaner.engine._model_io import ModelFormatError, _finite_float, _reject_constant
from sst_cleaner.scrapy._redact import redact_text, redact_url
from sst_cleaner.scrapy._settings import RedisConfig

logger = logging.getLogger(__name__)

#: a sample page's url and encoding are short; anything longer is not a page we sent
_MAX_URL = 8192
_MAX_ENCODING = 64
#: a model's version is a counter the scripts below write; a longer value is not ours
_MAX_VERSION = 20
#: the identity fields of a model hash are short: a longer value is not read
_MAX_IDENTITY = 200


@dataclass(frozen=True)
class ModelIdentity:
    """What makes two crawls' models of a site interchangeable: the method, its parameters
    (as a fingerprint: SST_PARAMS may be long) and the sample size it is fitted on."""

    method: str
    params: str
    sample_pages: int

    @classmethod
    def of(cls, method: str, params: dict, sample_pages: int) -> "ModelIdentity":
        canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), default=repr)
        return cls(method, hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16], sample_pages)

    @property
    def tag(self) -> str:
        """The identity as a key part (a method name may hold any character)."""
        text = f"{self.method}\0{self.params}\0{self.sample_pages}"
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def fields(self) -> list[str]:
        return [self.method[:_MAX_IDENTITY], self.params, str(self.sample_pages)]


def site_hash(site_key: str) -> str:
    return hashlib.sha256(site_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# -- sample pages on the wire ------------------------------------------------------------


def encode_page(url: str, body: bytes, encoding: Optional[str]) -> bytes:
    """One sample page as stored: zlib(header JSON + newline + body). Compressed because
    the sample of every site in the fleet sits in Redis's memory until its model exists
    (HTML compresses well)."""
    header = json.dumps({"u": url, "e": encoding}, ensure_ascii=True).encode("ascii")
    return zlib.compress(header + b"\n" + body, 1)


def decode_page(raw: bytes, max_bytes: int) -> tuple[str, bytes, Optional[str]]:
    """(url, body, encoding) of a stored sample page. The entry is untrusted: it is
    inflated to at most ``max_bytes`` (no zlib bomb) and its header checked."""
    inflater = zlib.decompressobj()
    data = inflater.decompress(raw, max_bytes + _MAX_URL + 256)
    if inflater.unconsumed_tail or not inflater.eof:  # more to inflate, or cut short
        raise ValueError("sample page over the size cap, or cut")
    head, sep, body = data.partition(b"\n")
    if len(body) > max_bytes:
        raise ValueError("sample page over the size cap")
    if not sep or len(head) > _MAX_URL + 256:
        raise ValueError("sample page without a header")
    header = json.loads(head.decode("ascii"))
    if not isinstance(header, dict):
        raise ValueError("sample page header is not an object")
    url, encoding = header.get("u"), header.get("e")
    if not isinstance(url, str) or not url or len(url) > _MAX_URL:
        raise ValueError("sample page url is not a string")
    if encoding is not None and (not isinstance(encoding, str) or len(encoding) > _MAX_ENCODING):
        raise ValueError("sample page encoding is not a short string")
    return url, body, encoding


def model_json(data: dict) -> bytes:
    """A model dict (``to_dict``) as a model key's ``json`` field."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def parse_model_json(raw: bytes, max_bytes: int) -> dict:
    """The model dict in a model key's ``json`` field: the same checks as a model file
    (size cap, UTF-8 JSON, no NaN/Infinity, the model schema of ``model_file``);
    :meth:`SiteCleaner.from_dict` then checks its state. Never unpickled, never evaluated."""
    if len(raw) > max_bytes:
        raise ModelFormatError(f"shared model is {len(raw)} bytes, over the {max_bytes} limit")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except ModelFormatError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFormatError(f"shared model is not valid JSON: {exc}"[:300]) from exc
    if not isinstance(data, dict):
        raise ModelFormatError("shared model is not a JSON object")
    check_model(data)  # the schema every model file must pass
    return data


# -- scripts -----------------------------------------------------------------------------

# KEYS: sample, urls, bytes, total, model. ARGV: entry, url hash, sample pages, site cap,
# total cap, ttl ms, the entry's size (its page's bytes, or more). -> {status, pages in the sample}
_PUSH = """
if redis.call('EXISTS', KEYS[5]) == 1 then return {'model', 0} end
local n = redis.call('LLEN', KEYS[1])
if n >= tonumber(ARGV[3]) then return {'full', n} end
if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then return {'dup', n} end
local size = tonumber(ARGV[7])
local site = tonumber(redis.call('GET', KEYS[3]) or '0')
local total = tonumber(redis.call('GET', KEYS[4]) or '0')
if site + size > tonumber(ARGV[4]) then return {'capped', n} end
if total + size > tonumber(ARGV[5]) then return {'total', n} end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('INCRBY', KEYS[3], size)
redis.call('INCRBY', KEYS[4], size)
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[6]) end
n = n + 1
if n >= tonumber(ARGV[3]) then return {'filled', n} end
return {'added', n}
"""

# Every script reads a model's version only when it is a short field (HSTRLEN first):
# a planted long value is neither copied into the script nor sent to a worker.
# KEYS: lock, model, sample. ARGV: token, lock ttl ms, the version's length cap.
# -> {state, detail}
_CLAIM = """
local t = redis.call('TYPE', KEYS[2]).ok
if t == 'hash' then
  local n = redis.call('HSTRLEN', KEYS[2], 'version')
  if n > 0 and n <= tonumber(ARGV[3]) then return {'model', redis.call('HGET', KEYS[2], 'version')} end
  return {'model', ''}
elseif t ~= 'none' then
  return {'model', ''}
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'lock', ''} end
return {'busy', tostring(redis.call('PTTL', KEYS[1]))}
"""

# KEYS: lock. ARGV: token, ttl ms.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# KEYS: lock, model, sample, urls, bytes, total. ARGV: token, json, pages, builder, model ttl ms,
# the version's length cap, method, params fingerprint, sample pages.
# -> the new version, or 0 when the lock is no longer this builder's
_PUBLISH = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'hash' and t ~= 'none' then redis.call('DEL', KEYS[2]) end
local v = 1
if redis.call('HSTRLEN', KEYS[2], 'version') <= tonumber(ARGV[6]) then
  v = (tonumber(redis.call('HGET', KEYS[2], 'version') or '0') or 0) + 1
end
redis.call('HSET', KEYS[2], 'json', ARGV[2], 'pages', ARGV[3], 'builder', ARGV[4], 'version', v,
           'method', ARGV[7], 'params', ARGV[8], 'sample_pages', ARGV[9])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
local site = tonumber(redis.call('GET', KEYS[5]) or '0')
if site > 0 and redis.call('EXISTS', KEYS[6]) == 1 then
  if tonumber(redis.call('DECRBY', KEYS[6], site)) <= 0 then redis.call('DEL', KEYS[6]) end
end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[5])
return v
"""

# KEYS: model. ARGV: the version the new model was merged into, json, pages, builder,
# model ttl ms. -> the new version, or 0 when another worker replaced it meanwhile
_REPLACE = """
if redis.call('TYPE', KEYS[1]).ok ~= 'hash'
   or redis.call('HSTRLEN', KEYS[1], 'version') ~= string.len(ARGV[1])
   or redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then
  return 0
end
local v = (tonumber(ARGV[1]) or 0) + 1
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'pages', ARGV[3], 'builder', ARGV[4], 'version', v)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return v
"""

# KEYS: lock. ARGV: token.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: model. ARGV: the version that was rejected ('' for a value without one).
_DROP_MODEL = """
if ARGV[1] == '' or (redis.call('TYPE', KEYS[1]).ok == 'hash'
                     and redis.call('HSTRLEN', KEYS[1], 'version') == string.len(ARGV[1])
                     and redis.call('HGET', KEYS[1], 'version') == ARGV[1]) then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


# KEYS: model. ARGV: the model's byte cap, the version's length cap, the identity fields' cap.
# -> {'ok', version, json, method, params, sample_pages} | {'gone', version} (no json field)
#    | {'type', Redis type} | {'version', its length} | {'big', json bytes}
# An identity field longer than its cap is sent as '?' (not ours: the model is not used).
# One script, so the sizes checked are the sizes of the values sent.
_READ_MODEL = """
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return {'gone', ''} end
if t ~= 'hash' then return {'type', t} end
local n = redis.call('HSTRLEN', KEYS[1], 'version')
if n > tonumber(ARGV[2]) then return {'version', tostring(n)} end
local size = redis.call('HSTRLEN', KEYS[1], 'json')
if size > tonumber(ARGV[1]) then return {'big', tostring(size)} end
local v = redis.call('HGET', KEYS[1], 'version') or ''
local json = redis.call('HGET', KEYS[1], 'json')
if not json then return {'gone', v} end
local ident = {}
for i, name in ipairs({'method', 'params', 'sample_pages'}) do
  if redis.call('HSTRLEN', KEYS[1], name) <= tonumber(ARGV[3]) then
    ident[i] = redis.call('HGET', KEYS[1], name) or ''
  else
    ident[i] = '?'
  end
end
return {'ok', v, json, ident[1], ident[2], ident[3]}
"""

# KEYS: sample. ARGV: most entries, the sample's byte cap. -> {entries left out, entry...}:
# the first entries whose sizes together fit the cap (an entry that would not fit is left
# out), so a sample planted past the cap never crosses the network.
_READ_SAMPLE = """
if redis.call('TYPE', KEYS[1]).ok ~= 'list' then return {0} end
local n = math.min(redis.call('LLEN', KEYS[1]), tonumber(ARGV[1]))
local cap, total, out = tonumber(ARGV[2]), 0, {0}
for i = 0, n - 1 do
  local entry = redis.call('LINDEX', KEYS[1], i)
  local size = string.len(entry)
  if total + size <= cap then
    total = total + size
    out[#out + 1] = entry
  else
    out[1] = out[1] + 1
  end
end
return out
"""


#: a held page's request as stored; a bigger one is not recorded (or not read)
MAX_HELD_RECORD = 64 * 1024

# KEYS: workers, held hash of the dead worker, its heartbeat. ARGV: most entries, a record's
# cap, the worker's key part. -> the records taken (and deleted), unless the worker is alive.
# One script, so two live workers never both take one record.
_ADOPT = """
if redis.call('EXISTS', KEYS[3]) == 1 then return {} end
if redis.call('TYPE', KEYS[2]).ok ~= 'hash' then
  redis.call('DEL', KEYS[2])
  redis.call('SREM', KEYS[1], ARGV[3])
  return {}
end
local out = {}
local fields = redis.call('HKEYS', KEYS[2])
for i = 1, math.min(#fields, tonumber(ARGV[1])) do
  if redis.call('HSTRLEN', KEYS[2], fields[i]) <= tonumber(ARGV[2]) then
    out[#out + 1] = redis.call('HGET', KEYS[2], fields[i])
  end
  redis.call('HDEL', KEYS[2], fields[i])
end
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SREM', KEYS[1], ARGV[3]) end
return out
"""


class ForeignModel(ModelFormatError):
    """A model of another identity under this crawl's key (written by something else):
    never used, never deleted."""


class RedisFleet:
    """The fleet's shared state for site models, over one Redis connection pool.

    Every method may raise ``redis.RedisError`` (down, timeout...) or ``OSError``: the
    caller decides what that means for the crawl (:mod:`sst_cleaner.scrapy._fleet` goes local).
    """

    def __init__(self, config: RedisConfig, client: Any = None, identity: Optional[ModelIdentity] = None):
        try:
            import redis  # only here: a crawl without SST_MODEL_STORE never imports it
        except ImportError as exc:
            raise ImportError("SST_MODEL_STORE needs the redis client: pip install 'sst-cleaner[redis]'") from exc

        self.config = config
        self.identity = identity
        self.client = client if client is not None else _client(redis, config)
        self._push = self.client.register_script(_PUSH)
        self._claim = self.client.register_script(_CLAIM)
        self._renew = self.client.register_script(_RENEW)
        self._publish = self.client.register_script(_PUBLISH)
        self._release = self.client.register_script(_RELEASE)
        self._drop = self.client.register_script(_DROP_MODEL)
        self._replace = self.client.register_script(_REPLACE)
        self._read_model = self.client.register_script(_READ_MODEL)
        self._read_sample = self.client.register_script(_READ_SAMPLE)
        self._adopt = self.client.register_script(_ADOPT)

    # -- keys
    def key(self, site: str, what: str) -> str:
        parts = [self.config.prefix, self.config.namespace, self.identity.tag if self.identity else ""]
        return ":".join(p for p in parts if p) + f":site:{{{site_hash(site)}}}:{what}"

    def keys(self, site: str, *whats: str) -> list[str]:
        return [self.key(site, what) for what in whats]

    @property
    def total_key(self) -> str:
        return f"{self.config.prefix}:sample-bytes"

    def _ms(self, seconds: float) -> int:
        return max(1, int(seconds * 1000))

    # -- operations
    def ping(self) -> bool:
        return bool(self.client.ping())

    def push_page(
        self, site: str, url: str, body: bytes, encoding: Optional[str], sample_pages: int
    ) -> tuple[str, int]:
        """Add a page to the site's shared sample: (status, pages in the sample) with
        status ``added``, ``filled`` (added, and the sample is now complete: time to fit),
        ``full`` (complete already), ``dup`` (the page
        is in it already), ``capped``/``total`` (no room under the byte caps) or ``model``
        (the site has a published model: nothing to add)."""
        cfg = self.config
        entry = encode_page(url, body, encoding)
        url_hash = hashlib.sha1(url.encode("utf-8", "surrogatepass")).hexdigest()
        status, n = self._push(
            keys=[*self.keys(site, "sample", "urls", "bytes"), self.total_key, self.key(site, "model")],
            args=[
                entry,
                url_hash,
                sample_pages,
                cfg.site_sample_bytes,
                cfg.total_sample_bytes,
                self._ms(cfg.sample_ttl),
                # the caps count page bytes, so what a reader inflates is capped by them too
                max(len(entry), len(body)),
            ],
        )
        return _text(status), int(n)

    def sample_state(self, sites: list[str]) -> list[tuple[bool, int]]:
        """(has a model, pages in the sample) of each site, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for site in sites:
            pipe.exists(self.key(site, "model"))
            pipe.llen(self.key(site, "sample"))
        out = pipe.execute()
        return [(bool(out[2 * i]), int(out[2 * i + 1])) for i in range(len(sites))]

    def claim(self, site: str, token: str) -> tuple[str, str]:
        """One step of "get the site's model": ``("model", version)`` when it is
        published, ``("lock", "")`` when this caller is now the builder, ``("busy", ms)``
        while another worker holds the lock (ms: its time to live)."""
        state, detail = self._claim(
            keys=self.keys(site, "lock", "model", "sample"),
            args=[token, self._ms(self.config.lock_ttl), _MAX_VERSION],
        )
        return _text(state), _text(detail)

    def renew(self, site: str, token: str) -> bool:
        """Extend the builder's lock; False when it is no longer this builder's."""
        return bool(self._renew(keys=[self.key(site, "lock")], args=[token, self._ms(self.config.lock_ttl)]))

    def release(self, site: str, token: str) -> None:
        self._release(keys=[self.key(site, "lock")], args=[token])

    def read_sample(self, site: str, max_pages: int) -> list[tuple[str, bytes, Optional[str]]]:
        """The site's shared sample pages; entries that do not decode are skipped (and
        logged): a page is data from the network via another worker, not trusted.

        The sample is capped at ``site_sample_bytes`` twice: the stored entries before
        they are fetched, and the pages once inflated (a running total: an entry inflating
        past what is left of the cap is skipped), so a sample planted in Redis cannot
        make a worker hold more than an honest one."""
        cap = self.config.site_sample_bytes
        reply = self._read_sample(keys=[self.key(site, "sample")], args=[max(0, max_pages), cap])
        left_out, entries = int(reply[0]), cast("list[bytes]", reply[1:])  # bytes: responses are not decoded
        if left_out:
            logger.warning(
                "sst: skipping %d shared sample pages of site %s: over the sample's size cap", left_out, site
            )
        pages, total = [], 0
        for entry in entries:
            try:
                page = decode_page(entry, cap - total)
            except (ValueError, zlib.error, UnicodeDecodeError) as exc:
                logger.warning("sst: skipping an unreadable shared sample page of site %s: %s", site, exc)
                continue
            total += len(page[1])
            pages.append(page)
        return pages

    def read_model(self, site: str) -> tuple[Optional[bytes], str]:
        """(the model's JSON bytes, version), or (None, version) when it is gone. Its
        sizes are checked before the values are fetched, so an oversized value never
        crosses the network; a version that is not a short counter is refused."""
        reply = self._read_model(
            keys=[self.key(site, "model")], args=[self.config.max_model_bytes, _MAX_VERSION, _MAX_IDENTITY]
        )
        state, detail = _text(reply[0]), _text(reply[1])  # detail: the version, or what is wrong
        refused = {
            "type": f"shared model key holds a Redis {detail}, not a hash",  # written by something else
            "version": f"shared model's version is {detail} bytes, not a short counter",
            "big": f"shared model is {detail} bytes, over the {self.config.max_model_bytes} limit",
        }.get(state)
        if refused:
            raise ModelFormatError(refused)
        version = detail
        if not version.isdigit() and version:
            raise ModelFormatError(f"shared model's version {version!r} is not a counter")
        if state == "ok" and self.identity is not None:
            stored = [_text(x) for x in reply[3:6]]
            if any(stored) and stored != self.identity.fields():
                raise ForeignModel(f"made by method {stored[0]!r}, parameters {stored[1]}, {stored[2]} sample pages")
        return (cast(bytes, reply[2]) if state == "ok" else None), version

    def publish(self, site: str, token: str, model_json: bytes, pages: int, builder: str) -> int:
        """Publish the model this builder fitted and drop the site's sample; the new
        version, or 0 when the lock was lost (another worker is the builder now)."""
        keys = [*self.keys(site, "lock", "model", "sample", "urls", "bytes"), self.total_key]
        ident = self.identity.fields() if self.identity is not None else ["", "", ""]
        args: list[Any] = [token, model_json, pages, builder, self._ms(self.config.model_ttl), _MAX_VERSION, *ident]
        return int(self._publish(keys=keys, args=args))

    def replace_model(self, site: str, version: str, model_json: bytes, pages: int, builder: str) -> int:
        """Compare-and-set: store a model merged into ``version`` of the site's model; the
        new version, or 0 when the model is no longer ``version`` (read it and merge again)."""
        return int(
            self._replace(
                keys=[self.key(site, "model")],
                args=[version, model_json, pages, builder, self._ms(self.config.model_ttl)],
            )
        )

    def drop_model(self, site: str, version: str) -> bool:
        """Delete a rejected model value, unless it changed since it was read."""
        return bool(self._drop(keys=[self.key(site, "model")], args=[version]))

    # -- held pages (crash safety)
    def _ns_key(self, what: str) -> str:
        return ":".join(p for p in (self.config.prefix, self.config.namespace) if p) + ":" + what

    def heartbeat(self, worker: str, ttl: float) -> None:
        """This worker is alive for ``ttl`` more seconds."""
        self.client.set(self._ns_key(f"alive:{worker}"), b"1", px=self._ms(ttl))

    def hold_page(self, worker: str, field: str, record: bytes, ttl: float) -> None:
        """Record a page whose items this worker holds (``record``: its request as JSON),
        with a heartbeat first (so no other worker takes it for a dead one's)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self._ns_key(f"alive:{worker}"), b"1", px=self._ms(ttl))
        pipe.sadd(self._ns_key("workers"), worker)
        pipe.hset(self._ns_key(f"held:{worker}"), field, record)
        pipe.pexpire(self._ns_key(f"held:{worker}"), self._ms(self.config.model_ttl))
        pipe.execute()

    def release_page(self, worker: str, *fields: str) -> None:
        """Delete the records of pages whose items are all through the pipelines."""
        self.client.hdel(self._ns_key(f"held:{worker}"), *fields)

    def dead_workers(self, me: str, most: int = 50) -> list[str]:
        """Workers with held pages whose heartbeat stopped (at most ``most``)."""
        members = [_text(m) for m in self.client.srandmember(self._ns_key("workers"), most) or []]
        members = [m for m in members if m != me and len(m) == 16 and all(c in "0123456789abcdef" for c in m)]
        if not members:
            return []
        pipe = self.client.pipeline(transaction=False)
        for m in members:
            pipe.exists(self._ns_key(f"alive:{m}"))
        return [m for m, alive in zip(members, pipe.execute()) if not alive]

    def adopt_pages(self, worker: str, most: int) -> list[bytes]:
        """Take the held-page records of a dead worker (none if its heartbeat is back)."""
        keys = [self._ns_key("workers"), self._ns_key(f"held:{worker}"), self._ns_key(f"alive:{worker}")]
        return cast("list[bytes]", self._adopt(keys=keys, args=[most, MAX_HELD_RECORD, worker]))

    def forget_worker(self, worker: str) -> None:
        """A worker that closed cleanly: nothing of it is left to recover."""
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(self._ns_key(f"held:{worker}"), self._ns_key(f"alive:{worker}"))
        pipe.srem(self._ns_key("workers"), worker)
        pipe.execute()

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # closing a pool whose server is gone must not fail a close
            pass


def _client(redis: Any, config: RedisConfig) -> Any:
    if config.connection is not None:
        return _scrapy_redis_client(redis, config)
    try:
        return redis.Redis.from_url(
            config.url,
            socket_timeout=config.timeout,
            socket_connect_timeout=config.timeout,
            health_check_interval=30,
        )
    except (ValueError, TypeError) as exc:  # its message may quote the URL's secrets
        message = redacted(str(exc), config)
        raise ValueError(f"SST_MODEL_STORE {redact_url(config.url)} is not a usable Redis URL: {message}") from None


def _scrapy_redis_client(redis: Any, config: RedisConfig) -> Any:
    """A client of the server and db scrapy-redis connects to: made by scrapy-redis's own
    helper (``get_redis_from_settings``) when it is installed, else by the same rules. Our
    timeouts replace scrapy-redis's (30 s by default: a crawl must not wait that long on
    the model store), and replies stay bytes (the scripts' values are compressed pages)."""
    conn = dict(config.connection or {})
    params = dict(conn.pop("REDIS_PARAMS", None) or {})
    params.update(
        socket_timeout=config.timeout,
        socket_connect_timeout=config.timeout,
        health_check_interval=30,
        decode_responses=False,
    )
    try:
        try:
            from scrapy.settings import BaseSettings
            from scrapy_redis.connection import get_redis_from_settings
        except ImportError:
            url = conn.pop("REDIS_URL", None)
            for name, param in (("REDIS_HOST", "host"), ("REDIS_PORT", "port"), ("REDIS_DB", "db")):
                if conn.get(name):
                    params[param] = conn[name]
            if conn.get("REDIS_ENCODING"):
                params["encoding"] = conn["REDIS_ENCODING"]
            return redis.Redis.from_url(url, **params) if url else redis.Redis(**params)
        return get_redis_from_settings(BaseSettings({**conn, "REDIS_PARAMS": params, "REDIS_DECODE_RESPONSES": False}))
    except (ValueError, TypeError) as exc:  # its message may quote a secret
        message = redacted(str(exc), config)
        raise ValueError(
            f"scrapy-redis's connection settings ({redact_url(config.url)}) are not usable: {message}"
        ) from None


def redacted(text: str, config: RedisConfig) -> str:
    """``text`` without the secrets of the Redis URL or of REDIS_PARAMS (its password)."""
    text = redact_text(text, config.url)
    for secret in config.secrets():
        text = text.replace(secret, "***")
    return text


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
