"""What ``SiteCleaner.clean`` returns when the method gives no usable answer.

Two cases, each answered by a cheap page-level reading of the page rather than by
nothing or by everything:

* **The method ran out of the page's time budget** (``status == "over_budget"``). CETD
  (the text-density method, one linear walk over the tree) cleans the page under a budget
  of its own (as long as the page's, :data:`FALLBACK_BUDGET_SHARE`). Only when that overruns as
  well, or keeps nothing, is the page returned whole: all its visible text as one block,
  read by libxml2 in one C-level pass, so that nothing is lost.
* **The method kept no text of a page that holds prose** (``status ==
  STATUS_EMPTY_FALLBACK``). CETD's text is taken when it keeps a prose block, else the
  page's longest prose block alone. A page without prose (a gallery, a form, a list of
  links) keeps its empty text and its status: nothing there reads as an article.

A *prose block* is a text block with at least :data:`MIN_PROSE_WORDS` words (or
:data:`MIN_PROSE_CJK` Han, kana or Hangul characters: those scripts do not separate
words), a sentence end, and at most half of its element's text in links.
"""

from __future__ import annotations

import re
from typing import Optional

from sst_cleaner.engine._dom import PreparedPage, normalize_space
from sst_cleaner.engine._formats import rewrite_text
from sst_cleaner.engine._limits import run_with_budget
from sst_cleaner.engine._result import INFORMATIVE, NOISE, STATUS_EMPTY_FALLBACK, Block, CleanResult

#: share of ``Limits.page_time_budget`` the fallback may spend on its own: a page whose
#: method overran costs at most this much more before it is returned whole. A whole one:
#: CETD on a page at the element cap (``Limits.max_elements``) takes most of a default
#: budget, and a smaller share returned such pages whole, the case the fallback is for
FALLBACK_BUDGET_SHARE = 1.0
#: words (runs of word characters) a prose block holds at least
MIN_PROSE_WORDS = 15
#: or Han, kana or Hangul characters, for scripts written without spaces
MIN_PROSE_CJK = 40
#: the most of a prose block's element text that may sit in links
MAX_PROSE_LINK_SHARE = 0.5

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|[。！？]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def fallback_budget(page_budget: Optional[float]) -> Optional[float]:
    """The fallback's own budget (None: unbounded, as the page's)."""
    return page_budget * FALLBACK_BUDGET_SHARE if page_budget else None


def over_budget_result(page: PreparedPage, method: str, budget: Optional[float]) -> CleanResult:
    """The result of a page whose method ran out of time: CETD's text within ``budget``,
    else the page whole; ``status == "over_budget"`` either way."""
    result: Optional[CleanResult] = None
    if method != "cetd":  # CETD itself overran: it would again
        ok, got = run_with_budget(_cetd_text, budget, page)
        if ok and got is not None and got.text.strip():
            result = got
    if result is None:
        result = whole_page_result(page, method)
    result.status = "over_budget"
    return result


def rescue_empty(
    page: PreparedPage, result: CleanResult, method: str, budget: Optional[float]
) -> Optional[CleanResult]:
    """A result with text for ``page``, whose method kept none (``result``), when the page
    holds prose (None when it does not): CETD's when it keeps a prose block, else the
    longest prose block alone. ``status == STATUS_EMPTY_FALLBACK``."""
    cetd: Optional[CleanResult] = None
    if method != "cetd":
        ok, got = run_with_budget(_cetd_text, budget, page)
        cetd = got if ok else None
    blocks = cetd.blocks if cetd is not None else result.blocks
    prose = [i for i, b in enumerate(blocks) if is_prose(page, b)]
    if not prose:
        return None
    rescued: CleanResult
    if cetd is not None and cetd.text.strip() and any(blocks[i].label == INFORMATIVE for i in prose):
        rescued = cetd
    else:
        longest = max(prose, key=lambda i: len(blocks[i].text))  # the first of equals
        relabelled = [
            Block(b.xpath, b.text, INFORMATIVE if i == longest else NOISE, b.score) for i, b in enumerate(blocks)
        ]
        rescued = CleanResult.from_blocks(relabelled, "longest_prose", page.title)
        rescued.text = rewrite_text(rescued.text, rescued.blocks, page)
    rescued.status = STATUS_EMPTY_FALLBACK
    return rescued


def is_prose(page: PreparedPage, block: Block) -> bool:
    """Whether ``block`` reads as prose (see the module's docstring)."""
    text = block.text
    if not _SENTENCE_END.search(text):
        return False
    if len(_WORD.findall(text)) < MIN_PROSE_WORDS and len(_CJK.findall(text)) < MIN_PROSE_CJK:
        return False
    el = page.element_at(block.xpath)
    if el is None:
        return True
    total = sum(len(t) for t in el.itertext())
    links = sum(len(t) for a in el.iter("a") for t in a.itertext())
    return not total or links <= MAX_PROSE_LINK_SHARE * total


def _cetd_text(page: PreparedPage) -> CleanResult:
    from sst_cleaner.engine.methods.cetd import CETDMethod

    result = CETDMethod().clean(page)
    result.text = rewrite_text(result.text, result.blocks, page)
    return result


def whole_page_result(page: PreparedPage, method: str) -> CleanResult:
    """The page returned whole: all its visible text as one informative block (the BODY),
    ``status="over_budget"``.

    What :meth:`SiteCleaner.clean` returns when the method and its fallback ran out of
    time. One block, not one per paragraph, because this runs after the budget is spent:
    its text comes from libxml2 in one C-level pass (about 10 ms for 50,000 elements,
    where cutting into text blocks takes seconds), and nothing of the page is lost.
    ``sentences`` is that one text.
    """
    text = normalize_space(" ".join(page.root.itertext()))
    blocks = [Block(page.xpath_of(page.root), text, INFORMATIVE, 0.0)] if text else []
    return CleanResult(
        text=text,
        sentences=[text] if text else [],
        blocks=blocks,
        method=method,
        title=page.title,
        status="over_budget",
    )
