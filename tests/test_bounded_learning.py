"""partial_fit is bounded like fit: the page's analysis within the page budget, what one
page adds and what a site model holds capped, and each worker's refinements within a share
of its time."""

from __future__ import annotations

import json
import random

from story_pages import STORY_PAGES

from sst_cleaner import SiteCleaner
from sst_cleaner.engine import _learn_caps as learn_caps
from sst_cleaner.engine._refine_budget import RefineBudget
from sst_cleaner.scrapy._workers import REFINE_SKIPPED, refine_site

PAGES = STORY_PAGES


def _unique_sentences(n: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return (
        "<html><body><div class='x'>"
        + " ".join(f"Zq{rng.randrange(10**9)} wv{i}." for i in range(n))
        + "</div></body></html>"
    )


def _stats(cleaner: SiteCleaner):
    return cleaner._impl.stats


def test_a_page_over_its_time_budget_is_not_learnt_and_the_model_is_unchanged():
    cleaner = SiteCleaner(page_time_budget=0.05, site_time_budget=None).fit(PAGES)
    before = json.dumps(cleaner.to_dict(), sort_keys=True)
    cleaner.partial_fit(_unique_sentences(400_000))
    assert cleaner.skipped_pages == 1 and cleaner.fit_status == "partial"
    assert json.dumps(cleaner.to_dict(), sort_keys=True) == before
    cleaner.partial_fit(PAGES[0].replace("Story 0", "Story 9"))  # an ordinary page still learns
    assert cleaner.n_pages == len(PAGES) + 1


def test_what_one_page_adds_is_capped(monkeypatch):
    monkeypatch.setattr(learn_caps, "MAX_PAGE_SENTENCES", 300)
    monkeypatch.setattr(learn_caps, "MAX_PAGE_FEATURES", 10**9)
    cleaner = SiteCleaner(page_time_budget=None, site_time_budget=None).fit(PAGES)
    before = len(_stats(cleaner).sent_df)
    cleaner.partial_fit(_unique_sentences(2_000))
    assert len(_stats(cleaner).sent_df) - before == 300
    assert cleaner.n_pages == len(PAGES) + 1


def test_caps_sit_above_real_pages():
    # the caps must change nothing for ordinary pages: the full page is learnt
    cleaner = SiteCleaner(page_time_budget=None).fit(PAGES)
    cleaner.partial_fit(_unique_sentences(2_000))
    assert len(_stats(cleaner).sent_df) >= 2_000


def test_a_huge_word_is_learnt_as_a_short_feature():
    word = "Q" + "x" * 4_900_000
    cleaner = SiteCleaner(page_time_budget=None).fit(PAGES)
    cleaner.partial_fit(f"<html><body><p>The {word} is here.</p></body></html>")
    feats = [f for node in _stats(cleaner).node_S.values() for f in node]
    assert max(map(len, feats)) <= 100
    assert len(json.dumps(cleaner.to_dict())) < 100_000


def test_a_full_site_model_stops_learning_and_still_reloads(tmp_path, monkeypatch):
    cleaner = SiteCleaner(page_time_budget=None, site_time_budget=None).fit(PAGES)
    full = learn_caps.stats_entries(cleaner._impl.stats) + 50
    monkeypatch.setattr(learn_caps, "MAX_SITE_ENTRIES", full)
    cleaner.partial_fit(_unique_sentences(500))
    assert cleaner.skipped_pages == 1 and learn_caps.stats_entries(cleaner._impl.stats) <= full
    cleaner.save(tmp_path / "m.json")
    assert SiteCleaner.load(tmp_path / "m.json").n_pages == len(PAGES)


def test_refine_budget_refills_at_its_share():
    now = [0.0]
    budget = RefineBudget(share=0.25, burst=2.0, clock=lambda: now[0])
    assert budget.allow()
    budget.spend(3.0)  # one costly refinement: the bucket goes below zero
    assert not budget.allow()
    now[0] += 3.9  # refilled by 0.975 s: still below zero
    assert not budget.allow()
    now[0] += 0.2
    assert budget.allow()
    now[0] += 1000
    budget.allow()
    budget.spend(1.9)  # the bucket never holds more than the burst
    assert budget.allow()
    budget.spend(0.2)
    assert not budget.allow()


def test_refine_site_skips_when_the_worker_budget_is_spent():
    cleaner = SiteCleaner().fit(PAGES)
    budget = RefineBudget(share=0.0, burst=0.0)
    assert refine_site(cleaner, "http://x/a", PAGES[0].encode(), "utf-8", budget=budget) == REFINE_SKIPPED
    assert cleaner.n_pages == len(PAGES)
    open_budget = RefineBudget(share=1.0, burst=5.0)
    assert refine_site(cleaner, "http://x/a", PAGES[0].encode(), "utf-8", budget=open_budget) == len(PAGES) + 1


def test_the_attribute_cap_is_per_document():
    from sst_cleaner.engine._attr_cap import MAX_ATTRIBUTE_PAIRS, attribute_cap
    from sst_cleaner.engine._dom import parse_html
    from sst_cleaner.engine._limits import Limits

    tag = "<div " + " ".join(f"a{i}=x" for i in range(999)) + ">t</div>"
    page = parse_html("<html><body>" + tag * 1001 + "</body></html>", limits=Limits(max_page_bytes=10**8))
    kept = [len(el.attrib) for el in page.root.iter("div")]
    assert len(kept) == 1001
    # what libxml2 compared stays within the document's budget, not 1001 * 999 * 999
    assert sum(k * k for k in kept) <= MAX_ATTRIBUTE_PAIRS
    assert max(kept) < 999
    # a page with few tags keeps the per-tag cap
    assert attribute_cap(1000, 10) == 1000
    small = parse_html("<html><body>" + tag + "</body></html>")
    assert len(next(small.root.iter("div")).attrib) == 999


def test_a_memo_stays_bounded_in_entries_and_in_key_length():
    from sst_cleaner.engine._text import BoundedMemo

    memo = BoundedMemo(len, max_size=3, max_key_chars=5)
    assert [memo[k] for k in ("a", "bb", "ccc")] == [1, 2, 3] and len(memo) == 3
    assert memo["dddd"] == 4 and list(memo) == ["dddd"]  # full: emptied, then kept
    huge = "x" * 1_000_000
    assert memo[huge] == 1_000_000 and huge not in memo  # answered, never kept
