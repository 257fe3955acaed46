"""Unit tests of the hold book (sst_cleaner/scrapy/_holds.py) alone: no Scrapy, no
crawl, small fake pages and a fake clock."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from sst_cleaner.scrapy._holds import HoldBook, RefineQueue

ROOT = Path(__file__).resolve().parent.parent


class FakePage:
    """What the book reads of a page: its site and its size."""

    def __init__(self, site: str, size: int = 10):
        self.site = site
        self.size = size


class FakeStats:
    def __init__(self):
        self.counts: Counter = Counter()
        self.maxima: dict = {}
        self.max_calls = 0

    def inc(self, key, count=1):
        self.counts[key] += count

    def max_stat(self, key, value):
        self.max_calls += 1
        self.maxima[key] = max(self.maxima.get(key, value), value)


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_book(**kw):
    stats, clock = FakeStats(), FakeClock()
    args = dict(sample_pages=3, max_held_items=100, max_held_bytes=10_000, hold_timeout=60.0, clock=clock)
    args.update(kw)
    return HoldBook(stats, **args), stats, clock


def held_site(book, clock, site, items=(), pages=1, page_size=10):
    """Open a hold for ``site`` at the clock's time, with sample pages and held items;
    the clock then moves on a second, so holds opened later are younger."""
    hold = book.open(site)
    for _ in range(pages):
        book.add_sample_page(hold, FakePage(site, page_size))
    for item in items:
        book.hold_item(hold, item)
    clock.now += 1
    return hold


def test_sample_keeps_sample_pages_pages_and_counts_every_page_once():
    book, _, _ = make_book(sample_pages=2)
    hold = book.open("a")
    pages = [FakePage("a", 100), FakePage("a", 200), FakePage("a", 300)]
    for page in pages:
        book.add_sample_page(hold, page)
    book.add_sample_page(hold, pages[0])  # the same page again (a second item's record)
    assert hold.pages == pages[:2]
    assert hold.bytes == book.held_bytes == 600
    assert book.sample_complete(hold)
    hold.building = True
    assert not book.sample_complete(hold)


def test_sample_pages_reach_the_listener_only_outside_a_fit():
    told = []
    book, _, _ = make_book(on_sample_page=lambda site, page: told.append((site, page)))
    hold = book.open("a")
    first, second = FakePage("a"), FakePage("a")
    book.add_sample_page(hold, first)
    hold.building = True
    book.add_sample_page(hold, second)
    assert told == [("a", first)]
    assert book.held_bytes == 20  # counted either way


def test_held_items_are_counted_and_released_in_order():
    book, stats, _ = make_book()
    hold = book.open("a")
    for item in ("x", "y", "z"):
        book.hold_item(hold, item)
    assert book.held_items == 3 and book.pending() == 3 and stats.counts["items_held"] == 3
    book.drop_hold(hold)
    assert list(book.ready) == ["x", "y", "z"]
    assert book.held_items == 0 and book.held_bytes == 0 and book.pending() == 3
    assert stats.counts["items_released"] == 3
    assert book.get("a") is None and not book.is_current(hold)


def test_items_cap_evicts_the_longest_held_first_until_within_the_cap():
    book, stats, clock = make_book(max_held_items=4)
    old = held_site(book, clock, "old", items=["o1", "o2"])
    mid = held_site(book, clock, "mid", items=["m1", "m2"])
    new = held_site(book, clock, "new", items=["n1"])
    book.enforce_bounds()
    assert list(book.ready) == ["o1", "o2"]
    assert book.get("old") is None and book.is_current(mid) and book.is_current(new)
    assert book.held_items == 3 and stats.counts["evictions"] == 1
    assert old.pages  # an evicted hold's sample is simply forgotten by the book
    assert book.held_bytes == 20  # the pages of mid and new


def test_bytes_cap_evicts_by_age_not_by_size():
    book, stats, clock = make_book(max_held_bytes=250)
    held_site(book, clock, "small-old", items=["s"], page_size=10)
    held_site(book, clock, "big-young", items=["b"], page_size=200)
    held_site(book, clock, "mid", items=["m"], page_size=50)
    book.enforce_bounds()
    assert book.get("small-old") is None and book.get("big-young") is not None
    assert book.held_bytes == 250 and list(book.ready) == ["s"]
    assert stats.counts["evictions"] == 1


def test_a_hold_being_fitted_is_evicted_last_and_keeps_its_sample():
    book, stats, clock = make_book(max_held_items=1, sample_pages=2)
    fitting = held_site(book, clock, "fitting", pages=2, page_size=100)  # the oldest
    fitting.building = True
    extra = FakePage("fitting", 1000)  # a page that came during the fit
    book.add_sample_page(fitting, extra)
    book.hold_item(fitting, "f1")
    held_site(book, clock, "young", items=["y1", "y2"])
    book.enforce_bounds()
    # the younger site went first; that was enough, so the fit was not touched
    assert list(book.ready) == ["y1", "y2"]
    assert fitting.items == ["f1"] and fitting.bytes == 1200
    # past the cap again with only the fitted site left: its items and extra page go,
    # its sample (what the fit reads) stays, and so does the hold
    book.hold_item(fitting, "f2")
    book.enforce_bounds()
    assert list(book.ready) == ["y1", "y2", "f1", "f2"]
    assert book.is_current(fitting) and fitting.building
    assert len(fitting.pages) == 2 and fitting.bytes == 200 == book.held_bytes
    assert book.held_items == 0 and stats.counts["evictions"] == 2


def test_enforce_bounds_within_the_caps_evicts_nothing():
    book, stats, clock = make_book(max_held_items=2, max_held_bytes=20)
    held_site(book, clock, "a", items=["x"])
    held_site(book, clock, "b", items=["y"])
    book.enforce_bounds()
    assert not book.ready and stats.counts["evictions"] == 0


def test_peaks_are_written_only_when_they_rise():
    book, stats, clock = make_book()
    hold = held_site(book, clock, "a", items=["x", "y"], page_size=30)
    book.enforce_bounds()
    assert stats.maxima == {"peak_held_bytes": 30, "peak_held_items": 2}
    calls = stats.max_calls
    book.drop_hold(hold)
    book.enforce_bounds()
    assert stats.max_calls == calls  # lower than the peak: nothing written
    held_site(book, clock, "b", items=["z"] * 3, page_size=10)
    book.enforce_bounds()
    assert stats.maxima == {"peak_held_bytes": 30, "peak_held_items": 3}


def test_timeouts_fit_only_idle_holds_with_items_held_long_enough():
    book, stats, clock = make_book(hold_timeout=60.0)
    old = held_site(book, clock, "old", items=["o"])
    held_site(book, clock, "no-items")
    fitting = held_site(book, clock, "fitting", items=["f"])
    fitting.building = True
    young = book.open("young")
    book.hold_item(young, "y")
    clock.now = old.since + 60.0  # old is exactly at the timeout, young is not
    fitted = book.check_timeouts(lambda hold: hold.site)
    assert fitted == ["old"] and stats.counts["hold_timeouts"] == 1
    clock.now = young.since + 59.0
    assert book.check_timeouts(lambda hold: hold.site) == ["old"]
    clock.now = young.since + 60.0
    assert book.check_timeouts(lambda hold: hold.site) == ["old", "young"]


def test_fit_ended_releases_the_items_and_hands_back_the_waiters():
    book, _, clock = make_book()
    hold = held_site(book, clock, "a", items=["x"])
    hold.building = True
    hold.waiters.extend(["w1", "w2"])
    assert book.fit_ended(hold) == (["w1", "w2"], [])
    assert not hold.building and not hold.waiters and book.get("a") is None
    assert list(book.ready) == ["x"] and book.held_bytes == 0


def test_pages_the_fit_does_not_see_are_handed_back_after_it():
    """Pages past the full sample, and pages that come during the fit, are handed back
    when it ends (to be learnt then); an eviction during the fit lets them go."""
    book, _, clock = make_book(sample_pages=2)
    hold = held_site(book, clock, "a", pages=2)
    past_sample = FakePage("a")
    book.add_sample_page(hold, past_sample)
    hold.building = True
    during = FakePage("a")
    book.add_sample_page(hold, during)
    assert book.fit_ended(hold) == ([], [past_sample, during])

    evicted = held_site(book, clock, "b", pages=2)
    evicted.building = True
    book.add_sample_page(evicted, FakePage("b", size=20_000))  # past the byte cap
    book.enforce_bounds()
    assert book.fit_ended(evicted) == ([], [])


def test_status_for_the_periodic_log_line():
    book, _, clock = make_book()
    held_site(book, clock, "a", items=["x"])
    held_site(book, clock, "b", items=["y", "z"]).building = True
    held_site(book, clock, "c")
    clock.now += 10
    items, sites, gathering, oldest = book.status()
    assert (items, sites, gathering) == (3, 3, 2)
    assert oldest == 13.0  # "a"; "c" is older than "b" but holds no item


def test_a_page_joins_its_sites_hold_unless_the_site_has_a_model_or_its_fit_failed():
    book, _, _ = make_book()
    hold = book.hold_for("a", has_model=False)
    assert hold is not None and book.hold_for("a", has_model=False) is hold
    assert book.hold_for("modelled", has_model=True) is None and book.get("modelled") is None
    book.hold_item(hold, "x")
    hold.building = True
    waiters, late = book.build_failed(hold)
    assert (waiters, late) == ([], []) and list(book.ready) == ["x"]
    assert book.hold_for("a", has_model=False) is None  # its pages would fail the same way
    assert book.hold_for("b", has_model=False) is not None


def test_nothing_is_held_once_the_spider_closes_or_the_item_count_is_reached():
    book, _, _ = make_book(item_count=1)
    assert book.accepting()
    book.item_out()
    assert book.check_item_count(scraped=0).just_reached and not book.accepting()
    other, _, _ = make_book()
    other.closing = True
    assert not other.accepting()


def test_a_build_starts_on_the_sample_or_gives_a_too_small_one_up():
    book, stats, clock = make_book(sample_pages=4, min_fit_pages=2)
    small = held_site(book, clock, "small", items=["s"], pages=1)
    assert book.begin_build(small) is None
    assert book.get("small") is None and list(book.ready) == ["s"] and book.held_bytes == 0
    enough = held_site(book, clock, "enough", items=["e"], pages=2)
    pages = book.begin_build(enough)
    assert pages == enough.pages and len(pages) == 2 and enough.building
    assert book.check_timeouts(lambda hold: hold.site) == []  # a fitted site is not fitted twice
    assert book.is_current(enough) and enough.items == ["e"]  # released when the fit ends
    assert book.fit_ended(enough) == ([], []) and list(book.ready) == ["s", "e"]


def test_a_fleets_build_starts_on_a_small_local_sample():
    # the fleet's store fits on the pages of every process, not only this one's
    book, _, clock = make_book(sample_pages=4, min_fit_pages=2, fit_small_samples=True)
    hold = held_site(book, clock, "a", items=["x"], pages=1)
    assert book.begin_build(hold) == hold.pages and hold.building


def test_the_item_count_counts_items_out_and_held_and_releases_the_held_ones():
    book, _, clock = make_book(item_count=3)
    book.item_out()
    hold = held_site(book, clock, "a", items=["x"])
    assert book.check_item_count(scraped=0) == (False, False)
    book.hold_item(hold, "y")
    assert book.check_item_count(scraped=0) == (True, True)  # 1 out + 2 held
    assert book.check_item_count(scraped=0) == (False, True)  # closed once only
    book.drop_hold(hold)
    assert book.check_item_count(scraped=0) == (False, False)  # nothing held to release


def test_the_item_count_forgets_dropped_items_and_follows_scrapys_own_count():
    book, _, _ = make_book(item_count=2)
    book.item_out()
    book.item_out()
    book.item_gone()  # dropped by a pipeline: Scrapy does not count it either
    assert not book.check_item_count(scraped=0).just_reached
    assert book.check_item_count(scraped=2).just_reached
    without, _, _ = make_book()  # no CLOSESPIDER_ITEMCOUNT
    for _ in range(1000):
        without.item_out()
    assert without.check_item_count(scraped=1000) == (False, False)


def test_backpressure_waits_for_released_pages_past_the_byte_cap_until_the_close():
    book, _, clock = make_book(max_held_bytes=100)
    held_site(book, clock, "a", page_size=60)
    assert not book.must_wait(0)  # nothing out: nothing to wait for
    assert not book.must_wait(40) and book.must_wait(41)
    assert book.out_room() == 40
    book.closing = True
    assert not book.must_wait(1000)


def test_refinements_stop_at_the_model_page_limit_counting_those_in_flight():
    queue = RefineQueue(max_model_pages=3)
    assert queue.take("a", model_pages=1) and queue.take("a", model_pages=1)
    assert not queue.take("a", model_pages=1)  # 1 learnt + 2 in flight
    assert queue.take("b", model_pages=0)  # per site
    queue.done("a")
    assert queue.take("a", model_pages=2) is False  # learnt now: still at the limit
    assert queue.take("a", model_pages=1)


def test_the_hold_book_imports_without_scrapy_or_twisted():
    code = (
        "import sys; import sst_cleaner.scrapy._holds; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
