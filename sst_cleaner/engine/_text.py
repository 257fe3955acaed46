"""Words, features and sentences: the text side shared by every method.

* ``words(text)``: the scorer's tokens (lower-cased ``\\w+`` after NFKC), so what we
  count is what gets scored.
* ``features(text)``: the papers' "keywords": words minus stop words, stemmed
  (Snowball English stemmer when available); runs of CJK ideographs / kana / hangul are
  turned into character bigrams because those scripts do not separate words by spaces.
* ``split_sentences(text)``: sentence granularity for the informative-sentences method.

All patterns here are linear-time (no nested quantifiers), so crafted input cannot make
them backtrack.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from itertools import chain
from typing import Any, Callable, Iterable, Optional

_WORD = re.compile(r"\w+")

# CJK Unified Ideographs (+ext A), Hiragana, Katakana, Hangul syllables
_CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
)

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can cannot could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just let me more most my myself no nor not now of off on once only
    or other ought our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves s t d ll m re ve don didn doesn isn wasn weren won also may might must
    shall us via per de la le les el en et des du""".split()
)


def is_cjk(ch: str) -> bool:
    o = ord(ch)
    for lo, hi in _CJK_RANGES:
        if lo <= o <= hi:
            return True
    return False


def words(text: str) -> list[str]:
    """Lower-cased word tokens exactly as the reference scorer counts them."""
    if not text.isascii():  # O(1) on a str; NFKC leaves ASCII as it is
        text = unicodedata.normalize("NFKC", text)
    return _WORD.findall(text.lower())


# The Snowball English stemmer. ``snowballstemmer`` hands out PyStemmer's C build of the
# same algorithm when PyStemmer is installed (a dependency: ~12x faster, the same stems on
# every word of the dev corpora), else its own pure-Python one. A stemmer object keeps
# state between calls and PyStemmer's are documented as not thread-safe, so each thread
# (Scrapy's pipeline cleans in worker threads) gets its own.
try:
    import snowballstemmer as _snowball
except Exception:  # pragma: no cover - a declared dependency; plain words if missing
    _snowball = None

_STEMMERS = threading.local()


def _stemmer() -> Any:
    got = getattr(_STEMMERS, "english", None)
    if got is None:
        got = _STEMMERS.english = _snowball.stemmer("english")
    return got


def stem(word: str) -> str:
    # not cached here: _TOKEN_FEATURES below stems each distinct word once
    if _snowball is None or not word.isascii():
        return word
    return _stemmer().stemWord(word)


def _cjk_bigrams(token: str) -> list[str]:
    """Split a token into non-CJK words and CJK character bigrams."""
    out: list[str] = []
    run: list[str] = []
    latin: list[str] = []

    def flush_run() -> None:
        if len(run) == 1:
            out.append(run[0])
        else:
            out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
        run.clear()

    for ch in token:
        if is_cjk(ch):
            if latin:
                out.append("".join(latin))
                latin.clear()
            run.append(ch)
        else:
            if run:
                flush_run()
            latin.append(ch)
    if run:
        flush_run()
    if latin:
        out.append("".join(latin))
    return out


def features(text: str) -> list[str]:
    """Keywords of a text: stop words and pure numbers out, stemmed, CJK as bigrams."""
    return features_from_words(words(text))


class BoundedMemo(dict):
    """``key -> func(key)``, computed on first look-up and kept; emptied when it holds
    ``max_size`` entries, so memory stays bounded whatever a crawl meets.

    A plain dict with ``__missing__``: look-ups through ``map(memo.__getitem__, keys)``
    run in C, which is why the per-token tables of the hot paths are built on it.
    ``max_key_chars``: longer keys are computed on every look-up, never kept (a page can
    hold one multi-megabyte "word").
    """

    def __init__(self, func: Callable[[str], Any], max_size: int = 200_000, max_key_chars: Optional[int] = None):
        super().__init__()
        self.func = func
        self.max_size = max_size
        self.max_key_chars = max_key_chars

    def __missing__(self, key: str) -> Any:
        value = self.func(key)
        if self.max_key_chars is not None and len(key) > self.max_key_chars:
            return value
        if len(self) >= self.max_size:
            self.clear()
        self[key] = value
        return value


#: longer tokens are learnt as a short digest: a model stores features as text, and a
#: page can hold one multi-megabyte "word" (the dev corpora's longest feature has 67)
MAX_FEATURE_CHARS = 100


