"""Site keys: which site a URL belongs to (``SST_SITE_KEY``).

Every per-site thing of a crawl (its held items, its model, its model file, its worker
process) is filed under the key these functions give: ``host_key`` by default,
``domain_key`` with ``SST_SITE_KEY = "domain"``, or the user's own function;
``model_filename`` turns a key into its model file's name. A leaf module: the model
stores, caches and files all import it.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import TYPE_CHECKING, Any, Callable, Literal, Union
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import tldextract  # optional: imported on first use at run time


def host_key(url: str) -> str:
    """The lower-cased host name of ``url`` (no port, no credentials): one site per host.

    The port is left out on purpose: a site served on another port (a test server, a
    mirror) is still the same templates.
    """
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return host.rstrip(".").lower()


# second-level labels under which registrations happen in many country TLDs (co.uk,
# com.au, ...): a short offline stand-in for the Public Suffix List when tldextract is absent
_SECOND_LEVEL = frozenset("ac co com edu gov net org ne or go gob mil nic ltd plc sch".split())
_TLDEXTRACT: Union[None, Literal[False], tldextract.TLDExtract] = None  # False: tldextract unusable


def domain_key(url: str) -> str:
    """The registered domain of ``url`` ("news.bbc.co.uk" -> "bbc.co.uk").

    Uses tldextract's bundled Public Suffix List snapshot when it is installed (never
    fetched over the network), otherwise the last two labels, or three when the
    second-to-last is a common second-level label under a two-letter country TLD.
    """
    global _TLDEXTRACT
    host = host_key(url)
    if not host:
        return host
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    if _TLDEXTRACT is None:
        try:
            import tldextract

            _TLDEXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
        except Exception:  # not installed, or an old version without these options
            _TLDEXTRACT = False
    if _TLDEXTRACT:
        ext = _TLDEXTRACT(host)
        if ext.domain and ext.suffix:
            return f"{ext.domain}.{ext.suffix}"
        return host
    labels = host.split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def resolve_site_key(spec: Any) -> Callable[[str], str]:
    """``SST_SITE_KEY`` -> a function url -> site key."""
    if callable(spec):
        return spec
    if spec == "host":
        return host_key
    if spec == "domain":
        return domain_key
    if isinstance(spec, str) and "." in spec:
        from importlib import import_module

        module, _, name = spec.rpartition(".")
        try:
            func = getattr(import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"SST_SITE_KEY {spec!r} cannot be imported: {exc}") from exc
        if not callable(func):
            raise ValueError(f"SST_SITE_KEY {spec!r} is not callable")
        return func
    raise ValueError(f"SST_SITE_KEY must be 'host', 'domain', a callable or its import path, not {spec!r}")


_WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_PREFIX_MAX = 48


def model_filename(site_key: str) -> str:
    """A file name for a site's model that is safe whatever the key holds.

    ``site-<sanitized prefix>-<sha256[:20]>.json``: the prefix keeps only ``[a-z0-9_-]``
    (dots become ``_``, so no ``..`` and no hidden files), is cut to 48 characters, and
    the hash keeps distinct keys distinct. The constant ``site-`` start means the stem is
    never a Windows device name (CON, NUL, COM1...), and the name is never longer than
    ~80 characters, whatever the host string.
    """
    raw = site_key.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()[:20]
    prefix = "".join(ch if ch in _SAFE else "_" for ch in site_key.lower())[:_PREFIX_MAX].strip("_-")
    if prefix in _WINDOWS_RESERVED:  # cannot happen after "site-", kept as a second guard
        prefix = "_" + prefix
    return f"site-{prefix or 'x'}-{digest}.json"
