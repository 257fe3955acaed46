"""A Redis URL as it may appear in a log line or an error message: every secret redis-py
could read from it masked. A leaf module: the settings check and the fleet's store both
name the URL."""

from __future__ import annotations

from typing import Optional

#: query parameters whose value may be a secret (redis-py reads ``password``; the rest are
#: what a hand-written URL may hold)
_SECRET_PARAMS = ("pass", "secret", "token", "auth", "cred", "key")


def _split(url: str) -> tuple[str, Optional[str], str, str, Optional[str], Optional[str]]:
    """(scheme, user info, host, path, query, fragment) as far as a secret can reach: the
    user info ends at the last ``@`` before the query (an unencoded ``/`` or ``@`` in a
    password moves where a URL parser puts it); None for a part that is absent."""
    scheme, _, rest = url.partition("://")
    rest, hash_sign, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    userinfo, at, rest = rest.rpartition("@")
    host, slash, path = rest.partition("/")
    return (
        scheme,
        userinfo if at else None,
        host,
        slash + path,
        query if question else None,
        fragment if hash_sign else None,
    )


def _secret_param(part: str) -> bool:
    """A query parameter to mask: a secret-looking name, or a part no client reads as a
    parameter (no ``=``, or an ``@``: a piece of a password with a ``?`` in it)."""
    from urllib.parse import unquote_plus

    name, eq, _ = part.partition("=")
    return not eq or "@" in part or any(word in unquote_plus(name).lower() for word in _SECRET_PARAMS)


def _masked_param(part: str) -> str:
    if not _secret_param(part):
        return part
    name, eq, _ = part.partition("=")
    return f"{name}=***" if eq and "@" not in name else "***"


def _bad_port(host: str) -> bool:
    port = host.rpartition(":")[2]
    return ":" in host and not port.isdigit() and not port.endswith("]")  # "]": IPv6, no port


def redact_url(url: str) -> str:
    """The Redis URL with every secret redis-py could read from it replaced by ``***``:
    the user info (the user name stays when a password follows it), secret-looking query
    values and the fragment; all of it after the scheme when the port is not a number
    (a password whose ``@`` is missing, or cut by a ``?`` or ``#``: no client reads it)."""
    if "://" not in url:
        return url
    scheme, userinfo, host, path, query, fragment = _split(url)
    if _bad_port(host):  # a URL no client reads: a password may be anywhere in it
        return scheme + "://***"
    out = scheme + "://"
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        # a user name alone may be the secret (some services put a token there)
        out += f"{user}:***@" if colon and user else "***@"
    out += host + path
    if query is not None:
        out += "?" + "&".join(_masked_param(part) for part in query.split("&"))
    if fragment is not None:
        out += "#***"
    return out


def _secrets(url: str) -> list[str]:
    """The secrets :func:`redact_url` masks, as written and percent-decoded, longest first."""
    from urllib.parse import unquote, unquote_plus

    _, userinfo, host, _, query, fragment = _split(url)
    found = [fragment or ""]
    if userinfo is not None:
        found += [userinfo, userinfo.partition(":")[2]]
    if _bad_port(host):
        found += [host.rpartition(":")[2], url.partition("://")[2]]
    for part in (query or "").split("&"):
        if _secret_param(part):
            found.append(part.partition("=")[2] or part)
    decoded = [unquote(x) for x in found] + [unquote_plus(x) for x in found]
    return sorted({x for x in found + decoded if x}, key=len, reverse=True)


def redact_text(text: str, url: str) -> str:
    """``text`` (an exception's message) with the URL redacted and its secrets masked."""
    text = text.replace(url, redact_url(url))
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text
