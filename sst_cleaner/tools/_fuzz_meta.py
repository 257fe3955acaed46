"""The fuzzer's metadata cases: pages whose metadata is hostile (dates that overflow or
are no dates, URLs that do not parse, JSON-LD that is deep, wide, cut or wrongly
typed, floods of ``<meta>``/``<time>``/author marks, values of megabytes), and
the check every case's metadata must pass (see :mod:`sst_cleaner.tools.fuzz`).
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable, Optional

from sst_cleaner.engine._metadata import FIELD_CAPS, FIELDS, MAX_AUTHORS

_DATES = (
    "1 Jan 99999999999999999999 00:00:00 +0000",
    "Fri, 31 Dec 9999 23:59:59 +9999",
    "0000-00-00",
    "2024-02-30T25:61:61+99:99",
    "99999999",
    "2024-13-01",
    "Mon, 32 Foo 2024",
    "-1-1-1",
    "\x00\ud800",
    "2024-03-01T09:30:00.123456789012345678901234567890+01:00",
    "9" * 5000,
)
_URLS = (
    "http://[x/",
    "http://[::1",
    "https://exa\u2100mple.com/",
    "http://a:99999999999/",
    "javascript:alert(1)",
    "//\x00/",
    "\ud800",
    "http://" + "a" * 70_000 + ".test/",
    "%" * 10_000,
)
_JSONLD_VALUES: tuple = (
    None,
    1e308,
    -1,
    True,
    [],
    {},
    [[[]]],
    {"name": {"name": {"name": 5}}},
    ["\ud800"],
    "x" * 200_000,
)


def _value(rng: random.Random) -> Any:
    pick = rng.randrange(4)
    if pick == 0:
        return rng.choice(_DATES)
    if pick == 1:
        return rng.choice(_URLS)
    if pick == 2:
        return rng.choice(_JSONLD_VALUES)
    return "word " * rng.choice((1, 10, 1_000, 200_000))


def _jsonld(rng: random.Random, scale: float) -> str:
    choice = rng.randrange(5)
    if choice == 0:  # deeper than the JSON parser recurses
        n = int(rng.choice((10, 999, 5_000, 100_000)) * scale) + 1
        return "[" * n + "]" * n
    if choice == 1:  # a wide graph
        return json.dumps({"@graph": [[{"@type": "Article"}] * 50] * int(rng.randint(1, 2_000) * scale + 1)})
    if choice == 2:
        return "{" + rng.choice(('"@type": ', '"headline": "', "]", "\\u")) * rng.randint(1, 1000)
    fields = ("headline", "name", "author", "creator", "datePublished", "dateModified", "inLanguage", "publisher")
    node = {"@type": rng.choice(["NewsArticle", ["Article", 5], None, "WebSite", {"x": 1}])}
    for key in rng.sample(fields, rng.randint(1, len(fields))):
        node[key] = _value(rng)
    return json.dumps(node if choice == 3 else {"@graph": [node, {"@type": "WebSite", "name": _value(rng)}]})


def gen_metadata(rng: random.Random, scale: float) -> tuple[str, Optional[str]]:
    """A page with hostile metadata in its head and body."""
    head: list[str] = []
    body: list[str] = ["<p>The harbour council met on Tuesday to plan the lantern festival.</p>"]
    for _ in range(rng.randint(1, 12)):
        kind = rng.randrange(7)
        value = str(_value(rng)).replace('"', "&quot;")
        if kind == 0:
            key = rng.choice(("date", "article:published_time", "og:url", "author", "description", "og:locale"))
            head.append(f'<meta name="{key}" property="{key}" content="{value}">')
        elif kind == 1:
            head.append(f'<link rel="canonical" href="{rng.choice(_URLS)}">')
        elif kind == 2:
            head.append(f'<script type="application/ld+json">{_jsonld(rng, scale)}</script>')
        elif kind == 3:  # a flood of one kind
            unit = rng.choice(
                (
                    '<meta name="k" content="v">',
                    "<time datetime='2024-01-01'>t</time>",
                    "<span rel='author'>a</span>",
                    "<b itemprop='author'><i itemprop='author'>n</i></b>",
                    '<script type="application/ld+json">{}</script>',
                )
            )
            body.append(unit * int(rng.choice((100, 10_000, 60_000)) * scale + 1))
        elif kind == 4:
            body.append(f'<time datetime="{value}" itemprop="datePublished">then</time>')
        elif kind == 5:
            body.append(f'<meta itemprop="datePublished" content="{value}">')
        else:
            body.append(f'<html lang="{value[:100_000]}" xml:lang="{value[:10]}">')
    return (
        f"<html><head><title>{_value(rng)!s:.300}</title>{''.join(head)}</head><body>{''.join(body)}</body></html>",
        None,
    )


#: (name, weight, generator) for :data:`sst_cleaner.tools._fuzz_cases.GENERATORS`
GENERATOR = ("metadata", 8.0, gen_metadata)


def check_metadata(result: Any) -> None:
    """A result's metadata: every field, of its type, within its cap (raises
    ``AssertionError`` otherwise). Reading it is what is timed."""
    md = result.metadata
    if set(md) != set(FIELDS) and md != {}:
        raise AssertionError(f"metadata fields {sorted(md)}")
    for name, value in md.items():
        if name == "authors":
            if not isinstance(value, list) or len(value) > MAX_AUTHORS:
                raise AssertionError(f"authors {str(value)[:80]}")
            if any(not isinstance(a, str) or len(a) > FIELD_CAPS["authors"] for a in value):
                raise AssertionError("an author name over its cap")
        elif value is not None and (not isinstance(value, str) or len(value) > FIELD_CAPS.get(name, 64)):
            raise AssertionError(f"{name} over its cap or not a str: {str(value)[:80]}")
    json.dumps(md, ensure_ascii=False).encode("utf-8")  # written as UTF-8: no lone surrogate


def with_metadata(clean: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``clean`` followed by reading and checking its result's metadata, as a user of
    ``SiteCleaner.clean(...).metadata`` does: the step's time covers both."""

    def clean_and_read(page: Any) -> Any:
        result = clean(page)
        check_metadata(result)
        return result

    return clean_and_read
