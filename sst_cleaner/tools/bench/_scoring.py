"""The two rules that decide a score, kept byte-for-byte equivalent to the shared
benchmark scripts (see the package docstring): the input rule (:func:`prepare_html`) and
the metric (:func:`prf`), with the corpus loading that applies the first.
"""

from __future__ import annotations

import codecs
import json
import os
import random
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from sst_cleaner.engine._text import words as tokens

# --------------------------------------------------------------------------------------
# Input rule: the benchmark's prepare_html, re-implemented
# --------------------------------------------------------------------------------------

_CHARSET_ALIASES = {
    "windows-874": "cp874",
    "x-sjis": "shift_jis",
    "iso-1252": "cp1252",
    "unicode": "utf-8",
    "utf8": "utf-8",
}
_ASCII_WS = frozenset(b" \t\n\r\f\v")  # what \s matches in a bytes regex
_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:.-")
_QUOTES = frozenset(b"\"'")


def _charset_value(data: bytes, i: int, end: int) -> Optional[bytes]:
    """``\\s*=\\s*["']?\\s*([A-Za-z0-9_:.-]+)`` matched at ``data[i:end]`` (None if not)."""
    while i < end and data[i] in _ASCII_WS:
        i += 1
    if i >= end or data[i] != 0x3D:  # "="
        return None
    i += 1
    while i < end and data[i] in _ASCII_WS:
        i += 1
    if i < end and data[i] in _QUOTES:
        i += 1
    while i < end and data[i] in _ASCII_WS:
        i += 1
    j = i
    while j < end and data[j] in _NAME_CHARS:
        j += 1
    return data[i:j] if j > i else None


def _find_meta_charset(data: bytes) -> Optional[bytes]:
    """First match of ``<meta[^>]+charset\\s*=\\s*["']?\\s*([A-Za-z0-9_:.-]+)`` (case-
    insensitive), as the shared ``pages.meta_charset`` searches it, but in linear time.

    Why a scan and not that regex: ``[^>]+`` before ``charset`` makes the regex retry
    every ``<meta`` against the rest of an unclosed tag (quadratic on hostile input).
    Equivalence: the regex's greedy ``[^>]+`` stays inside one tag and tries the *last*
    ``charset`` of the tag first (at least one byte after ``<meta``); a ``<meta``
    that starts inside a tag with no match sees a subset of it, so it cannot match
    either and the scan resumes after the tag's ``>``.
    """
    low = data.lower()  # ASCII-only folding, as re.I does on bytes
    n = len(data)
    pos = low.find(b"<meta")
    while pos != -1:
        start = pos + 5
        end = low.find(b">", start)
        if end == -1:
            end = n
        k = low.rfind(b"charset", start + 1, end)
        while k != -1:
            value = _charset_value(data, k + 7, end)
            if value:
                return value
            k = low.rfind(b"charset", start + 1, k + 6)  # an earlier occurrence
        pos = low.find(b"<meta", end)
    return None


def meta_charset(data: bytes) -> Optional[str]:
    """The charset a ``<meta>`` declares (first 8 KiB searched first), as a codec name."""
    raw = _find_meta_charset(data[:8192]) or _find_meta_charset(data)
    if not raw:
        return None
    name = raw.decode("ascii", "replace").lower()
    name = _CHARSET_ALIASES.get(name, name)
    try:
        name = codecs.lookup(name).name
    except LookupError:
        return None
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"  # a UTF-16 declaration inside an 8-bit file is always wrong
    return name


def decode_page(data: bytes) -> tuple[str, str]:
    """Page bytes -> (text, encoding used), by the benchmark's rule.

    1. a BOM decides; 2. bytes that are valid UTF-8 are UTF-8 whatever a ``<meta>``
    says (corpora re-saved as UTF-8 often kept ``charset=ISO-8859-1``); 3. else the
    ``<meta>`` charset; 4. else UTF-8 with replacement when valid multi-byte characters
    outnumber invalid bytes, otherwise windows-1252 (the HTML default).
    """
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace"), "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace"), "utf-16"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    cs = meta_charset(data)
    if cs:
        try:
            return data.decode(cs, "replace"), cs
        except LookupError:
            pass
    text = data.decode("utf-8", "surrogateescape")
    invalid = sum(1 for ch in text if "\udc80" <= ch <= "\udcff")
    valid_non_ascii = sum(1 for ch in text if ord(ch) > 127) - invalid
    if valid_non_ascii > invalid:
        return data.decode("utf-8", "replace"), "utf-8-replace"
    return data.decode("cp1252", "replace"), "cp1252-default"


# anchored, no nested quantifiers: linear
_CLEANEVAL_OPEN = re.compile(r"\A\s*<text\s+id=[^>]*>[ \t]*\r?\n?")
_CLEANEVAL_CLOSE = re.compile(r"</text>\s*\Z")


def strip_cleaneval_wrapper(text: str) -> str:
    """Remove CleanEval's ``<text id="URL" ...>`` ... ``</text>`` packing: it is not part
    of the web page (and makes some extractors return nothing)."""
    m = _CLEANEVAL_OPEN.match(text)
    if not m:
        return text
    return _CLEANEVAL_CLOSE.sub("", text[m.end() :])


def prepare_html(data: bytes) -> tuple[str, str]:
    """What every extractor gets: :func:`decode_page` minus a CleanEval wrapper."""
    text, encoding = decode_page(data)
    return strip_cleaneval_wrapper(text), encoding