def _token_features(tok: str) -> tuple:
    """A token's features: () for a stop word or number, (stem,), or the CJK bigrams."""
    if len(tok) > MAX_FEATURE_CHARS:
        return ("#" + hashlib.blake2b(tok.encode("utf-8", "replace"), digest_size=8).hexdigest(),)
    if not tok.isascii() and any(is_cjk(c) for c in tok):
        return tuple(_cjk_bigrams(tok))
    if tok in STOP_WORDS or tok.isdigit() or len(tok) < 2:
        return ()
    return (stem(tok),)


#: token -> its features, so each distinct word is stemmed once
_TOKEN_FEATURES = BoundedMemo(_token_features)


def features_from_words(tokens: list[str]) -> list[str]:
    """``features`` for text already cut into :func:`words`."""
    return list(chain.from_iterable(map(_TOKEN_FEATURES.__getitem__, tokens)))


def feature_tuple(tokens: list[str]) -> tuple[str, ...]:
    """:func:`features_from_words` as a tuple (which the cyclic collector stops tracking),
    made with one look-up per token: only a CJK run has several features, and a text
    that holds one is looked up again for them."""
    got = tuple(filter(None, map(_TOKEN_FEATURE.__getitem__, tokens)))
    if _SEVERAL in got:
        return tuple(chain.from_iterable(map(_TOKEN_FEATURES.__getitem__, tokens)))
    return got


def _token_feature(tok: str) -> Optional[str]:
    # never "": Snowball leaves a word of two letters or fewer as it is, and never takes
    # a longer one away whole
    got = _token_features(tok)
    return got[0] if len(got) == 1 else (_SEVERAL if got else None)


#: what a token with several features looks up to: no feature, as features are made
#: of word characters
_SEVERAL = " "
#: token -> its one feature, None, or _SEVERAL
_TOKEN_FEATURE = BoundedMemo(_token_feature)


# Sentence ends: ., !, ? (and their CJK/fullwidth forms) followed by whitespace, or a CJK
# full stop anywhere. Scanned by hand so there is no regex to backtrack.
_ENDERS = frozenset(".!?")
_CJK_ENDERS = frozenset("。！？")
_CLOSERS = frozenset("\"')]}»”’")


_ENDER_RE = re.compile(r"[.!?\u3002\uff01\uff1f]")  # one character class: linear


def split_sentences(text: str) -> list[str]:
    """Split a block of text into sentences.

    A sentence ends at ``.``/``!``/``?`` (optionally followed by closing quotes or
    brackets) before whitespace and a capital/digit/quote, or at a CJK full stop. Short
    abbreviations ("Mr.", "U.S.", single letters) do not end sentences. Only the
    candidate end characters are visited (found by a one-class regex), so long blocks
    cost little Python work.
    """
    # one function: it runs per sentence end of every block, where helper
    # calls cost measurable time
    text = text.strip()
    if not text:
        return []
    out: list[str] = []
    start = 0
    n = len(text)
    resume = 0  # candidates before this index were consumed by a previous step
    for m in _ENDER_RE.finditer(text):
        i = m.start()
        if i < resume:
            continue
        ch = text[i]
        if ch in _CJK_ENDERS:
            j = i + 1
            while j < n and text[j] in _CLOSERS:
                j += 1
            seg = text[start:j].strip()
            if seg:
                out.append(seg)
            start = resume = j
            continue
        j = i + 1
        while j < n and (text[j] in _ENDERS or text[j] in _CLOSERS):
            j += 1
        resume = j
        if j < n and text[j].isspace():
            k = j
            while k < n and text[k].isspace():
                k += 1
            nxt = text[k] if k < n else ""
            # the word before the period: abbreviations do not end sentences
            # (looked for at most 40 characters back: a longer "word" is no abbreviation,
            # and an unbounded look-back would make a run of dots quadratic)
            w = i - 1
            lim = max(start, i - 40)
            while w >= lim and not text[w].isspace():
                w -= 1
            prev_word = text[w + 1 : i]
            abbrev = ch == "." and (len(prev_word) <= 1 or prev_word.lower() in _ABBREVIATIONS or "." in prev_word)
            if (
                nxt
                and (nxt.isupper() or nxt.isdigit() or nxt in "\"'\u201c\u2018(\u00bf\u00a1" or is_cjk(nxt))
                and not abbrev
            ):
                seg = text[start:j].strip()
                if seg:
                    out.append(seg)
                start = resume = k
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc inc ltd co corp gen gov sen rep jan feb mar apr jun jul aug "
    "sep sept oct nov dec no fig eg ie al approx est".split()
)


def count_features(items: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in items:
        counts[f] = counts.get(f, 0) + 1
    return counts
