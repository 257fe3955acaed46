"""File names for site models that cannot escape the model folder.

A site key comes from the web (a host name, possibly Unicode, possibly crafted), and
becomes a file name in the model folder. ``model_filename`` keeps a readable prefix made
only of ``[a-z0-9._-]`` and adds a short hash of the exact key, so that:

* no separator, ``..``, NUL or control character survives (nothing can point outside
  the folder);
* Windows-reserved device names (``CON``, ``NUL``, ``COM1``...), trailing dots and
  spaces, and over-long names cannot occur (the prefix never *is* the whole name: the
  hash follows it);
* two keys that sanitise to the same prefix (``a/b`` and ``a_b``, or ``EXAMPLE.com``
  and ``example.com``) still get different files, because the hash is of the exact key.
"""
from __future__ import annotations

import hashlib

#: characters kept in the readable prefix (everything else becomes "_")
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_")
#: readable prefix length (a DNS name is at most 253 characters; the file name stays
#: far below the usual 255-byte limit once the hash and suffix are added)
MAX_PREFIX = 80
#: Windows device names: reserved as the part before the first dot ("nul.txt" too)
_RESERVED = frozenset({"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)}
                      | {f"lpt{i}" for i in range(10)})
HASH_CHARS = 12  # 48 bits of SHA-256: no accidental collision among a crawl's sites
SUFFIX = ".json"


def _readable(site_key: str) -> str:
    # IDNA (punycode) keeps Unicode hosts readable and distinct in ASCII when possible
    try:
        text = site_key.encode("idna").decode("ascii")
    except (UnicodeError, ValueError):
        text = site_key
    text = text.lower()
    out = "".join(c if c in _SAFE else "_" for c in text[: MAX_PREFIX * 4])
    # no leading dots (hidden files, "..") and no trailing dots/spaces (Windows)
    out = out.strip("._ -")
    while ".." in out:
        out = out.replace("..", ".")
    out = out[:MAX_PREFIX].rstrip("._-") or "site"
    first, dot, rest = out.partition(".")
    if first in _RESERVED or first.split("-")[0] in _RESERVED:
        out = f"{first}_{dot}{rest}"
    return out


def model_filename(site_key: str) -> str:
    """A safe, readable, collision-free file name for the model of ``site_key``.

    ``model_filename("www.example.com") == "www.example.com-<12 hex>.json"``. The
    result matches ``[a-z0-9][a-z0-9._-]*-[0-9a-f]{12}\\.json``, is at most 98
    characters, and is a plain name (no separator), so ``os.path.join(folder, name)``
    is always inside ``folder``.
    """
    if not isinstance(site_key, str):
        raise TypeError(f"site_key must be str, not {type(site_key).__name__}")
    digest = hashlib.sha256(site_key.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    return f"{_readable(site_key)}-{digest}{SUFFIX}"
