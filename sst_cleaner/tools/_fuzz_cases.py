"""The fuzzer's cases: every kind of hostile page, generated from ``(seed, index)``
alone (see :mod:`sst_cleaner.tools.fuzz`, which runs them).
"""

from __future__ import annotations

import random
from typing import Callable, Optional, Union

Data = Union[str, bytes]

_WORDS = (
    "the of and to in is was for on that with as by at from his her are this be it an have "
    "market city council report water school season player government museum river music "
    "police festival library energy climate election hospital science garden bridge"
).split()
_SCRIPTS = {
    "cjk": "中文网页内容提取算法研究数据集合東京都の天気予報는한국어문장입니다",
    "rtl": "هذا نص عربي للاختبار שלום עולם זה טקסט בעברית",
    "emoji": "😀🎉👍🏽👨‍👩‍👧‍👦🇫🇷",
    "latin": "Ça coûte très cher à Zürich, naïve façade, Straße",
    "bidi": "\u202eevil\u202c \u200f\u200e\u2066x\u2069",
}
_TAGS = (
    "div p span a b i li ul ol table tr td th h1 h2 section article nav footer header "
    "font center form input select option script style noscript iframe svg math pre "
    "code blockquote em strong br hr img"
).split()
_ENCODINGS = (
    "utf-8",
    "latin-1",
    "cp1252",
    "shift_jis",
    "gb18030",
    "euc-kr",
    "utf-16",
    "utf-16-be",
    "koi8-r",
    "iso-8859-7",
    "utf-7",
    "cp437",
)
_BOGUS_ENCODINGS = ("x-nonsense", "utf-99", "", "UTF8;;", "../../etc/passwd", "\x00")
_PASSWD_MARK = "root:x:0:0"


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def normal_page(rng: random.Random, i: int = 0) -> str:
    """A page of one synthetic site: the same header/nav/footer, a varying article."""
    paras = "".join(f"<p>{_text(rng, rng.randint(8, 30))}</p>" for _ in range(rng.randint(2, 6)))
    return (
        "<!DOCTYPE html><html><head><title>Story %d - Example</title><style>p{}</style></head>"
        "<body><div id='header'><a href='/'>Example Daily</a></div>"
        "<ul class='nav'><li><a href='/news'>News</a></li><li><a href='/sport'>Sport</a></li></ul>"
        "<div class='article'><h1>%s</h1>%s</div>"
        "<div id='footer'>Copyright Example Daily. All rights reserved.</div></body></html>" % (i, _text(rng, 6), paras)
    )


# -- case generators: each returns (data, encoding or None) ---------------------------
def gen_random_bytes(rng: random.Random, scale: float):
    return rng.randbytes(rng.randint(0, int(20_000 * scale) + 1)), None


