"""Bag-of-tokens scoring, the same definition as the project's reference scorer:

tokens(text) = re.findall(r"\\w+", NFKC(text).lower())
precision = |pred & gold| / |pred|, recall = |pred & gold| / |gold| (multisets)
both empty -> 1.0; only one empty -> 0.0
"""

from __future__ import annotations

import collections
import re
import unicodedata
from typing import Optional

_WORD = re.compile(r"\w+")


def tokens(text: Optional[str]) -> list[str]:
    """NFKC-normalised, lower-cased ``\\w+`` tokens."""
    if not text:
        return []
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def prf(pred: Optional[str], gold: Optional[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of one page."""
    p_tok, g_tok = tokens(pred), tokens(gold)
    if not p_tok and not g_tok:
        return 1.0, 1.0, 1.0
    if not p_tok or not g_tok:
        return 0.0, 0.0, 0.0
    overlap = sum((collections.Counter(p_tok) & collections.Counter(g_tok)).values())
    p, r = overlap / len(p_tok), overlap / len(g_tok)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def boilerplate_removed(pred: Optional[str], gold: Optional[str], page_text: str) -> Optional[float]:
    """Share of the page's boilerplate tokens (page tokens not in the gold, as a multiset)
    that the prediction left out; None when the page has no boilerplate."""
    gold_c = collections.Counter(tokens(gold))
    noise = collections.Counter(tokens(page_text)) - gold_c
    total = sum(noise.values())
    if not total:
        return None
    kept = sum(((collections.Counter(tokens(pred)) - gold_c) & noise).values())
    return 1.0 - kept / total