# --------------------------------------------------------------------------------------
# Metric: the benchmark's bag-of-tokens P/R/F1
# --------------------------------------------------------------------------------------


def prf_tokens(pred: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(P, R, F1) of multisets of tokens; both empty = perfect, one empty = 0."""
    if not pred and not gold:
        return 1.0, 1.0, 1.0
    if not pred or not gold:
        return 0.0, 0.0, 0.0
    overlap = sum((Counter(pred) & Counter(gold)).values())
    p = overlap / len(pred)
    r = overlap / len(gold)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


# Han (with the iteration and closing marks), Hiragana, Katakana (with its phonetic
# extensions) and Hangul (syllables and jamo). After NFKC, half-width katakana and
# compatibility ideographs are already in these blocks.
_CJK_CHARS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
# one CJK character, or a run of other word characters: a character class each, no
# nesting, so linear
_CJK_TOKEN = re.compile(f"[{_CJK_CHARS}]|[^\\W{_CJK_CHARS}]+")


def cjk_tokens(text: str) -> list[str]:
    """The metric's tokens for scripts written without spaces: NFKC, lower-cased, every
    Han, Hiragana, Katakana or Hangul character a token of its own, other text split into
    ``\\w+`` words as :func:`tokens` does.

    The shared scorer's ``\\w+`` makes a whole Chinese or Japanese clause one token, so
    a page that keeps all of a clause but one character scores as if it had kept none;
    by character, it scores what it kept.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return _CJK_TOKEN.findall(text.lower())


def prf(pred: Optional[str], gold: Optional[str], cjk: bool = False) -> tuple[float, float, float]:
    """(P, R, F1) of one page: NFKC, lower-cased ``\\w+`` tokens, multiset overlap; with
    ``cjk``, :func:`cjk_tokens` instead (the same figure on text without CJK)."""
    tok = cjk_tokens if cjk else tokens
    return prf_tokens(tok(pred) if pred else [], tok(gold) if gold else [])


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


@dataclass
class Score:
    """Macro averages over pages, plus the site macro (mean of per-site means)."""

    pages: int
    precision: float
    recall: float
    f1: float
    site_f1: float
    sites: int


def score_pages(predictions: dict[str, str], pages: Sequence["Page"], cjk: bool = False) -> Score:
    """Score ``predictions`` on ``pages`` (a page without prediction scores as empty);
    ``cjk``: tokens by :func:`cjk_tokens`."""
    per_page = []
    by_site: dict[str, list[float]] = defaultdict(list)
    for page in pages:
        s = prf(predictions.get(page.id) or "", page.gold, cjk)
        per_page.append(s)
        by_site[page.site_key].append(s[2])
    return Score(
        len(per_page),
        _mean(s[0] for s in per_page),
        _mean(s[1] for s in per_page),
        _mean(s[2] for s in per_page),
        _mean(_mean(v) for v in by_site.values()),
        len(by_site),
    )


# --------------------------------------------------------------------------------------
# Corpora
# --------------------------------------------------------------------------------------


@dataclass
class Page:
    id: str
    site: Optional[str]
    url: Optional[str]
    html: str
    gold: str

    @property
    def site_key(self) -> str:
        # a page of unknown site is a site of its own (as score.py and site_eval.py do)
        return self.site or f"_unknown/{self.id}"


@dataclass
class Corpus:
    name: str
    manifest: str
    sites: dict[str, list[Page]]
    capped: bool = False  # True when --max-pages-per-site left pages out

    @property
    def pages(self) -> list[Page]:
        return [p for ps in self.sites.values() for p in ps]


def find_manifests(path: str) -> list[str]:
    """A manifest file, a corpus folder holding one, or a folder of corpus folders."""
    if os.path.isfile(path):
        return [path]
    direct = os.path.join(path, "manifest.jsonl")
    if os.path.isfile(direct):
        return [direct]
    if not os.path.isdir(path):
        raise SystemExit(f"no such manifest or folder: {path}")
    found = sorted(
        os.path.join(path, d, "manifest.jsonl")
        for d in os.listdir(path)
        if os.path.isfile(os.path.join(path, d, "manifest.jsonl"))
    )
    if not found:
        raise SystemExit(f"no manifest.jsonl in {path}")
    return found


def load_corpus(manifest: str, max_pages_per_site: Optional[int] = None) -> Corpus:
    """Read a manifest and its pages (decoded by :func:`prepare_html`) grouped by site.

    With ``max_pages_per_site``, a larger site keeps a ``random.Random(0)`` sample of
    that many pages, in manifest order (the same pages for every method and mode).
    """
    root = os.path.dirname(os.path.abspath(manifest))
    rows = []
    with open(manifest, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    by_site: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_site[row.get("site") or row["id"]].append(row)
    sites: dict[str, list[Page]] = {}
    capped = False
    for key, site_rows in by_site.items():
        if max_pages_per_site is not None and len(site_rows) > max_pages_per_site:
            keep = sorted(random.Random(0).sample(range(len(site_rows)), max_pages_per_site))
            site_rows = [site_rows[i] for i in keep]
            capped = True
        pages = []
        for row in site_rows:
            with open(os.path.join(root, row["html"]), "rb") as fh:
                html, _enc = prepare_html(fh.read())
            with open(os.path.join(root, row["gold"]), encoding="utf-8") as fh:
                gold = fh.read()
            pages.append(Page(row["id"], row.get("site"), row.get("url"), html, gold))
        sites[key] = pages
    name = os.path.basename(root)
    return Corpus(name, manifest, sites, capped)