def gen_garbled(rng: random.Random, scale: float):
    data = bytearray(normal_page(rng, rng.randint(0, 99)).encode("utf-8"))
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(7)
        if not data:
            break
        a = rng.randrange(len(data))
        b = min(len(data), a + rng.randint(1, 200))
        if op == 0:
            del data[a:]  # truncated download
        elif op == 1:
            for _ in range(rng.randint(1, 20)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 2:
            del data[a:b]
        elif op == 3:
            data[a:a] = data[a:b] * rng.randint(2, 50)
        elif op == 4:
            data[a:a] = rng.choice(
                [
                    b"<!--",
                    b"<script>",
                    b"<![CDATA[",
                    b"<style>",
                    b"<textarea>",
                    b"<title>",
                    b"</body></html>",
                    b"<html><body>",
                    b"\"'<>",
                    b"&#",
                    b"&#x110000;",
                    b"&#0;",
                    b"&#xD800;",
                    b"<?php ",
                    b"<%",
                    b"<!DOCTYPE",
                ]
            )
        elif op == 5:
            data[a:a] = f"<{rng.choice(_TAGS)} {'x=' * rng.randint(0, 3)}".encode()
        else:
            data[a:b] = bytes(reversed(data[a:b]))
    return bytes(data), None


def gen_deep(rng: random.Random, scale: float):
    depth = rng.choice([255, 257, 300, 2047, 2049, 5000, max(300, int(100_000 * scale))])
    tag = rng.choice(["div", "span", "b", "font", "table", "td", "li", "blockquote", "a", "em"])
    closing = rng.random() < 0.5
    body = f"<{tag}>x " * depth + "deep text" + (f"</{tag}>" * depth if closing else "")
    return f"<html><body><p>before the nesting</p>{body}<p>after the nesting</p></body></html>", None


def gen_attributes(rng: random.Random, scale: float):
    kind = rng.randrange(4)
    if kind == 0:
        n = int(rng.choice([1000, 20_000, 100_000]) * scale) + 1
        attrs = " ".join(f"a{i}='{i}'" for i in range(n))
    elif kind == 1:
        attrs = "class='x' " * int(rng.choice([1000, 50_000]) * scale + 1)
    elif kind == 2:
        attrs = "title='" + "y" * int(rng.choice([10_000, 1_000_000]) * scale + 1) + "'"
    else:
        attrs = rng.choice(
            [
                "style='display : NONE'",
                "style='visibility:hidden;" + ";" * 10000 + "'",
                "hidden",
                "aria-hidden='true'",
                'style="' + "display:" * 5000 + '"',
            ]
        )
    return f"<html><body><div {attrs}>attribute carrier</div><p>{_text(rng, 12)}</p></body></html>", None


def gen_flood(rng: random.Random, scale: float):
    unit = rng.choice(["<b></b>", "<p>", "<i>a</i>", "<a href=x>y</a>", "<br>", "<td>", "<li>x", "<div></div>"])
    n = max(1000, int(rng.choice([10_000, 200_000, 1_000_000, 2_000_000]) * scale))
    return "<html><body><p>start</p>" + unit * n + "<p>end</p></body></html>", None


def gen_charset(rng: random.Random, scale: float):
    script = rng.choice(list(_SCRIPTS))
    text = " ".join(_SCRIPTS[script] for _ in range(rng.randint(1, 20)))
    real = rng.choice(_ENCODINGS)
    declared = rng.choice(_ENCODINGS + _BOGUS_ENCODINGS)
    page = (
        f"<html><head><meta charset='{declared}'><meta http-equiv='Content-Type' "
        f"content='text/html; charset={rng.choice(_ENCODINGS)}'></head>"
        f"<body><h1>{text[:40]}</h1><p>{text}</p></body></html>"
    )
    data = page.encode(real, "replace")
    if rng.random() < 0.3:
        data = rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"]) + data
    if rng.random() < 0.3:  # mixed: a second part in another encoding
        data += f"<p>{_text(rng, 5)} {_SCRIPTS[rng.choice(list(_SCRIPTS))]}</p>".encode(
            rng.choice(_ENCODINGS), "replace"
        )
    encoding = rng.choice([None, None, rng.choice(_ENCODINGS + _BOGUS_ENCODINGS)])
    return data, encoding


def gen_nul_surrogates(rng: random.Random, scale: float):
    page = normal_page(rng, 1)
    pieces = ["\x00", "\ud800", "\udfff", "\udbff\udc00", "\ufffe", "\uffff", "\x00" * 100, "\x1b[31m", "\r\r\n"]
    chars = list(page)
    for _ in range(rng.randint(1, 30)):
        chars.insert(rng.randrange(len(chars) + 1), rng.choice(pieces))
    text = "".join(chars)
    if rng.random() < 0.5:
        return text, None
    return text.encode("utf-8", "surrogatepass"), None


def gen_xml_entities(rng: random.Random, scale: float):
    lol = "".join(f'<!ENTITY lol{i} "{("&lol%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    decls = rng.choice(
        [
            '<!ENTITY lol0 "lol">' + lol,
            '<!ENTITY xxe SYSTEM "file:///etc/passwd">',
            '<!ENTITY net SYSTEM "http://127.0.0.1:9/evil.dtd">',
            '<!ENTITY % pe SYSTEM "file:///etc/passwd"> %pe;',
            '<!ENTITY a "&b;"><!ENTITY b "&a;">',
        ]
    )
    xml_decl = rng.choice(
        [
            '<?xml version="1.0"?>',
            '<?xml version="1.0" encoding="utf-8"?>',
            '<?xml version="1.0" encoding="utf-16"?>',
            "",
        ]
    )
    prefix = rng.choice(["", " ", "\ufeff", "\n"])
    page = (
        f"{prefix}{xml_decl}<!DOCTYPE html [{decls}]>"
        '<?xml-stylesheet href="http://127.0.0.1:9/x.xsl"?>'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:x="urn:x"><body>'
        "<p>&lol9; &xxe; &net; &a; <x:tag>ns</x:tag> <![CDATA[cdata <b>text</b>]]></p>"
        f"<p>{_text(rng, 10)}</p></body></html>"
    )
    return (page.encode("utf-8") if rng.random() < 0.5 else page), None


def gen_tokenizer_bait(rng: random.Random, scale: float):
    n = int(rng.choice([1000, 50_000, 200_000]) * scale) + 1
    text = rng.choice(
        [
            "a" * n,
            "." * n,
            "a." * (n // 2),
            "a. " * (n // 3),
            "Mr. " * (n // 4),
            "!?" * (n // 2),
            " " * n + "x",
            "\u3002" * n,
            "x" + "\u0301\u0316" * (n // 2),
            "x" + "&#x301;&#x316;" * (n // 10),
            '"' * n,
            "(" * n + ")" * n,
            "1" * n,
            "\u00a0" * n,
            "中" * n,
            "e\u0301" * (n // 2),
            "<b>\u0301</b><i>\u0316</i>" * (n // 20),
        ]
    )
    return f"<html><body><div><p>{text}</p><p>{_text(rng, 10)} Next one. And more!</p></div></body></html>", None


def gen_hidden_flood(rng: random.Random, scale: float):
    n = max(100, int(rng.choice([1000, 20_000, 100_000]) * scale))
    unit = rng.choice(
        [
            "<span hidden>h</span>tail ",
            "<span style='display:none'>h</span>t",
            "<script>x</script>t",
            "<div aria-hidden='true'></div>t",
        ]
    )
    return f"<html><body><p>keep</p><div>{unit * n}</div></body></html>", None


def gen_mixed(rng: random.Random, scale: float):
    parts = []
    for _ in range(rng.randint(2, 4)):
        gen = rng.choice([gen_garbled, gen_charset, gen_nul_surrogates, gen_xml_entities, gen_random_bytes])
        data, _enc = gen(rng, scale * 0.1)
        parts.append(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return b"".join(parts), None


#: (name, weight, generator); heavy kinds draw their big sizes rarely
def _fuzz_warc():  # WARC archives have their own module, which builds on this one's pages
    from sst_cleaner.tools import _fuzz_warc

    return _fuzz_warc


GENERATORS: list[tuple[str, float, Callable]] = [
    ("random_bytes", 10, gen_random_bytes),
    ("garbled", 30, gen_garbled),
    ("deep", 4, gen_deep),
    ("attributes", 4, gen_attributes),
    ("flood", 1.5, gen_flood),
    ("charset", 15, gen_charset),
    ("nul_surrogates", 10, gen_nul_surrogates),
    ("xml_entities", 8, gen_xml_entities),
    ("tokenizer_bait", 6, gen_tokenizer_bait),
    ("hidden_flood", 3, gen_hidden_flood),
    ("mixed", 8, gen_mixed),
    ("warc", 8, lambda rng, scale: _fuzz_warc().gen_warc(rng, scale)),
]


def _draw_kind(seed: int, index: int) -> tuple[random.Random, str]:
    rng = random.Random(f"{seed}:{index}")
    names = [g[0] for g in GENERATORS]
    weights = [g[1] for g in GENERATORS]
    return rng, rng.choices(names, weights)[0]


def case_kind(seed: int, index: int) -> str:
    """The kind of case ``index`` of run ``seed``, without generating its input (a run
    of some kinds passes over the others' cases at no cost)."""
    return _draw_kind(seed, index)[1]


def make_case(seed: int, index: int, scale: float = 1.0) -> tuple[str, Data, Optional[str]]:
    """The case ``index`` of run ``seed``: (kind, input, encoding argument)."""
    rng, kind = _draw_kind(seed, index)
    gen = dict((g[0], g[2]) for g in GENERATORS)[kind]
    data, encoding = gen(rng, scale)
    return kind, data, encoding
